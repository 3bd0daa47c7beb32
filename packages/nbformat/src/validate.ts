/**
 * Notebook validation as nbformat 5.11.1 does it, with the message Jupyter Server puts in a
 * model's `message` when a notebook does not match its schema.
 *
 * nbformat asks the fast `fastjsonschema` for a verdict and, only when that fails, asks
 * `jsonschema` (draft 4) for its first error, which it then refines (`better_validation_error`) and
 * prints with `pprint`. We do the same: `ajv` gives the verdict against the vendored official
 * schemas, and a small draft-4 evaluator that walks schema keywords in the order `jsonschema` does
 * finds the same first error and words it the same way.
 *
 * #### Known differences
 * - `jsonschema` visits the extra keys of a mime bundle as a Python `set`, in string-hash order;
 *   we visit them in the notebook's order. With two or more invalid values in one bundle, the
 *   message may name another one than Python would on a given run.
 * - `repr()` and `json.dumps()` of the failing value print dict keys in insertion order, which
 *   JavaScript objects keep except for integer-like keys (`"0"`, `"42"`), which come first.
 * - Whether `repr()` escapes a character depends on the Unicode tables: this engine's may be a
 *   newer Unicode version than the Python's, so a character assigned in between prints as is.
 */
import Ajv, { type ValidateFunction } from 'ajv';

import { pyContains, pyItem, pySetItem, pythonEquals, pythonIterable } from './dict';
import { PythonException } from './exception';
import { dumpsPython } from './json';
import { PyNumber, pythonKind, pythonTruthy, pythonTypeName } from './pynumber';
import {
  codePointLength,
  codePointPrefix,
  compareCodePoints,
  pythonPrettyFormat,
  pythonRepr,
  pythonStr,
  pythonStrRepr
} from './repr';
import schemaV3 from './schemas/nbformat.v3.schema.json';
import schemaV40 from './schemas/nbformat.v4.0.schema.json';
import schemaV41 from './schemas/nbformat.v4.1.schema.json';
import schemaV42 from './schemas/nbformat.v4.2.schema.json';
import schemaV43 from './schemas/nbformat.v4.3.schema.json';
import schemaV44 from './schemas/nbformat.v4.4.schema.json';
import schemaV45 from './schemas/nbformat.v4.5.schema.json';
import schemaV4Latest from './schemas/nbformat.v4.schema.json';

type JsonObject = Record<string, unknown>;
type Schema = JsonObject | boolean;
type PathItem = string | number;

/** The prefix Jupyter Server gives every validation message. */
export const VALIDATION_MESSAGE_PREFIX = 'Notebook validation failed: ';

/** Generates the id of a cell that lacks one (nbformat: 8 hex digits of a random UUID). */
export type CellIdGenerator = () => string;

/**
 * Why a notebook fails validation: the message Jupyter shows, and its parts for callers that
 * word their own (the error's text and where it lies), so that none has to parse the message.
 */
export interface IValidationError {
  /** Jupyter Server's `model["message"]`: {@link VALIDATION_MESSAGE_PREFIX}, then nbformat's. */
  readonly message: string;
  /** What is wrong, in jsonschema's words (`'outputs' is a required property`). */
  readonly reason: string;
  /**
   * Where, from the notebook's root: the keys and list indices of the failing value
   * (`['cells', 2, 'outputs', 0]`), which the message prints as `On instance[...]`.
   */
  readonly path: readonly PathItem[];
}

/**
 * Validate a notebook as `nbformat.validate(nb)` does, and return the error whose message Jupyter
 * Server's `validate_notebook_model` would put in the model, or undefined when it is valid.
 *
 * #### Notes
 * Like nbformat, this first normalises the notebook in place when it is v4.5 or later: a cell
 * without an `id` gets one, and a repeated id is replaced by a new one.
 *
 * Throws a {@link PythonException} where nbformat itself fails with an exception other than a
 * `ValidationError` (for example a non-integer `nbformat_minor`, or a cells list that holds
 * something other than objects): Jupyter then fails the read or the save.
 *
 * @param checkSchema - false skips the schema check (the only walk of the whole notebook) and
 *   answers undefined, for a caller that knows these exact contents passed it already; the
 *   version checks and the cell-id repair are still done.
 */
export function validateNotebookInPlace(
  notebook: JsonObject,
  generateCellId: CellIdGenerator,
  checkSchema = true
): IValidationError | undefined {
  const version = getOrDefault(notebook, 'nbformat', 1);
  const minor = getOrDefault(notebook, 'nbformat_minor', 0);
  if (!isPythonInt(version) || !isPythonInt(minor)) {
    throw new PythonException('AssertionError', '');
  }
  if (compareVersion(version, minor, 4, 5) >= 0) {
    normalizeCellIds(notebook, generateCellId);
  }
  return checkSchema ? firstValidationError(notebook, version, minor) : undefined;
}

