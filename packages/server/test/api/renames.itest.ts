/**
 * A notebook's history across renames in `GET {base}api/store/versions/{path}`, against the real
 * gateway (`jupyter-store lab`) archiving to MinIO, renames made through the contents API: the
 * listing of the newest path goes on with the versions of the earlier paths, newest first, each
 * marked with its own path; a rename back to an earlier name is listed once and ends; a new
 * notebook under an old name is kept apart; paging goes across the chain.
 */
import {
  VersionContentSchema,
  VersionListingSchema,
  type ObjectVersion,
  type VersionListing
} from '@jupyter-store/contract';
import { useArchivingLab } from '../support/archivingLab';
import { runCli, terminalEnv } from '../client/storeCli';
import { saveMarkdownNotebook } from '../support/notebookSaves';

jest.setTimeout(180_000);

const BUCKET = 'renames-bucket';

describe('versions across renames (gateway + MinIO)', () => {
  const lab = useArchivingLab({ bucket: BUCKET });
  const auth = (): Record<string, string> => ({ Authorization: `token ${lab.gateway.token}` });

  /** Save a notebook with one markdown cell of `text` through the contents API. */
  async function save(path: string, text: string): Promise<void> {
    expect(await saveMarkdownNotebook(lab.gateway, path, text)).toBeLessThan(300);
  }

  beforeAll(async () => {
    for (const directory of ['chain', 'loop', 'reuse', 'quick']) {
      const response = await fetch(lab.gateway.url(`api/contents/${directory}`), {
        method: 'PUT',
        headers: { ...auth(), 'Content-Type': 'application/json' },
        body: JSON.stringify({ type: 'directory' })
      });
      expect(response.status).toBeLessThan(300);
    }
  });

  /** Rename through the contents API (PATCH). */
  async function rename(from: string, to: string): Promise<void> {
    const response = await fetch(lab.gateway.url(`api/contents/${from}`), {
      method: 'PATCH',
      headers: { ...auth(), 'Content-Type': 'application/json' },
      body: JSON.stringify({ path: to })
    });
    expect(response.status).toBe(200);
  }

  async function page(path: string, query = ''): Promise<VersionListing> {
    const response = await fetch(lab.gateway.url(`api/store/versions/${path}${query}`), {
      headers: auth()
    });
    expect(response.status).toBe(200);
    return VersionListingSchema.parse(await response.json());
  }

  /** Every archived version of `path`'s history, `limit` at a time; pages checked as they come. */
  async function allPages(path: string, limit: number): Promise<ObjectVersion[]> {
    const versions: ObjectVersion[] = [];
    let next: string | null | undefined;
    let pages = 0;
    do {
      const query = `?limit=${limit}${next ? `&next=${encodeURIComponent(next)}` : ''}`;
      const listing = await page(path, query);
      expect(listing.workspace.versions.length).toBeLessThanOrEqual(limit);
      if (listing.next) expect(listing.workspace.versions.length).toBeGreaterThan(0);
      versions.push(...listing.workspace.versions);
      next = listing.next;
      pages++;
    } while (next && pages < 100);
    expect(next).toBeNull();
    return versions;
  }

  /** The first page once the archive has written `count` versions of the history of `path`. */
  async function settled(path: string, count: number): Promise<VersionListing> {
    const deadline = Date.now() + 60_000;
    let listing = await page(path);
    while (listing.workspace.versions.length < count && Date.now() < deadline) {
      await new Promise(resolve => setTimeout(resolve, 200));
      listing = await page(path);
    }
    expect(listing.workspace.versions).toHaveLength(count);
    return listing;
  }

  /** Wait until the archive has written `count` versions of exactly `path`'s key. */
  async function archived(path: string, count: number): Promise<void> {
    const deadline = Date.now() + 60_000;
    const own = async () =>
      (await page(path)).workspace.versions.filter(version => version.path === path).length;
    while ((await own()) < count && Date.now() < deadline) {
      await new Promise(resolve => setTimeout(resolve, 200));
    }
    expect(await own()).toBe(count);
  }

  /** The markdown text of one version, read from the path it was archived under. */
  async function text(version: ObjectVersion): Promise<string> {
    const response = await fetch(
      lab.gateway.url(
        `api/store/versions/${version.path}?object_version_id=${encodeURIComponent(version.object_version_id)}`
      ),
      { headers: auth() }
    );
    expect(response.status).toBe(200);
    const content = VersionContentSchema.parse(await response.json()).content as {
      cells: { source: string }[];
    };
    return content.cells[0].source;
  }

  const summary = (versions: ObjectVersion[]) =>
    versions.map(version => [version.path, version.renamed_from ?? null]);

  function expectNewestFirst(versions: ObjectVersion[]): void {
    const times = versions.map(version => Date.parse(version.last_modified));
    expect(times).toEqual([...times].sort((a, b) => b - a));
  }

  test('three renames: the newest path lists every version of the earlier ones, in order', async () => {
    await save('chain/a.ipynb', 'a 1');
    await archived('chain/a.ipynb', 1);
    await save('chain/a.ipynb', 'a 2');
    await archived('chain/a.ipynb', 2);
    await rename('chain/a.ipynb', 'chain/b.ipynb');
    await archived('chain/b.ipynb', 1);
    await save('chain/b.ipynb', 'b 2');
    await archived('chain/b.ipynb', 2);
    await rename('chain/b.ipynb', 'chain/c.ipynb');
    await archived('chain/c.ipynb', 1);
    await save('chain/c.ipynb', 'c 2');
    await archived('chain/c.ipynb', 2);
    await rename('chain/c.ipynb', 'chain/d.ipynb');
    await archived('chain/d.ipynb', 1);
    await save('chain/d.ipynb', 'd 2');

    const listing = await settled('chain/d.ipynb', 8);
    expect(listing.path).toBe('chain/d.ipynb');
    expect(listing.workspace.object_key).toBe('workspace/chain/d.ipynb');
    const versions = listing.workspace.versions;
    expect(summary(versions)).toEqual([
      ['chain/d.ipynb', null],
      ['chain/d.ipynb', 'chain/c.ipynb'],
      ['chain/c.ipynb', null],
      ['chain/c.ipynb', 'chain/b.ipynb'],
      ['chain/b.ipynb', null],
      ['chain/b.ipynb', 'chain/a.ipynb'],
      ['chain/a.ipynb', null],
      ['chain/a.ipynb', null]
    ]);
    expectNewestFirst(versions);
    expect(versions.map(version => version.is_latest)).toEqual([
      true,
      false,
      false,
      false,
      false,
      false,
      false,
      false
    ]);
    // Each version reads from its own path: the content as it was saved there.
    const texts = [];
    for (const version of versions) texts.push(await text(version));
    expect(texts).toEqual(['d 2', 'c 2', 'c 2', 'b 2', 'b 2', 'a 2', 'a 2', 'a 1']);

    // The CLI shows the earlier paths too.
    const cli = await runCli(['versions', 'chain/d.ipynb'], terminalEnv(lab.gateway));
    expect(cli.status).toBe(0);
    const lines = cli.stdout.split('\n').filter(line => line.startsWith('    '));
    expect(lines).toHaveLength(8);
    expect(lines[0]).not.toContain(' as ');
    expect(lines[1]).toMatch(/ {2}renamed from chain\/c\.ipynb$/);
    expect(lines[2]).toMatch(/ {2}as chain\/c\.ipynb$/);
    expect(lines[5]).toMatch(/ {2}as chain\/b\.ipynb {2}renamed from chain\/a\.ipynb$/);
    expect(lines[7]).toMatch(/ {2}as chain\/a\.ipynb$/);

    // An earlier path's own listing ends where the notebook was there (deleted by the rename).
    const b = await settled('chain/b.ipynb', 4);
    expect(summary(b.workspace.versions)).toEqual([
      ['chain/b.ipynb', null],
      ['chain/b.ipynb', 'chain/a.ipynb'],
      ['chain/a.ipynb', null],
      ['chain/a.ipynb', null]
    ]);
    expect(b.workspace.deleted).toMatchObject({ object_version_id: expect.any(String) });

    // Paging across the chain: every version once, in order, whatever the page size.
    const ids = versions.map(version => version.object_version_id);
    for (const limit of [1, 2, 3, 5, 7]) {
      const paged = await allPages('chain/d.ipynb', limit);
      expect(paged.map(version => version.object_version_id)).toEqual(ids);
      expect(summary(paged)).toEqual(summary(versions));
    }
  });

  test('a save right after a rename keeps the rename in the history', async () => {
    await save('quick/one.ipynb', 'one 1');
    await archived('quick/one.ipynb', 1);
    const renames = [
      ['quick/one.ipynb', 'quick/two.ipynb'],
      ['quick/two.ipynb', 'quick/three.ipynb'],
      ['quick/three.ipynb', 'quick/four.ipynb']
    ];
    for (const [from, to] of renames) {
      // As Lab does: the save follows the rename at once, racing the rename's own read.
      await rename(from, to);
      await save(to, `${to} saved`);
      const deadline = Date.now() + 60_000;
      const linked = async () =>
        (await page(to)).workspace.versions.some(
          version => version.path === to && version.renamed_from === from
        );
      while (!(await linked()) && Date.now() < deadline) {
        await new Promise(resolve => setTimeout(resolve, 200));
      }
      expect(await linked()).toBe(true);
    }
    const versions = await allPages('quick/four.ipynb', 1000);
    expect(summary(versions).filter(([, renamedFrom]) => renamedFrom !== null)).toEqual(
      renames.map(([from, to]) => [to, from]).reverse()
    );
    expect(versions.at(-1)?.path).toBe('quick/one.ipynb');
    expectNewestFirst(versions);
    // The newest version of each path is what was saved there last.
    for (const [, to] of renames) {
      expect(await text(versions.find(version => version.path === to)!)).toBe(`${to} saved`);
    }
  });

  test('a rename back to an earlier name lists each version once, in order, and ends', async () => {
    await save('loop/x.ipynb', 'x 1');
    await archived('loop/x.ipynb', 1);
    await rename('loop/x.ipynb', 'loop/y.ipynb');
    await archived('loop/y.ipynb', 1);
    await save('loop/y.ipynb', 'y 2');
    await archived('loop/y.ipynb', 2);
    await rename('loop/y.ipynb', 'loop/x.ipynb');
    await archived('loop/x.ipynb', 2);
    await save('loop/x.ipynb', 'x 3');

    const listing = await settled('loop/x.ipynb', 5);
    const versions = listing.workspace.versions;
    expect(summary(versions)).toEqual([
      ['loop/x.ipynb', null],
      ['loop/x.ipynb', 'loop/y.ipynb'],
      ['loop/y.ipynb', null],
      ['loop/y.ipynb', 'loop/x.ipynb'],
      ['loop/x.ipynb', null]
    ]);
    expectNewestFirst(versions);
    expect(new Set(versions.map(version => version.object_version_id)).size).toBe(5);
    const texts = [];
    for (const version of versions) texts.push(await text(version));
    expect(texts).toEqual(['x 3', 'y 2', 'y 2', 'x 1', 'x 1']);
    for (const limit of [1, 2, 4]) {
      const paged = await allPages('loop/x.ipynb', limit);
      expect(paged.map(version => version.object_version_id)).toEqual(
        versions.map(version => version.object_version_id)
      );
    }
  });

  test('a new notebook under an old name is not mixed into the history, nor it into its', async () => {
    await save('reuse/old.ipynb', 'first notebook 1');
    await archived('reuse/old.ipynb', 1);
    await save('reuse/old.ipynb', 'first notebook 2');
    await archived('reuse/old.ipynb', 2);
    await rename('reuse/old.ipynb', 'reuse/new.ipynb');
    await archived('reuse/new.ipynb', 1);
    // Another notebook takes the old name, and is saved twice.
    await save('reuse/old.ipynb', 'second notebook 1');
    await save('reuse/old.ipynb', 'second notebook 2');
    await save('reuse/new.ipynb', 'first notebook 3');

    const renamed = await settled('reuse/new.ipynb', 4);
    expect(summary(renamed.workspace.versions)).toEqual([
      ['reuse/new.ipynb', null],
      ['reuse/new.ipynb', 'reuse/old.ipynb'],
      ['reuse/old.ipynb', null],
      ['reuse/old.ipynb', null]
    ]);
    const texts = [];
    for (const version of renamed.workspace.versions) texts.push(await text(version));
    expect(texts).toEqual([
      'first notebook 3',
      'first notebook 2',
      'first notebook 2',
      'first notebook 1'
    ]);

    // The old name's listing holds all of its key's versions, and follows no rename: the second
    // notebook's own two, then the first notebook's two from before the rename.
    const old = await settled('reuse/old.ipynb', 4);
    expect(old.workspace.versions.every(version => version.path === 'reuse/old.ipynb')).toBe(true);
    expect(old.workspace.versions.some(version => version.renamed_from !== undefined)).toBe(false);
    expect(old.workspace.versions[0].is_latest).toBe(true);
    expect(old.workspace.deleted).toBeNull();
  });
});
