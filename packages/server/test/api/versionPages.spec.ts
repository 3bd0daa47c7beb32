/**
 * Page tokens of version listings: a history cursor (the keys still to list across renames)
 * comes back exactly as it went, only for the listing it was made for, and anything else is a
 * 400 `invalid token`.
 */
import { createHmac } from 'node:crypto';
import { HttpError } from '../../src/errors';
import {
  MAX_RENAMES_FOLLOWED,
  VersionPageTokens,
  type IVersionCursor
} from '../../src/store/versionPages';

const KEY = Buffer.alloc(32, 7);
const identity = {
  bucket: 'notebooks',
  workspaceKey: 'workspace/d.ipynb',
  publishedKey: 'published/d.ipynb'
};

/** A token with this payload, signed as the tokens of `KEY` are (to test the payload checks). */
function signed(payload: unknown): string {
  const encoded = Buffer.from(JSON.stringify(payload), 'utf8').toString('base64url');
  const mac = createHmac('sha256', KEY)
    .update(
      JSON.stringify([
        'jupyter-store versions page',
        identity.bucket,
        identity.workspaceKey,
        identity.publishedKey,
        encoded
      ])
    )
    .digest('base64url');
  return `${encoded}.${mac}`;
}

function expectInvalid(run: () => unknown): void {
  let caught: unknown;
  try {
    run();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(HttpError);
  expect(caught).toMatchObject({ status: 400, reason: 'invalid token' });
}

describe('VersionPageTokens', () => {
  const tokens = new VersionPageTokens(KEY);

  test('a history cursor across renames comes back as it went', () => {
    const cursor: IVersionCursor = {
      workspace: {
        frames: [
          { path: 'x.ipynb', after: 'marker-1' },
          { path: 'y.ipynb', after: null }
        ],
        renames: 2
      },
      published: null
    };
    const token = tokens.encode(identity, cursor);
    expect(typeof token).toBe('string');
    expect(tokens.decode(identity, token!)).toEqual(cursor);
  });

  test('no token when neither copy has more', () => {
    expect(tokens.encode(identity, { workspace: null, published: null })).toBeNull();
  });

  test('a token of another listing, or malformed cursors, are 400', () => {
    const token = tokens.encode(identity, {
      workspace: { frames: [{ path: 'd.ipynb', after: 'v1' }], renames: 0 },
      published: 'p1'
    })!;
    expectInvalid(() => tokens.decode({ ...identity, workspaceKey: 'workspace/e.ipynb' }, token));
    const tooMany = Array.from({ length: MAX_RENAMES_FOLLOWED + 2 }, () => ['a.ipynb', null]);
    for (const payload of [
      { v: 1, w: 'v1', p: null },
      { v: 2, w: null, p: null },
      { v: 2, w: { f: [], r: 0 }, p: null },
      { v: 2, w: { f: [['', null]], r: 0 }, p: null },
      { v: 2, w: { f: [['a.ipynb', '']], r: 0 }, p: null },
      { v: 2, w: { f: [['a.ipynb', null]], r: -1 }, p: null },
      { v: 2, w: { f: [['a.ipynb']], r: 0 }, p: null },
      { v: 2, w: { f: tooMany, r: 0 }, p: null }
    ]) {
      expectInvalid(() => tokens.decode(identity, signed(payload)));
    }
    expect(
      tokens.decode(identity, signed({ v: 2, w: { f: [['a.ipynb', null]], r: 3 }, p: null }))
    ).toEqual({
      workspace: { frames: [{ path: 'a.ipynb', after: null }], renames: 3 },
      published: null
    });
  });
});