/**
 * Compile the validators of the notebook versions most files are (v4.4 and v4.5, the version of
 * every new notebook), which otherwise costs the first read or save of such a notebook about
 * 100 ms of CPU each; the others stay compiled on first use.
 */
export function prepareValidation(): void {
  for (const minor of [V4_CURRENT_MINOR - 1, V4_CURRENT_MINOR]) {
    schemaSetFor(4, minor)?.prepare();
  }
}

/**
 * The validation error of a notebook that is already normalised, for the schema of
 * `(version, minor)`; undefined when it is valid. Throws a {@link PythonException} where
 * nbformat fails to find a validator at all.
 */
export function firstValidationError(
  instance: unknown,
  version: unknown,
  minor: unknown
): IValidationError | undefined {
  const schemaSet = schemaSetFor(version, minor);
  if (schemaSet === undefined) {
    const reason =
      `No schema for validating v${pythonStr(version)}.${pythonStr(minor)} notebooks:\n` +
      '"<UNKNOWN>"';
    return { message: VALIDATION_MESSAGE_PREFIX + reason, reason, path: [] };
  }
  if (schemaSet.isValidFast(instance)) {
    return undefined;
  }
  const error = schemaSet.firstError(instance, schemaSet.root);
  if (error === undefined) {
    return undefined;
  }
  const refined = refine(error, schemaSet);
  return {
    message: formatValidationError(refined),
    reason: refined.error.message,
    path: refined.path
  };
}

/**
 * nbformat's `_normalize`: give every cell an id, and replace repeated ids, in place.
 * Throws a {@link PythonException} where nbformat fails on a malformed cells list.
 */
function normalizeCellIds(notebook: JsonObject, generateCellId: CellIdGenerator): void {
  if (!Object.prototype.hasOwnProperty.call(notebook, 'cells')) {
    throw new PythonException('KeyError', "'cells'", "KeyError('cells')");
  }
  const cells = pythonIterable(notebook.cells);
  for (const cell of cells) {
    if (!pyContains(cell, 'id')) {
      pySetItem(cell, 'id', generateCellId());
    }
  }
  const seen = new Set<string>();
  for (const cell of cells) {
    if (!pyContains(cell, 'id')) {
      continue;
    }
    const key = hashKey(pyItem(cell, 'id'));
    if (seen.has(key)) {
      pySetItem(cell, 'id', generateCellId());
    }
    seen.add(key);
  }
}

let uniqueNaNKeys = 0;

/** A key under which values equal in Python (and so in a Python `set`) collide. */
function hashKey(value: unknown): string {
  const kind = pythonKind(value);
  switch (kind) {
    case 'str':
      return 's' + (value as string);
    case 'NoneType':
      return 'none';
    case 'list':
    case 'dict':
      throw new PythonException('TypeError', `unhashable type: '${pythonTypeName(value)}'`);
    default: {
      if (value instanceof PyNumber && value.kind === 'int') {
        return 'n' + BigInt(value.text).toString();
      }
      const number = Number(value);
      if (Number.isNaN(number)) {
        // NaN equals nothing, not even itself.
        return `nan${uniqueNaNKeys++}`;
      }
      return Number.isInteger(number) ? 'n' + BigInt(number).toString() : 'f' + number;
    }
  }
}

function getOrDefault(record: JsonObject, key: string, fallback: unknown): unknown {
  return Object.prototype.hasOwnProperty.call(record, key) ? record[key] : fallback;
}

/** Is this a Python `int` (a `bool` is one too)? */
export function isPythonInt(value: unknown): boolean {
  const kind = pythonKind(value);
  return kind === 'int' || kind === 'bool';
}

/** Python's `(a, b)` versus `(c, d)` for int-like a and b. */
function compareVersion(a: unknown, b: unknown, c: number, d: number): number {
  const x = Number(a);
  return x !== c ? x - c : Number(b) - d;
}

// ---------------------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------------------

const V4_SCHEMAS: readonly JsonObject[] = [
  schemaV40,
  schemaV41,
  schemaV42,
  schemaV43,
  schemaV44,
  schemaV45
] as unknown as JsonObject[];
const V4_CURRENT_MINOR = 5;

const schemaSets = new Map<string, SchemaSet>();

/**
 * The schema nbformat's `get_validator(version, minor)` uses, or undefined where it finds none.
 * Throws a {@link PythonException} where nbformat fails (an unknown major version, or a v3
 * notebook with a minor version above 0).
 */
