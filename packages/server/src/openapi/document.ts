import {
  DeletedListingSchema,
  DeletedNotebookSchema,
  LastVersionSchema,
  RestoreRequestSchema,
  RestoreResponseSchema,
  RestoreSourceSchema,
  WorkspaceUsageSchema,
  DiffEntrySchema,
  DiffRequestSchema,
  DiffSideSchema,
  ErrorBodySchema,
  FsCloneRequestSchema,
  FsCloneResponseSchema,
  FsCloneSourceSchema,
  ObjectCloneRequestSchema,
  ObjectCloneResponseSchema,
  ObjectCloneSourceSchema,
  NotebookDiffSchema,
  ArchiveObservationSchema,
  ArchiveSourceCountsSchema,
  ArchiveStatusSchema,
  BlindSpotSchema,
  ContentsBackendInfoSchema,
  ContentsModelSchema,
  ObjectHistorySchema,
  ObjectVersionSchema,
  NamedVersionSchema,
  NameVersionRequestSchema,
  UnnamedVersionSchema,
  VersionLabelSchema,
  PublishRequestSchema,
  PublishResultSchema,
  RetentionRuleSchema,
  RetentionSchema,
  StoreEndpoints,
  StoreFeaturesSchema,
  StoreInfoSchema,
  SUCCESS_STATUS,
  VersionContentSchema,
  VersionListingSchema,
  type IEndpoint
} from '@jupyter-store/contract';
import { z } from 'zod';
import { listErrors, type ErrorCatalogue } from '../http/errorCatalogue';
import { packageVersion } from '../version';
import {
  HTML_PAGE_SCHEMA,
  landingPagePaths,
  PAGE_RESPONSES,
  PATH_PARAMETERS,
  readSecurity,
  SECURITY_SCHEMES,
  writeSecurity,
  type OpenApiObject
} from './pages';
import {
  INFO_DESCRIPTION,
  OPERATIONS,
  REASON_DESCRIPTION,
  REFUSED_METHODS,
  SHARED_RESPONSES,
  TAGS,
  type IOperationProse,
  type ResponseProse
} from './prose';

/**
 * The OpenAPI 3.1 document of the store API (`docs/store-api.openapi.yaml`), built from the
 * contract: the endpoint descriptors give the paths, methods, parameters, bodies and statuses,
 * the zod schemas the components, and the error catalogue every reason. Nothing in it is
 * written twice, so it cannot disagree with what the clients send and the server checks.
 *
 * @param options - what varies between builds: the release and the catalogue (for tests).
 * @throws Error when the descriptors and the prose disagree: an operation without words, a
 *   status described that the endpoint does not answer or the reverse, a schema without a name.
 */
export function buildOpenApiDocument(options: OpenApiDocument.IOptions = {}): OpenApiObject {
  const errors = options.errors ?? listErrors();
  const schemas = Private.componentSchemas(errors);
  const paths: OpenApiObject = {};
  for (const [template, endpoints] of Private.byPath()) {
    const item: OpenApiObject = {};
    for (const [method, merged] of Private.byMethod(endpoints)) {
      item[method.toLowerCase()] = Private.operation(merged);
    }
    const { pathParameter: parameter, tag } = Private.prose(endpoints[0]);
    const served = Object.keys(item);
    for (const method of Private.PROBED_METHODS) {
      if (!served.includes(method)) item[method] = Private.refusedOperation(template, method, tag);
    }
    paths[template] = parameter
      ? { parameters: [{ $ref: `#/components/parameters/${parameter}` }], ...item }
      : item;
  }
  Object.assign(paths, landingPagePaths());
  return {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info: {
      title: 'jupyter-store store API',
      version: options.version ?? packageVersion(),
      summary:
        'Feature detection, version listings, publishing and cloning, served by the ' +
        'jupyter-store gateway.',
      description: INFO_DESCRIPTION,
      license: { name: 'BSD-3-Clause', identifier: 'BSD-3-Clause' }
    },
    servers: [
      {
        url: 'http://{host}:{port}{base_url}',
        description: 'A jupyter-store gateway (`jupyter-store lab` or `jupyter-store serve`).',
        variables: {
          host: {
            default: '127.0.0.1',
            description: 'The address the gateway listens on (`--ip`).'
          },
          port: { default: '8888', description: "The gateway's port (`--port`)." },
          base_url: {
            default: '',
            description:
              "Jupyter's `base_url` without its trailing slash: empty for `/`, `/user/alice` " +
              'for `/user/alice/`.'
          }
        }
      }
    ],
    security: readSecurity(),
    tags: TAGS,
    paths,
    components: {
      securitySchemes: SECURITY_SCHEMES,
      parameters: PATH_PARAMETERS,
      responses: { ...Private.sharedResponses(), ...PAGE_RESPONSES },
      schemas
    }
  };
}

