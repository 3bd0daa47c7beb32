import {
  VersionContentSchema,
  VersionListingSchema,
  type VersionContent
} from '@jupyter-store/contract';
import { requestQuery, type Route } from '../gateway/assemble';
import { httpErrors } from '../http/errorCatalogue';
import { parseNotebook } from './cloneTarget';
import type { VersionLabels } from './named';
import { listVersions, readNotebookVersion, type StoreAccess } from './objects';
import { parseVersionsLimit, VersionPageTokens } from './versionPages';

/** What the versions route needs. */
export interface IVersionsOptions {
  readonly archiving: StoreAccess;
  /** The most bytes a version read for restoring reads; larger is 413. */
  readonly maxBytes: number;
  /** Where the names of archived versions are read; listings without names when left out. */
  readonly labels?: VersionLabels;
}

/**
 * `GET api/store/versions/<path>`: the archived and published versions of a notebook, a page
 * at a time (`limit`, `next`), or with `object_version_id` (and `copy`) one version's content.
 */
export function versionsRoute(options: IVersionsOptions): Route.Handler {
  const tokens = new VersionPageTokens();
  return async (request, response, { path }) => {
    const query = requestQuery(request);
    const versionId = query.getAll('object_version_id').at(-1);
    if (versionId === undefined) {
      const page = {
        limit: parseVersionsLimit(query.getAll('limit').at(-1)),
        token: query.getAll('next').at(-1),
        tokens
      };
      const listing = await listVersions(options.archiving, path, page, options.labels);
      response.json(VersionListingSchema.parse(listing));
    } else {
      const copy = query.getAll('copy').at(-1);
      const content = await readVersion(options, path, versionId, copy);
      response.json(VersionContentSchema.parse(content));
    }
  };
}

/**
 * One version of the archived (`copy` workspace, the default) or published copy of a notebook,
 * with its content: 400 for an empty, too long or malformed version id or an unknown `copy`, 404
 * when the version does not exist, 413 over the limit, 422 when it is not a notebook.
 */
async function readVersion(
  options: IVersionsOptions,
  path: string,
  versionId: string,
  copy = 'workspace'
): Promise<VersionContent> {
  if (copy !== 'workspace' && copy !== 'published') {
    throw httpErrors.badRequest('copy must be "workspace" or "published"');
  }
  const { archiving, maxBytes } = options;
  const version = await readNotebookVersion(archiving, path, versionId, copy, {
    maxBytes,
    parse: parseNotebook
  });
  return {
    path,
    object_bucket: archiving.bucket,
    object_key: version.key,
    object_version_id: version.versionId,
    content: version.notebook as unknown as Record<string, unknown>
  };
}