function schemaSetFor(version: unknown, minor: unknown): SchemaSet | undefined {
  const major = pythonKind(version) === 'int' ? Number(version) : NaN;
  if (![1, 2, 3, 4].includes(major)) {
    // nbformat imports `nbformat.v<version>` by name, as an attribute of the package.
    throw new PythonException('ImportError', `No module named v${pythonStr(version)}`);
  }
  const minorNumber = Number(minor);
  if (major === 1 || major === 2) {
    return undefined;
  }
  if (major === 3) {
    if (minorNumber === 0) {
      return cachedSchemaSet('3', () => clone(schemaV3 as unknown as JsonObject));
    }
    if (minorNumber > 0) {
      // nbformat looks for a "latest" v3 schema that does not exist.
      throw new PythonException('KeyError', '(None, None)', 'KeyError((None, None))');
    }
    return undefined;
  }
  if (minorNumber >= 0 && minorNumber <= V4_CURRENT_MINOR) {
    return cachedSchemaSet(`4.${minorNumber}`, () => clone(V4_SCHEMAS[minorNumber]));
  }
  if (minorNumber > V4_CURRENT_MINOR) {
    // A notebook from a future minor version: nbformat relaxes the latest schema.
    return cachedSchemaSet('4.future', () =>
      allowUndefinedTypes(relaxAdditionalProperties(clone(schemaV4Latest as unknown as JsonObject)))
    );
  }
  return undefined;
}

function cachedSchemaSet(key: string, load: () => JsonObject): SchemaSet {
  let schemaSet = schemaSets.get(key);
  if (schemaSet === undefined) {
    schemaSet = new SchemaSet(load());
    schemaSets.set(key, schemaSet);
  }
  return schemaSet;
}

function clone<T>(value: T): T {
  return structuredClone(value);
}

/** nbformat's `_relax_additional_properties`: every `additionalProperties` becomes `true`. */
function relaxAdditionalProperties<T>(value: T): T {
  if (Array.isArray(value)) {
    return value.map(relaxAdditionalProperties) as T;
  }
  if (value !== null && typeof value === 'object') {
    const record = value as JsonObject;
    for (const key of Object.keys(record)) {
      record[key] = key === 'additionalProperties' ? true : relaxAdditionalProperties(record[key]);
    }
  }
  return value;
}

/** nbformat's `_allow_undefined`: unknown cell and output types become acceptable. */
function allowUndefinedTypes(schema: JsonObject): JsonObject {
  const definitions = schema.definitions as Record<string, JsonObject>;
  (definitions.cell.oneOf as JsonObject[]).push({ $ref: '#/definitions/unrecognized_cell' });
  (definitions.output.oneOf as JsonObject[]).push({ $ref: '#/definitions/unrecognized_output' });
  return schema;
}

// ---------------------------------------------------------------------------------------------
// The fast verdict (ajv)
// ---------------------------------------------------------------------------------------------

let ajvInstance: Ajv | undefined;

/**
 * One Ajv for all schemas. `type`, `minimum` and `maximum` are replaced by keywords with Python's
 * meaning (a {@link PyNumber} float is not an integer, nor an object), so that whatever Ajv accepts
 * nbformat accepts too. Ajv may be stricter (its `$` and `.` in patterns are), which only costs a
 * walk with the exact evaluator.
 */
function getAjv(): Ajv {
  if (ajvInstance === undefined) {
    const ajv = new Ajv({ strict: false, validateSchema: false, allErrors: false });
    ajv.addKeyword({
      keyword: 'pythonType',
      schemaType: ['string', 'array'],
      errors: false,
      compile: (types: string | string[]) => {
        const list = typeof types === 'string' ? [types] : types;
        return (data: unknown) => list.some(type => isType(data, type));
      }
    });
    ajv.addKeyword({
      keyword: 'pythonMinimum',
      schemaType: 'number',
      errors: false,
      compile: (minimum: number) => (data: unknown) =>
        !isType(data, 'number') || compareNumbers(data, minimum) >= 0
    });
    ajv.addKeyword({
      keyword: 'pythonMaximum',
      schemaType: 'number',
      errors: false,
      compile: (maximum: number) => (data: unknown) =>
        !isType(data, 'number') || compareNumbers(data, maximum) <= 0
    });
    ajvInstance = ajv;
  }
  return ajvInstance;
}

const AJV_RENAMED_KEYWORDS: Record<string, string> = {
  type: 'pythonType',
  minimum: 'pythonMinimum',
  maximum: 'pythonMaximum'
};
/** Keywords whose value maps names to schemas, rather than being a schema itself. */
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', 'definitions']);

function toAjvSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) {
    return schema.map(toAjvSchema);
  }
  if (schema === null || typeof schema !== 'object') {
    return schema;
  }
  const result: JsonObject = {};
  for (const [key, value] of Object.entries(schema as JsonObject)) {
    if (key === '$schema') {
      continue;
    }
    if (key === 'enum') {
      result[key] = value;
    } else if (SCHEMA_MAPS.has(key) && value !== null && typeof value === 'object') {
      result[key] = Object.fromEntries(
        Object.entries(value as JsonObject).map(([name, sub]) => [name, toAjvSchema(sub)])
      );
    } else {
      result[AJV_RENAMED_KEYWORDS[key] ?? key] = toAjvSchema(value);
    }
  }
  return result;
}

// ---------------------------------------------------------------------------------------------
// The exact evaluator (jsonschema's Draft4Validator)
// ---------------------------------------------------------------------------------------------

/** A validation error as `jsonschema` reports it. */
interface SchemaError {
  message: string;
  /** The keyword that failed. */
  validator: string | null;
  /** `relative_schema_path`. */
  schemaPath: PathItem[];
  /** `relative_path`: where in the instance. */
  path: PathItem[];
  instance: unknown;
  /** Not yet stamped with its keyword and instance (jsonschema's `_unset`). */
  unset: boolean;
}

/** Python would raise something other than a `ValidationError` while resolving a `$ref`. */
class ReferenceFailure extends Error {}

type KeywordCheck = (
  schemaSet: SchemaSet,
  value: unknown,
  instance: unknown,
  schema: JsonObject
) => Iterable<SchemaError>;

/** A root schema, with its Ajv verdict and its draft-4 evaluator. */
class SchemaSet {
  constructor(readonly root: JsonObject) {}

  private fast: ValidateFunction | undefined;
  private readonly references = new Map<string, unknown>();

  /** The Ajv verdict: true only if jsonschema finds no error either. */
  isValidFast(instance: unknown): boolean {
    return this.prepare()(instance) as boolean;
  }

  /** The compiled Ajv validator, compiled now if it was not yet. */
  prepare(): ValidateFunction {
    this.fast ??= getAjv().compile(toAjvSchema(this.root) as JsonObject);
    return this.fast;
  }

  /** jsonschema's first error, or undefined. */
  firstError(instance: unknown, schema: Schema): SchemaError | undefined {
    const result = this.errors(instance, schema).next();
    return result.done ? undefined : result.value;
  }

  isValid(instance: unknown, schema: Schema): boolean {
    return this.errors(instance, schema).next().done === true;
  }

  /** jsonschema's `iter_errors`, lazily, in its order. */
  *errors(instance: unknown, schema: Schema): Generator<SchemaError> {
    if (schema === true) {
      return;
    }
    if (schema === false) {
      yield {
        message: `False schema does not allow ${pythonRepr(instance)}`,
        validator: null,
        schemaPath: [],
        path: [],
        instance,
        unset: false
      };
      return;
    }
    // Draft 4 ignores the siblings of `$ref`.
    const entries: [string, unknown][] =
      schema.$ref !== undefined && schema.$ref !== null
        ? [['$ref', schema.$ref]]
        : Object.entries(schema);
    for (const [keyword, value] of entries) {
      if (!Object.prototype.hasOwnProperty.call(KEYWORDS, keyword)) {
        continue;
      }
      const check = KEYWORDS[keyword];
      for (const error of check(this, value, instance, schema)) {
        if (error.unset) {
          error.validator = keyword;
          error.instance = instance;
          error.unset = false;
        }
        if (keyword !== '$ref') {
          error.schemaPath.unshift(keyword);
        }
        yield error;
      }
    }
  }

  *descend(
    instance: unknown,
    schema: unknown,
    path?: PathItem,
    schemaPath?: PathItem
  ): Generator<SchemaError> {
    for (const error of this.errors(instance, schema as Schema)) {
      if (path !== undefined) {
        error.path.unshift(path);
      }
      if (schemaPath !== undefined) {
        error.schemaPath.unshift(schemaPath);
      }
      yield error;
    }
  }

  /** Resolve a local `$ref` as the `referencing` library does; throws {@link ReferenceFailure}. */
  resolve(reference: string): Schema {
    if (!this.references.has(reference)) {
      this.references.set(reference, this.lookup(reference));
    }
    const target = this.references.get(reference);
    if (target === ReferenceFailure) {
      throw new ReferenceFailure(reference);
    }
    return target as Schema;
  }