/** The document's builder's types. */
export namespace OpenApiDocument {
  export interface IOptions {
    /** `info.version`; default this package's version. */
    version?: string;
    /** The errors whose reasons the document lists; default the error catalogue. */
    errors?: readonly ErrorCatalogue.IEntry[];
  }
}

namespace Private {
  /** The methods a path of the store API is documented for, served or refused (405). */
  export const PROBED_METHODS = ['get', 'put', 'post', 'delete', 'patch'];

  /**
   * The contract's schemas by their name in the document, and whether they describe what a
   * client sends (`input`: optional fields may be null or left out) or what it is answered.
   */
  const COMPONENTS: ReadonlyArray<[string, z.ZodType, 'input' | 'output']> = [
    ['ErrorBody', ErrorBodySchema, 'output'],
    ['StoreFeatures', StoreFeaturesSchema, 'output'],
    ['ArchiveStatus', ArchiveStatusSchema, 'output'],
    ['ArchiveSourceCounts', ArchiveSourceCountsSchema, 'output'],
    ['BlindSpot', BlindSpotSchema, 'output'],
    ['ArchiveObservation', ArchiveObservationSchema, 'output'],
    ['StoreInfo', StoreInfoSchema, 'output'],
    ['ContentsBackendInfo', ContentsBackendInfoSchema, 'output'],
    ['VersionContent', VersionContentSchema, 'output'],
    ['ObjectVersion', ObjectVersionSchema, 'output'],
    ['ObjectHistory', ObjectHistorySchema, 'output'],
    ['VersionListing', VersionListingSchema, 'output'],
    ['VersionLabel', VersionLabelSchema, 'output'],
    ['NameVersionRequest', NameVersionRequestSchema, 'input'],
    ['NamedVersion', NamedVersionSchema, 'output'],
    ['UnnamedVersion', UnnamedVersionSchema, 'output'],
    ['PublishRequest', PublishRequestSchema, 'input'],
    ['PublishResult', PublishResultSchema, 'output'],
    ['ObjectCloneRequest', ObjectCloneRequestSchema, 'input'],
    ['FsCloneRequest', FsCloneRequestSchema, 'input'],
    ['ContentsModel', ContentsModelSchema, 'output'],
    ['ObjectCloneSource', ObjectCloneSourceSchema, 'output'],
    ['FsCloneSource', FsCloneSourceSchema, 'output'],
    ['ObjectCloneResult', ObjectCloneResponseSchema, 'output'],
    ['FsCloneResult', FsCloneResponseSchema, 'output'],
    ['DiffEntry', DiffEntrySchema, 'output'],
    ['DiffSide', DiffSideSchema, 'output'],
    ['NotebookDiff', NotebookDiffSchema, 'output'],
    ['DiffRequest', DiffRequestSchema, 'input'],
    ['WorkspaceUsage', WorkspaceUsageSchema, 'output'],
    ['LastVersion', LastVersionSchema, 'output'],
    ['DeletedNotebook', DeletedNotebookSchema, 'output'],
    ['DeletedListing', DeletedListingSchema, 'output'],
    ['RestoreRequest', RestoreRequestSchema, 'input'],
    ['RestoreSource', RestoreSourceSchema, 'output'],
    ['RestoreResult', RestoreResponseSchema, 'output'],
    ['RetentionRule', RetentionRuleSchema, 'input'],
    ['Retention', RetentionSchema, 'output']
  ];

  /** A JSON Schema for the document: what zod adds for its own use taken out. */
  function tidy(schema: unknown): unknown {
    if (Array.isArray(schema)) return schema.map(tidy);
    if (schema === null || typeof schema !== 'object') return schema;
    const copy: OpenApiObject = {};
    for (const [key, value] of Object.entries(schema)) {
      // `$schema` and `$id` are the document's; objects stay open, as new keys may be added;
      // every map's keys are strings in JSON; zod's safe-integer bounds say nothing to a reader.
      if (key === '$schema' || key === '$id') continue;
      if (key === 'additionalProperties' && value === false) continue;
      if (key === 'propertyNames') continue;
      if ((key === 'maximum' || key === 'minimum') && Math.abs(value) === Number.MAX_SAFE_INTEGER)
        continue;
      copy[key] = tidy(value);
    }
    return copy;
  }

