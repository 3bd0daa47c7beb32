import { DEFAULT_VERSIONS_PAGE_LIMIT, MAX_VERSIONS_PAGE_LIMIT } from '@jupyter-store/contract';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { httpErrors } from '../http/errorCatalogue';

/**
 * Where the archived history of a notebook resumes: one frame per key still to list, the
 * innermost (listed next) last. A frame's `after` is the store's marker of the last entry of its
 * key already gone through (null: from the newest). Several frames are open when a rename was
 * followed from the middle of a key's entries: the older entries of that key wait below.
 */
export interface IHistoryFrame {
  /** The notebook path of the key (`<workspace_prefix>/<path>`). */
  readonly path: string;
  readonly after: string | null;
}

/** The archived history still to list, and how many renames it followed already. */
export interface IHistoryCursor {
  readonly frames: readonly IHistoryFrame[];
  readonly renames: number;
}

/**
 * Where the next page of a version listing resumes, copy by copy: for the archived copy, the
 * history still to list (across renames); for the published copy, the store's marker to list
 * after; null when that copy has no more versions.
 */
export interface IVersionCursor {
  readonly workspace: IHistoryCursor | null;
  readonly published: string | null;
}

/** What a page token is bound to: the listing it continues. */
export interface IListingIdentity {
  readonly bucket: string;
  readonly workspaceKey: string;
  readonly publishedKey: string;
}

/**
 * The longest token accepted. A token holds a marker and a path per key of the history still
 * open; tokens travel in the query string, which HTTP servers bound (16 KiB of request head in
 * Node), so nothing longer could arrive anyway.
 */
const MAX_TOKEN_CHARS = 16384;

/**
 * The most renames a version listing follows back from a notebook's path (each leads to the
 * versions of an earlier path). It bounds the work of a listing whatever the metadata says,
 * renames back and forth included; the versions of paths beyond it are not listed.
 */
export const MAX_RENAMES_FOLLOWED = 32;

/** The most frames a token may carry: each rename followed opens at most one. */
const MAX_TOKEN_FRAMES = MAX_RENAMES_FOLLOWED + 1;

/** The longest marker a token may carry, as the store API takes version ids. */
const MAX_MARKER_CHARS = 1024;

/**
 * The `limit` of a listing: absent is {@link DEFAULT_VERSIONS_PAGE_LIMIT}; else a decimal
 * integer from 1 to {@link MAX_VERSIONS_PAGE_LIMIT}, without sign, spaces or leading zeros.
 *
 * @throws HttpError 400 (reason `bad request`) for anything else.
 */
export function parseVersionsLimit(raw: string | undefined): number {
  return parseLimitParameter(raw, DEFAULT_VERSIONS_PAGE_LIMIT, MAX_VERSIONS_PAGE_LIMIT);
}

/**
 * A `limit` query parameter: absent is `fallback`; else a decimal integer from 1 to `max`,
 * without sign, spaces or leading zeros.
 *
 * @throws HttpError 400 (reason `bad request`) for anything else.
 */
export function parseLimitParameter(
  raw: string | undefined,
  fallback: number,
  max: number
): number {
  if (raw === undefined) return fallback;
  if (/^[1-9][0-9]*$/.test(raw) && raw.length <= String(max).length && Number(raw) <= max) {
    return Number(raw);
  }
  throw httpErrors.badRequest(`limit must be a whole number from 1 to ${max}`);
}

/**
 * Page tokens of version listings: opaque to clients, made and checked by one gateway process.
 *
 * #### Notes
 * A token is `<payload>.<mac>`, both base64url: the payload is the JSON of an
 * {@link IVersionCursor}; the MAC is an HMAC-SHA256, under a key drawn at random when the
 * process starts, of the payload and of the bucket and the two keys listed. So a token is
 * accepted only from the process that made it and only for the listing it continues (the same
 * path, bucket and prefixes); anything else (edited, truncated, made up, of another path, or
 * from before a restart) is a 400 with the reason `invalid token`, after which a client starts
 * again from the first page. Markers never reach the store unless the token checks.
 */
export class VersionPageTokens {
  constructor(key: Buffer = randomBytes(32)) {
    this._key = key;
  }

  /** The token of `cursor` for this listing; null when neither copy has more. */
  encode(identity: IListingIdentity, cursor: IVersionCursor): string | null {
    if (cursor.workspace === null && cursor.published === null) return null;
    const workspace = cursor.workspace && {
      f: cursor.workspace.frames.map(frame => [frame.path, frame.after]),
      r: cursor.workspace.renames
    };
    const payload = Buffer.from(
      JSON.stringify({ v: 2, w: workspace, p: cursor.published }),
      'utf8'
    ).toString('base64url');
    return `${payload}.${this._mac(identity, payload).toString('base64url')}`;
  }

  /**
   * The cursor of a token made by {@link encode} for this listing.
   *
   * @throws HttpError 400 (reason `invalid token`) for any other text.
   */
  decode(identity: IListingIdentity, token: string): IVersionCursor {
    const invalid = httpErrors.invalidToken(
      'next is not a page token of this listing (tokens are valid for one path, until the ' +
        'server restarts): list again from the first page'
    );
    if (token.length > MAX_TOKEN_CHARS) throw invalid;
    const match = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{43})$/.exec(token);
    if (!match) throw invalid;
    const [, payload, mac] = match;
    const expected = this._mac(identity, payload);
    const given = Buffer.from(mac, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid;
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    } catch {
      throw invalid;
    }
    const record = parsed as { v?: unknown; w?: unknown; p?: unknown } | null;
    if (typeof record !== 'object' || record === null || record.v !== 2) throw invalid;
    const workspace = Private.history(record.w);
    if (
      workspace === undefined ||
      !Private.isMarker(record.p) ||
      (workspace === null && record.p === null)
    ) {
      throw invalid;
    }
    return { workspace, published: record.p };
  }

  private _mac(identity: IListingIdentity, payload: string): Buffer {
    return createHmac('sha256', this._key)
      .update(
        JSON.stringify([
          'jupyter-store versions page',
          identity.bucket,
          identity.workspaceKey,
          identity.publishedKey,
          payload
        ])
      )
      .digest();
  }

  private readonly _key: Buffer;
}

namespace Private {
  /** A store marker as a token may carry it: a version id as the store API takes them. */
  export function isMarker(value: unknown): value is string | null {
    return (
      value === null ||
      (typeof value === 'string' && value !== '' && value.length <= MAX_MARKER_CHARS)
    );
  }

  /** The archived history of a token's payload; undefined when it is malformed. */
  export function history(value: unknown): IHistoryCursor | null | undefined {
    if (value === null) return null;
    const record = value as { f?: unknown; r?: unknown } | undefined;
    if (typeof record !== 'object' || !Array.isArray(record.f)) return undefined;
    const { f: rawFrames, r: renames } = record;
    if (
      rawFrames.length === 0 ||
      rawFrames.length > MAX_TOKEN_FRAMES ||
      typeof renames !== 'number' ||
      !Number.isSafeInteger(renames) ||
      renames < 0
    ) {
      return undefined;
    }
    const frames: IHistoryFrame[] = [];
    for (const frame of rawFrames as unknown[]) {
      if (!Array.isArray(frame) || frame.length !== 2) return undefined;
      const [path, after] = frame as unknown[];
      if (typeof path !== 'string' || path === '' || !isMarker(after)) return undefined;
      frames.push({ path, after });
    }
    return { frames, renames };
  }
}