  private lookup(reference: string): unknown {
    if (!reference.startsWith('#')) {
      return ReferenceFailure;
    }
    let fragment = reference.slice(1);
    try {
      fragment = decodeURIComponent(fragment);
    } catch {
      // Python's unquote leaves malformed escapes as they are.
    }
    let target: unknown = this.root;
    if (fragment !== '') {
      if (!fragment.startsWith('/')) {
        return ReferenceFailure;
      }
      for (const segment of fragment.slice(1).split('/')) {
        if (typeof target === 'string' || Array.isArray(target)) {
          const index = parsePythonIndex(segment, target.length);
          if (index === undefined) {
            return ReferenceFailure;
          }
          target = typeof target === 'string' ? Array.from(target)[index] : target[index];
        } else if (target !== null && typeof target === 'object') {
          const key = segment.replace(/~1/g, '/').replace(/~0/g, '~');
          if (!Object.prototype.hasOwnProperty.call(target, key)) {
            return ReferenceFailure;
          }
          target = (target as JsonObject)[key];
        } else {
          return ReferenceFailure;
        }
      }
    }
    if (typeof target === 'boolean' || (pythonKind(target) === 'dict' && target !== null)) {
      return target;
    }
    // jsonschema cannot use a string, number or list as a schema.
    return ReferenceFailure;
  }
}

/** Python's `int(segment)` used as an index, with negative indices from the end. */
function parsePythonIndex(segment: string, length: number): number | undefined {
  if (!/^\s*[+-]?\d+(?:_\d+)*\s*$/.test(segment)) {
    return undefined;
  }
  let index = Number(segment.replace(/_/g, '').trim());
  if (index < 0) {
    index += length;
  }
  return index >= 0 && index < length ? index : undefined;
}

function ownError(message: string): SchemaError {
  return { message, validator: null, schemaPath: [], path: [], instance: undefined, unset: true };
}

/** jsonschema's draft-4 type checker, on Python types. */
function isType(instance: unknown, type: string): boolean {
  const kind = pythonKind(instance);
  switch (type) {
    case 'array':
      return kind === 'list';
    case 'boolean':
      return kind === 'bool';
    case 'integer':
      return kind === 'int';
    case 'null':
      return kind === 'NoneType';
    case 'number':
      return kind === 'int' || kind === 'float';
    case 'object':
      return kind === 'dict';
    case 'string':
      return kind === 'str';
    default:
      throw new PythonException('UnknownType', type);
  }
}