  /** The name of a schema in the document, which every body and answer must have. */
  function nameOf(schema: z.ZodType, where: string): string {
    const found = COMPONENTS.find(([, candidate]) => candidate === schema);
    if (!found) throw new Error(`${where}: the schema has no name in the OpenAPI document`);
    return found[0];
  }

  /** A reference to a named schema. */
  function ref(schema: z.ZodType, where: string): OpenApiObject {
    return { $ref: `#/components/schemas/${nameOf(schema, where)}` };
  }

  /** Every schema of the document, the error body with the catalogue's reasons. */
  export function componentSchemas(errors: readonly ErrorCatalogue.IEntry[]): OpenApiObject {
    const converted: OpenApiObject = {};
    for (const io of ['input', 'output'] as const) {
      const registry = z.registry<{ id: string }>();
      for (const [id, schema, kind] of COMPONENTS) if (kind === io) registry.add(schema, { id });
      const { schemas } = z.toJSONSchema(registry, {
        io,
        target: 'draft-2020-12',
        unrepresentable: 'any',
        uri: id => `#/components/schemas/${id}`
      });
      Object.assign(converted, schemas);
    }
    const ordered: OpenApiObject = {};
    for (const [id] of COMPONENTS) ordered[id] = tidy(converted[id]);
    ordered.ErrorBody = errorBody(ordered.ErrorBody, errors);
    ordered.HtmlPage = HTML_PAGE_SCHEMA;
    return ordered;
  }

