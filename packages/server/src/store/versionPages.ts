import { DEFAULT_VERSIONS_PAGE_LIMIT, MAX_VERSIONS_PAGE_LIMIT } from '@jupyter-store/contract';
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { httpErrors } from '../http/errorCatalogue';

/**
 * Where the next page of a version listing resumes, copy by copy: the store's marker to list
 * after, or null when that copy has no more versions.
 */
export interface IVersionCursor {
  readonly workspace: string | null;
  readonly published: string | null;
}

/** What a page token is bound to: the listing it continues. */
export interface IListingIdentity {
  readonly bucket: string;
  readonly workspaceKey: string;
  readonly publishedKey: string;
}

/** The longest token accepted: two markers of at most 1024 characters, encoded, and a MAC. */
const MAX_TOKEN_CHARS = 8192;

/** The longest marker a token may carry, as the store API takes version ids. */
const MAX_MARKER_CHARS = 1024;

/**
 * The `limit` of a listing: absent is {@link DEFAULT_VERSIONS_PAGE_LIMIT}; else a decimal
 * integer from 1 to {@link MAX_VERSIONS_PAGE_LIMIT}, without sign, spaces or leading zeros.
 *
 * @throws HttpError 400 (reason `bad request`) for anything else.
 */
export function parseVersionsLimit(raw: string | undefined): number {
  if (raw === undefined) return DEFAULT_VERSIONS_PAGE_LIMIT;
  if (/^[1-9][0-9]{0,3}$/.test(raw) && Number(raw) <= MAX_VERSIONS_PAGE_LIMIT) return Number(raw);
  throw httpErrors.badRequest(`limit must be a whole number from 1 to ${MAX_VERSIONS_PAGE_LIMIT}`);
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
    const payload = Buffer.from(
      JSON.stringify({ v: 1, w: cursor.workspace, p: cursor.published }),
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
    const marker = (value: unknown): value is string | null =>
      value === null ||
      (typeof value === 'string' && value !== '' && value.length <= MAX_MARKER_CHARS);
    if (
      typeof record !== 'object' ||
      record === null ||
      record.v !== 1 ||
      !marker(record.w) ||
      !marker(record.p) ||
      (record.w === null && record.p === null)
    ) {
      throw invalid;
    }
    return { workspace: record.w, published: record.p };
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