function compareNumbers(a: unknown, b: unknown): number {
  if (a instanceof PyNumber && a.kind === 'int' && pythonKind(b) === 'int') {
    const x = BigInt(a.text);
    const y = BigInt(b instanceof PyNumber ? b.text : (b as number));
    return x < y ? -1 : x > y ? 1 : 0;
  }
  const x = Number(a);
  const y = Number(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

/** jsonschema's `equal`: Python equality, except that booleans never equal numbers. */
function jsonschemaEqual(a: unknown, b: unknown): boolean {
  if (a === b) {
    return true;
  }
  const kindA = pythonKind(a);
  const kindB = pythonKind(b);
  if (kindA === 'str' || kindB === 'str') {
    return a === b;
  }
  if (kindA === 'list' && kindB === 'list') {
    const x = a as unknown[];
    const y = b as unknown[];
    return x.length === y.length && x.every((item, index) => jsonschemaEqual(item, y[index]));
  }
  if (kindA === 'dict' && kindB === 'dict') {
    const x = a as JsonObject;
    const y = b as JsonObject;
    const keys = Object.keys(x);
    return (
      keys.length === Object.keys(y).length &&
      keys.every(
        key => Object.prototype.hasOwnProperty.call(y, key) && jsonschemaEqual(x[key], y[key])
      )
    );
  }
  if (kindA === 'bool' || kindB === 'bool') {
    return false;
  }
  return pythonEquals(a, b);
}

const compiledPatterns = new Map<string, RegExp>();

/** Python's `re.search(pattern, text)` for the patterns the notebook schemas use. */
function pythonSearch(pattern: string, text: string): boolean {
  let regExp = compiledPatterns.get(pattern);
  if (regExp === undefined) {
    regExp = pythonPatternToRegExp(pattern);
    compiledPatterns.set(pattern, regExp);
  }
  return regExp.test(text);
}

/**
 * Translate a Python regular expression to JavaScript: Python's `.` excludes only `\n` (JavaScript
 * also excludes `\r`, U+2028 and U+2029), and Python's `$` also matches before a final `\n`.
 */
function pythonPatternToRegExp(pattern: string): RegExp {
  let out = '';
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const char = pattern[i];
    if (char === '\\') {
      out += pattern.slice(i, i + 2);
      i++;
    } else if (inClass) {
      inClass = char !== ']';
      out += char;
    } else if (char === '[') {
      inClass = true;
      out += char;
      if (pattern[i + 1] === '^') {
        out += '^';
        i++;
      }
      if (pattern[i + 1] === ']') {
        out += '\\]';
        i++;
      }
    } else if (char === '.') {
      out += '[^\\n]';
    } else if (char === '$') {
      out += '(?=\\n?$)';
    } else {
      out += char;
    }
  }
  return new RegExp(out, 'u');
}

const KEYWORDS: Record<string, KeywordCheck> = {
  *$ref(schemaSet, reference, instance) {
    yield* schemaSet.descend(instance, schemaSet.resolve(reference as string));
  },

  *additionalProperties(schemaSet, additional, instance, schema) {
    if (!isType(instance, 'object')) {
      return;
    }
    const record = instance as JsonObject;
    const properties = (schema.properties ?? {}) as JsonObject;
    const patterns = Object.keys((schema.patternProperties ?? {}) as JsonObject).join('|');
    const extras = Object.keys(record).filter(
      key =>
        !Object.prototype.hasOwnProperty.call(properties, key) &&
        !(patterns !== '' && pythonSearch(patterns, key))
    );
    if (isType(additional, 'object')) {
      // jsonschema visits a set here, in hash order; instance order is the stable choice.
      for (const extra of extras) {
        yield* schemaSet.descend(record[extra], additional, extra);
      }
    } else if (!pythonTruthy(additional) && extras.length > 0) {
      const sorted = [...extras].sort(compareCodePoints);
      if (schema.patternProperties !== undefined) {
        const verb = extras.length === 1 ? 'does' : 'do';
        const regexes = Object.keys(schema.patternProperties as JsonObject)
          .sort(compareCodePoints)
          .map(pythonStrRepr)
          .join(', ');
        yield ownError(
          `${sorted.map(pythonStrRepr).join(', ')} ${verb} not match any of the regexes: ${regexes}`
        );
      } else {
        const verb = extras.length === 1 ? 'was' : 'were';
        yield ownError(
          `Additional properties are not allowed (${sorted.map(pythonStrRepr).join(', ')} ${verb} unexpected)`
        );
      }
    }
  },

  *allOf(schemaSet, schemas, instance) {
    const list = schemas as Schema[];
    for (let index = 0; index < list.length; index++) {
      yield* schemaSet.descend(instance, list[index], undefined, index);
    }
  },

  *anyOf(schemaSet, schemas, instance) {
    if (!(schemas as Schema[]).some(schema => schemaSet.isValid(instance, schema))) {
      yield ownError(`${pythonRepr(instance)} is not valid under any of the given schemas`);
    }
  },

  *enum(_schemaSet, values, instance) {
    if (!(values as unknown[]).some(value => jsonschemaEqual(value, instance))) {
      yield ownError(`${pythonRepr(instance)} is not one of ${pythonRepr(values)}`);
    }
  },

  *items(schemaSet, items, instance) {
    if (!isType(instance, 'array')) {
      return;
    }
    const list = instance as unknown[];
    if (isType(items, 'object')) {
      for (let index = 0; index < list.length; index++) {
        yield* schemaSet.descend(list[index], items, index);
      }
    } else if (Array.isArray(items)) {
      const count = Math.min(list.length, items.length);
      for (let index = 0; index < count; index++) {
        yield* schemaSet.descend(list[index], items[index], index, index);
      }
    }
  },

  *maxItems(_schemaSet, limit, instance) {
    if (isType(instance, 'array') && (instance as unknown[]).length > (limit as number)) {
      const message = limit === 0 ? 'is expected to be empty' : 'is too long';
      yield ownError(`${pythonRepr(instance)} ${message}`);
    }
  },

  *minItems(_schemaSet, limit, instance) {
    if (isType(instance, 'array') && (instance as unknown[]).length < (limit as number)) {
      const message = limit === 1 ? 'should be non-empty' : 'is too short';
      yield ownError(`${pythonRepr(instance)} ${message}`);
    }
  },

  *maxLength(_schemaSet, limit, instance) {
    if (isType(instance, 'string') && codePointLength(instance as string) > (limit as number)) {
      const message = limit === 0 ? 'is expected to be empty' : 'is too long';
      yield ownError(`${pythonRepr(instance)} ${message}`);
    }
  },

  *minLength(_schemaSet, limit, instance) {
    if (isType(instance, 'string') && codePointLength(instance as string) < (limit as number)) {
      const message = limit === 1 ? 'should be non-empty' : 'is too short';
      yield ownError(`${pythonRepr(instance)} ${message}`);
    }
  },

  *maximum(_schemaSet, maximum, instance, schema) {
    if (!isType(instance, 'number')) {
      return;
    }
    const exclusive = pythonTruthy(schema.exclusiveMaximum ?? false);
    const comparison = compareNumbers(instance, maximum);
    if (exclusive ? comparison >= 0 : comparison > 0) {
      const relation = exclusive ? 'greater than or equal to' : 'greater than';
      yield ownError(
        `${pythonRepr(instance)} is ${relation} the maximum of ${pythonRepr(maximum)}`
      );
    }
  },

  *minimum(_schemaSet, minimum, instance, schema) {
    if (!isType(instance, 'number')) {
      return;
    }
    const exclusive = pythonTruthy(schema.exclusiveMinimum ?? false);
    const comparison = compareNumbers(instance, minimum);
    if (exclusive ? comparison <= 0 : comparison < 0) {
      const relation = exclusive ? 'less than or equal to' : 'less than';
      yield ownError(
        `${pythonRepr(instance)} is ${relation} the minimum of ${pythonRepr(minimum)}`
      );
    }
  },

  *not(schemaSet, notSchema, instance) {
    if (schemaSet.isValid(instance, notSchema as Schema)) {
      yield ownError(`${pythonRepr(instance)} should not be valid under ${pythonRepr(notSchema)}`);
    }
  },

  *oneOf(schemaSet, schemas, instance) {
    const list = schemas as Schema[];
    const firstValid = list.findIndex(schema => schemaSet.isValid(instance, schema));
    if (firstValid < 0) {
      yield ownError(`${pythonRepr(instance)} is not valid under any of the given schemas`);
      return;
    }
    const moreValid = list
      .slice(firstValid + 1)
      .filter(schema => schemaSet.isValid(instance, schema));
    if (moreValid.length > 0) {
      moreValid.push(list[firstValid]);
      yield ownError(
        `${pythonRepr(instance)} is valid under each of ${moreValid.map(schema => pythonRepr(schema)).join(', ')}`
      );
    }
  },

  *pattern(_schemaSet, pattern, instance) {
    if (isType(instance, 'string') && !pythonSearch(pattern as string, instance as string)) {
      yield ownError(`${pythonRepr(instance)} does not match ${pythonStrRepr(pattern as string)}`);
    }
  },

  *patternProperties(schemaSet, patterns, instance) {
    if (!isType(instance, 'object')) {
      return;
    }
    const record = instance as JsonObject;
    for (const [pattern, schema] of Object.entries(patterns as JsonObject)) {
      for (const key of Object.keys(record)) {
        if (pythonSearch(pattern, key)) {
          yield* schemaSet.descend(record[key], schema, key, pattern);
        }
      }
    }
  },

  *properties(schemaSet, properties, instance) {
    if (!isType(instance, 'object')) {
      return;
    }
    const record = instance as JsonObject;
    for (const [property, schema] of Object.entries(properties as JsonObject)) {
      if (Object.prototype.hasOwnProperty.call(record, property)) {
        yield* schemaSet.descend(record[property], schema, property, property);
      }
    }
  },

  *required(_schemaSet, required, instance) {
    if (!isType(instance, 'object')) {
      return;
    }
    for (const property of required as string[]) {
      if (!Object.prototype.hasOwnProperty.call(instance, property)) {
        yield ownError(`${pythonStrRepr(property)} is a required property`);
      }
    }
  },

  *type(_schemaSet, types, instance) {
    const list = typeof types === 'string' ? [types] : (types as string[]);
    if (!list.some(type => isType(instance, type))) {
      yield ownError(
        `${pythonRepr(instance)} is not of type ${list.map(type => pythonStrRepr(type)).join(', ')}`
      );
    }
  },

  *uniqueItems(_schemaSet, unique, instance) {
    if (pythonTruthy(unique) && isType(instance, 'array')) {
      const list = instance as unknown[];
      const repeated = list.some((item, index) =>
        list.slice(index + 1).some(other => jsonschemaEqual(item, other))
      );
      if (repeated) {
        yield ownError(`${pythonRepr(instance)} has non-unique elements`);
      }
    }
  }
};

// ---------------------------------------------------------------------------------------------
// nbformat's refinement and Jupyter's message
// ---------------------------------------------------------------------------------------------

/** The error nbformat raises: the innermost error, where it lies, and the definition it was in. */
interface RefinedError {
  error: SchemaError;
  path: PathItem[];
  /** The definition name nbformat prints (`code_cell`, `stream`...); null for the notebook. */
  ref: unknown;
}

/**
 * nbformat's `better_validation_error`: a `oneOf` failure on a cell or an output says nothing
 * useful, so validate the instance against the definition its `cell_type`/`output_type` names
 * and report that error instead, recursively.
 */
function refine(error: SchemaError, schemaSet: SchemaSet): RefinedError {
  const keyword = error.schemaPath[error.schemaPath.length - 1];
  let ref: unknown = null;
  if (
    typeof keyword === 'string' &&
    keyword.endsWith('Of') &&
    pythonKind(error.instance) === 'dict'
  ) {
    const instance = error.instance as JsonObject;
    if (Object.prototype.hasOwnProperty.call(instance, 'cell_type')) {
      if (typeof instance.cell_type !== 'string') {
        throw cannotAppendCellSuffix(instance.cell_type);
      }
      ref = instance.cell_type + '_cell';
    } else if (Object.prototype.hasOwnProperty.call(instance, 'output_type')) {
      ref = instance.output_type ?? null;
    }
    if (pythonTruthy(ref)) {
      const inner = validateAgainstDefinition(error.instance, ref, schemaSet);
      if (inner !== undefined) {
        return {
          error: inner.error,
          path: [...error.path, ...inner.path],
          ref: inner.ref === null ? ref : inner.ref
        };
      }
    }
  }
  return { error, path: error.path, ref };
}

/** nbformat computes `cell_type + "_cell"` without checking that `cell_type` is a string. */
function cannotAppendCellSuffix(cellType: unknown): PythonException {
  switch (pythonKind(cellType)) {
    case 'dict':
      // A NotebookNode adds by updating itself with the other operand.
      return new PythonException(
        'ValueError',
        'dictionary update sequence element #0 has length 1; 2 is required'
      );
    case 'list':
      return new PythonException('TypeError', 'can only concatenate list (not "str") to list');
    default:
      return new PythonException(
        'TypeError',
        `unsupported operand type(s) for +: '${pythonTypeName(cellType)}' and 'str'`
      );
  }
}

/** `validate(instance, ref)`: the refined first error against `#/definitions/<ref>`. */
function validateAgainstDefinition(
  instance: unknown,
  ref: unknown,
  schemaSet: SchemaSet
): RefinedError | undefined {
  if (typeof ref !== 'string') {
    // nbformat asserts that a ref is a string, and falls back to the original error.
    return undefined;
  }
  let error: SchemaError | undefined;
  try {
    error = schemaSet.firstError(instance, { $ref: `#/definitions/${ref}` });
  } catch (caught) {
    if (caught instanceof ReferenceFailure) {
      return undefined;
    }
    throw caught;
  }
  if (error === undefined) {
    return undefined;
  }
  if (error.schemaPath.length === 0) {
    // A `false` schema: nbformat then reads `.ref` of a plain jsonschema error, which fails.
    throw new PythonException('AttributeError', "'ValidationError' object has no attribute 'ref'");
  }
  return refine(error, schemaSet);
}

/** jsonschema's `_utils.format_as_index`: `['cells'][0]`. */
function formatAsIndex(path: PathItem[]): string {
  return path.length === 0 ? '' : '[' + path.map(item => pythonRepr(item)).join('][') + ']';
}

/** Jupyter's `"Notebook validation failed: {}:\n{}".format(str(e), json.dumps(e.instance))`. */
function formatValidationError(refined: RefinedError): string {
  const { error, path, ref } = refined;
  const where = pythonTruthy(ref) ? pythonStr(ref) : 'notebook';
  const description = [
    error.message,
    '',
    `Failed validating ${pythonRepr(error.validator)} in ${where}${formatAsIndex(error.schemaPath.slice(0, -1))}:`,
    '',
    `On instance${formatAsIndex(path)}:`,
    pythonPrettyFormat(truncateForMessage(error.instance), 78)
  ].join('\n');
  return (
    VALIDATION_MESSAGE_PREFIX +
    description +
    ':\n' +
    dumpsPython(error.instance, { indent: 1, ensureAscii: true })
  );
}

const ITEM_LIMIT = 16;
const STRING_LIMIT = 64;

/** nbformat's `_truncate_obj`: keep validation messages short. */
function truncateForMessage(value: unknown): unknown {
  switch (pythonKind(value)) {
    case 'dict': {
      const record = value as JsonObject;
      const keys = Object.keys(record);
      const truncated: JsonObject = Object.create(null);
      for (const key of keys.slice(0, ITEM_LIMIT)) {
        truncated[key] = truncateForMessage(record[key]);
      }
      if (Array.isArray(truncated.cells)) {
        truncated.cells = [`...${(record.cells as unknown[]).length} cells...`];
      }
      if (Array.isArray(truncated.outputs)) {
        truncated.outputs = [`...${(record.outputs as unknown[]).length} outputs...`];
      }
      if (keys.length > ITEM_LIMIT) {
        truncated['...'] = `${keys.length - ITEM_LIMIT} keys truncated`;
      }
      return truncated;
    }
    case 'list': {
      const list = value as unknown[];
      const truncated = list.slice(0, ITEM_LIMIT).map(truncateForMessage);
      if (list.length > ITEM_LIMIT) {
        truncated.push(`...${list.length - ITEM_LIMIT} items truncated...`);
      }
      return truncated;
    }
    case 'str': {
      const text = value as string;
      const prefix = codePointPrefix(text, STRING_LIMIT);
      return prefix.length < text.length ? prefix + '...' : prefix;
    }
    default:
      return value;
  }
}