  /**
   * The error body with every reason of the catalogue in its `reason` (as an enum beside any
   * other string, since the object store's codes pass through), and listed by status.
   */
  function errorBody(
    schema: OpenApiObject,
    errors: readonly ErrorCatalogue.IEntry[]
  ): OpenApiObject {
    const reasons = [...new Set(errors.map(entry => entry.reason))];
    const byStatus = new Map<number, string[]>();
    for (const { status, reason } of errors) {
      byStatus.set(status, [...(byStatus.get(status) ?? []), reason]);
    }
    const listing = [...byStatus.keys()]
      .sort((a, b) => a - b)
      .map(
        status =>
          `- ${status}: ${byStatus
            .get(status)!
            .map(reason => `\`${reason}\``)
            .join(', ')}`
      )
      .join('\n');
    return {
      ...schema,
      description: `${schema.description} The gateway's reasons, by the status they come with:\n\n${listing}\n`,
      properties: {
        ...schema.properties,
        reason: {
          description: REASON_DESCRIPTION,
          anyOf: [
            { type: 'string', enum: reasons },
            { type: 'string', description: "The object store's or the network's own code." },
            { type: 'null' }
          ]
        }
      }
    };
  }

  /** The endpoints by their path template in the document, in the contract's order. */
  export function byPath(): Map<string, IEndpoint[]> {
    const paths = new Map<string, IEndpoint[]>();
    for (const endpoint of Object.values<IEndpoint>(StoreEndpoints)) {
      const template = `/${endpoint.path}`;
      paths.set(template, [...(paths.get(template) ?? []), endpoint]);
    }
    return paths;
  }

  /** The endpoints of one path by method: one operation in the document each. */
  export function byMethod(endpoints: IEndpoint[]): Map<string, IEndpoint[]> {
    const methods = new Map<string, IEndpoint[]>();
    for (const endpoint of endpoints) {
      methods.set(endpoint.method, [...(methods.get(endpoint.method) ?? []), endpoint]);
    }
    return methods;
  }

  /** The words of an endpoint's operation. */
  export function prose(endpoint: IEndpoint): IOperationProse {
    const words = OPERATIONS[endpoint.operationId];
    if (!words) throw new Error(`${endpoint.operationId} has no description in openapi/prose.ts`);
    return words;
  }

  /**
   * The operation of one or more endpoints with the same method and path (the version listing
   * and a version's content): the query parameters of all (required when all require them), the
   * statuses of all, and any of their answers.
   */
  export function operation(endpoints: IEndpoint[]): OpenApiObject {
    const [first] = endpoints;
    const where = `${first.method} ${first.path}`;
    if (endpoints.some(endpoint => endpoint.operationId !== first.operationId)) {
      throw new Error(`${where}: endpoints of one operation must share its operationId`);
    }
    const words = prose(first);
    const byNumber = (a: number, b: number): number => a - b;
    const statuses = [...new Set(endpoints.flatMap(endpoint => endpoint.statuses))].sort(byNumber);
    const described = [SUCCESS_STATUS, ...Object.keys(words.errors).map(Number)].sort(byNumber);
    if (JSON.stringify(statuses) !== JSON.stringify(described)) {
      throw new Error(
        `${where} answers ${statuses.join(', ')} but its prose describes ${described.join(', ')}`
      );
    }
    const answers = [...new Set(endpoints.map(endpoint => endpoint.response))].map(schema =>
      ref(schema, where)
    );
    const responses: OpenApiObject = {
      [SUCCESS_STATUS]: {
        description: words.success,
        content: {
          'application/json': { schema: answers.length === 1 ? answers[0] : { oneOf: answers } }
        }
      }
    };
    for (const status of statuses) {
      if (status !== SUCCESS_STATUS) responses[status] = errorResponse(words.errors[status]);
    }
    const result: OpenApiObject = {
      tags: [words.tag],
      operationId: first.operationId,
      summary: words.summary,
      description: words.description
    };
    if (first.method !== 'GET') result.security = writeSecurity();
    const parameters = queryParameters(endpoints);
    if (parameters.length > 0) result.parameters = parameters;
    if (first.body) {
      result.requestBody = {
        required: true,
        ...(words.requestBody ? { description: words.requestBody } : {}),
        content: { 'application/json': { schema: ref(first.body, where) } }
      };
    }
    result.responses = responses;
    return result;
  }

  /** An error answer: described here, or one of the shared responses. */
  function errorResponse(words: ResponseProse): OpenApiObject {
    if (typeof words !== 'string') return { $ref: `#/components/responses/${words.shared}` };
    return {
      description: words,
      content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } }
    };
  }

  /** The query parameters of the endpoints, each once, its description taken out of its schema. */
  function queryParameters(endpoints: IEndpoint[]): OpenApiObject[] {
    const parameters = new Map<string, OpenApiObject>();
    const required = new Map<string, number>();
    for (const endpoint of endpoints) {
      if (!endpoint.query) continue;
      const schema = tidy(z.toJSONSchema(endpoint.query, { io: 'input' })) as OpenApiObject;
      for (const [name, property] of Object.entries<OpenApiObject>(schema.properties ?? {})) {
        const { description, ...rest } = property;
        if (!parameters.has(name)) {
          parameters.set(name, { name, in: 'query', description, schema: rest });
        }
        if ((schema.required ?? []).includes(name)) {
          required.set(name, (required.get(name) ?? 0) + 1);
        }
      }
    }
    return [...parameters.values()].map(parameter => ({
      name: parameter.name,
      in: 'query',
      required: required.get(parameter.name) === endpoints.length,
      description: parameter.description,
      schema: parameter.schema
    }));
  }

  /** The operation of a method a path does not serve: 405, after the checks every call gets. */
  export function refusedOperation(template: string, method: string, tag: string): OpenApiObject {
    const path = REFUSED_METHODS[template];
    if (!path)
      throw new Error(`${template} has no words for its refused methods in openapi/prose.ts`);
    const why = method === 'delete' && path.whyDelete ? path.whyDelete : path.why;
    const reading = method === 'get';
    return {
      tags: [tag],
      operationId: `${method}${path.name}NotAllowed`,
      summary: `Not allowed (${why})`,
      ...(reading ? {} : { security: writeSecurity() }),
      responses: {
        '403': {
          $ref: `#/components/responses/${reading ? 'AuthForbidden' : 'AuthOrXsrfForbidden'}`
        },
        '404': { $ref: '#/components/responses/CrossOrigin' },
        '405': { $ref: '#/components/responses/MethodNotAllowed' },
        '503': { $ref: '#/components/responses/UpstreamUnavailable' }
      }
    };
  }

  /** The shared error answers, each a `{"message", "reason"}` body. */
  export function sharedResponses(): OpenApiObject {
    const responses: OpenApiObject = {};
    for (const [name, description] of Object.entries(SHARED_RESPONSES)) {
      responses[name] = {
        description,
        ...(name === 'MethodNotAllowed'
          ? {
              headers: {
                Allow: {
                  description: 'The methods this path serves, e.g. `GET, HEAD` or `POST`.',
                  required: true,
                  schema: { type: 'string' }
                }
              }
            }
          : {}),
        content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } }
      };
    }
    return responses;
  }
}
