/**
 * Recently deleted notebooks, their restore and the workspace's usage, against the real gateway
 * (`jupyter-store lab`) archiving to MinIO: notebooks deleted and renamed through the contents
 * API, `GET api/store/deleted` and `POST api/store/restore` checked against what a raw S3
 * listing of the bucket holds, and the CLI's `deleted` and `restore`.
 */
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import { GetObjectCommand, type DeleteMarkerEntry, type ObjectVersion } from '@aws-sdk/client-s3';
import {
  DeletedListingSchema,
  RestoreResponseSchema,
  StoreInfoSchema,
  type DeletedListing
} from '@jupyter-store/contract';
import { useArchivingLab } from '../support/archivingLab';
import { listAllVersions } from '../support/lab';
import {
  callGateway,
  makeDirectory,
  runCli,
  saveNotebook,
  terminalEnv,
  waitUntil
} from '../client/storeCli';

jest.setTimeout(240_000);

const BUCKET = 'deleted-bucket';
const PREFIX = 'workspace';

/** One entry of a raw ListObjectVersions listing. */
interface IRawEntry {
  key: string;
  versionId: string;
  size: number;
  isLatest: boolean;
  marker: boolean;
}

describe('recently deleted notebooks (gateway + MinIO)', () => {
  const lab = useArchivingLab({ bucket: BUCKET });

  /** Every version and delete marker below the workspace prefix, read with the SDK itself. */
  async function rawListing(): Promise<IRawEntry[]> {
    const { versions, deleteMarkers } = await listAllVersions(lab.s3, BUCKET, `${PREFIX}/`);
    const entry = (listed: ObjectVersion | DeleteMarkerEntry, size: number, marker: boolean) => ({
      key: listed.Key!,
      versionId: listed.VersionId!,
      size,
      isLatest: listed.IsLatest ?? false,
      marker
    });
    return [
      ...versions.map(version => entry(version, version.Size ?? 0, false)),
      ...deleteMarkers.map(marker => entry(marker, 0, true))
    ];
  }

  /** The raw entries of one notebook's key, newest first as S3 lists each kind. */
  async function entriesOf(apiPath: string): Promise<IRawEntry[]> {
    return (await rawListing()).filter(entry => entry.key === `${PREFIX}/${apiPath}`);
  }

  /** The bytes of one archived version. */
  async function versionBytes(apiPath: string, versionId: string): Promise<Buffer> {
    const object = await lab.s3.send(
      new GetObjectCommand({ Bucket: BUCKET, Key: `${PREFIX}/${apiPath}`, VersionId: versionId })
    );
    return Buffer.from(await object.Body!.transformToByteArray());
  }

  /** Wait until the archive holds `count` versions of `apiPath` (delete markers not counted). */
  async function archived(apiPath: string, count: number): Promise<IRawEntry[]> {
    let versions: IRawEntry[] = [];
    await waitUntil(async () => {
      versions = (await entriesOf(apiPath)).filter(entry => !entry.marker);
      return versions.length >= count;
    }, 60_000);
    expect(versions).toHaveLength(count);
    return versions;
  }

  /** Wait until the newest entry of `apiPath`'s key is a delete marker; answer it. */
  async function markerOf(apiPath: string): Promise<IRawEntry> {
    let marker: IRawEntry | undefined;
    await waitUntil(async () => {
      marker = (await entriesOf(apiPath)).find(entry => entry.isLatest && entry.marker);
      return marker !== undefined;
    }, 60_000);
    expect(marker).toBeDefined();
    return marker!;
  }

  async function remove(apiPath: string): Promise<void> {
    expect((await callGateway(lab.gateway, 'DELETE', `api/contents/${apiPath}`)).status).toBe(204);
  }

  async function deleted(query = ''): Promise<DeletedListing> {
    const answer = await callGateway(lab.gateway, 'GET', `api/store/deleted${query}`);
    expect(answer.status).toBe(200);
    return DeletedListingSchema.parse(answer.body);
  }

  async function restore(body: unknown): Promise<{ status: number; body: unknown }> {
    return callGateway(lab.gateway, 'POST', 'api/store/restore', body);
  }

  /** Bytes of a file in the served directory. */
  const onDisk = (apiPath: string) => fs.readFile(path.join(lab.gateway.rootDir, apiPath));

  // Saved, deleted and renamed once for all the tests below.
  let twice: IRawEntry[];
  let twiceMarker: IRawEntry;
  let otherMarker: IRawEntry;

  beforeAll(async () => {
    const { gateway } = lab;
    for (const directory of ['work', 'other', 'gone']) await makeDirectory(gateway, directory);
    await saveNotebook(gateway, 'work/twice.ipynb', 'first');
    await archived('work/twice.ipynb', 1);
    await saveNotebook(gateway, 'work/twice.ipynb', 'second, a longer text');
    twice = await archived('work/twice.ipynb', 2);
    await saveNotebook(gateway, 'other/b.ipynb', 'b');
    await saveNotebook(gateway, 'work/renamed.ipynb', 'renamed, not deleted');
    await saveNotebook(gateway, 'gone/lost.ipynb', 'its directory goes too');
    await archived('other/b.ipynb', 1);
    await archived('work/renamed.ipynb', 1);
    await archived('gone/lost.ipynb', 1);

    await remove('work/twice.ipynb');
    twiceMarker = await markerOf('work/twice.ipynb');
    await remove('other/b.ipynb');
    otherMarker = await markerOf('other/b.ipynb');
    const renamed = await callGateway(gateway, 'PATCH', 'api/contents/work/renamed.ipynb', {
      path: 'work/new-name.ipynb'
    });
    expect(renamed.status).toBe(200);
    await markerOf('work/renamed.ipynb');
    await archived('work/new-name.ipynb', 1);
    await remove('gone/lost.ipynb');
    await markerOf('gone/lost.ipynb');
    expect((await callGateway(gateway, 'DELETE', 'api/contents/gone')).status).toBe(204);
  });

  it('lists a deleted notebook with its delete marker and its last version, newest first', async () => {
    const listing = await deleted();
    const paths = listing.deleted.map(entry => entry.path);
    expect(paths).toEqual(['gone/lost.ipynb', 'other/b.ipynb', 'work/twice.ipynb']);
    expect(listing.left_out).toBe(0);
    const entry = listing.deleted.find(each => each.path === 'work/twice.ipynb')!;
    expect(entry.delete_marker_id).toBe(twiceMarker.versionId);
    expect(entry.last_version.object_version_id).toBe(twice[0].versionId);
    expect(entry.last_version.size).toBe(twice[0].size);
    expect(Date.parse(entry.deleted_at)).toBeGreaterThanOrEqual(
      Date.parse(entry.last_version.last_modified)
    );
    const times = listing.deleted.map(each => Date.parse(each.deleted_at));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
  });

  it('does not list the old path of a renamed notebook', async () => {
    const listing = await deleted();
    expect(listing.deleted.map(entry => entry.path)).not.toContain('work/renamed.ipynb');
    // Its key does end with a delete marker: only the rename's metadata tells it apart.
    expect((await entriesOf('work/renamed.ipynb')).find(e => e.isLatest)?.marker).toBe(true);
  });

  it('filters by a directory prefix, slash-aware, and pages with limit', async () => {
    const other = await deleted('?prefix=other');
    expect(other.deleted.map(entry => entry.path)).toEqual(['other/b.ipynb']);
    expect(other.deleted[0].delete_marker_id).toBe(otherMarker.versionId);
    expect((await deleted('?prefix=oth')).deleted).toEqual([]);
    expect((await deleted('?prefix=other/')).deleted).toHaveLength(1);
    const first = await deleted('?limit=1');
    expect(first.deleted.map(entry => entry.path)).toEqual(['gone/lost.ipynb']);
    expect(first.left_out).toBe(2);
  });

  it('refuses a bad limit or prefix with 400', async () => {
    for (const query of [
      '?limit=0',
      '?limit=1001',
      '?limit=ten',
      '?prefix=/abs',
      '?prefix=a/../b'
    ]) {
      const answer = await callGateway(lab.gateway, 'GET', `api/store/deleted${query}`);
      expect(answer.status).toBe(400);
      expect(answer.body).toEqual({ message: expect.any(String), reason: expect.any(String) });
    }
  });

  it('restores the last version at its path, byte for byte, archived as a new version', async () => {
    const answer = await restore({ path: 'work/twice.ipynb' });
    expect(answer.status).toBe(200);
    const restored = RestoreResponseSchema.parse(answer.body);
    expect(restored.path).toBe('work/twice.ipynb');
    expect(restored.restored_from).toEqual({
      path: 'work/twice.ipynb',
      object_key: `${PREFIX}/work/twice.ipynb`,
      object_version_id: twice[0].versionId
    });
    const expected = await versionBytes('work/twice.ipynb', twice[0].versionId);
    expect((await onDisk('work/twice.ipynb')).equals(expected)).toBe(true);
    const versions = await archived('work/twice.ipynb', 3);
    expect(versions[0].isLatest).toBe(true);
    expect(versions[0].versionId).not.toBe(twice[0].versionId);
    expect((await versionBytes('work/twice.ipynb', versions[0].versionId)).equals(expected)).toBe(
      true
    );
    expect((await deleted()).deleted.map(entry => entry.path)).not.toContain('work/twice.ipynb');
  });

  it('restores a named version beside the path when it exists again (the CLI)', async () => {
    const oldest = twice[1].versionId;
    const cli = await runCli(
      ['restore', 'work/twice.ipynb', '--version', oldest],
      terminalEnv(lab.gateway)
    );
    expect(cli.stderr).toBe('');
    expect(cli.status).toBe(0);
    expect(cli.stdout).toContain(
      `Restored work/twice.ipynb (version ${oldest}) to work/twice-1.ipynb`
    );
    const expected = await versionBytes('work/twice.ipynb', oldest);
    expect((await onDisk('work/twice-1.ipynb')).equals(expected)).toBe(true);
    await archived('work/twice-1.ipynb', 1);
  });

  it('lists with the CLI', async () => {
    const cli = await runCli(['deleted', 'other'], terminalEnv(lab.gateway));
    expect(cli.status).toBe(0);
    expect(cli.stdout).toContain('other/b.ipynb  deleted ');
    expect(cli.stdout).not.toContain('gone/lost.ipynb');
    const json = await runCli(['deleted', '--json'], terminalEnv(lab.gateway));
    expect(DeletedListingSchema.parse(JSON.parse(json.stdout))).toEqual(await deleted());
  });

  it('answers 409 when the directory is gone, 404 for a path without versions', async () => {
    const gone = await restore({ path: 'gone/lost.ipynb' });
    expect(gone.status).toBe(409);
    expect(gone.body).toMatchObject({ reason: 'missing parent directory' });
    const unknown = await restore({ path: 'work/never-saved.ipynb' });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toMatchObject({ reason: 'no versions' });
    const otherVersion = await restore({
      path: 'other/b.ipynb',
      object_version_id: twice[0].versionId
    });
    expect(otherVersion.status).toBe(404);
  });

  it('refuses bad bodies and a delete marker with 400', async () => {
    const bodies: unknown[] = [
      [],
      'work/twice.ipynb',
      {},
      { path: '' },
      { path: 7 },
      { path: '/abs.ipynb' },
      { path: 'a/../b.ipynb' },
      { path: 'other/b.ipynb', object_version_id: '' }
    ];
    for (const body of bodies) {
      const answer = await restore(body);
      expect(answer.status).toBe(400);
      expect(answer.body).toEqual({ message: expect.any(String), reason: expect.any(String) });
    }
    const marker = await restore({
      path: 'other/b.ipynb',
      object_version_id: otherMarker.versionId
    });
    expect(marker.status).toBe(400);
    expect(marker.body).toMatchObject({ reason: 'delete marker' });
  });

  it('reports the usage of the workspace as a raw listing counts it, soon after a save', async () => {
    // The figure follows the archive: measured again once the save is archived (at most once
    // every 5 s), not a minute later.
    await saveNotebook(lab.gateway, 'work/usage.ipynb', 'counted');
    await archived('work/usage.ipynb', 1);
    const raw = await rawListing();
    const versions = raw.filter(entry => !entry.marker);
    const current = versions.filter(entry => entry.isLatest);
    let usage: ReturnType<typeof StoreInfoSchema.parse>['usage'];
    await waitUntil(async () => {
      const answer = await callGateway(lab.gateway, 'GET', 'api/store');
      usage = StoreInfoSchema.parse(answer.body).usage;
      return usage?.versions === versions.length;
    }, 10_000);
    expect(usage).toEqual({
      objects: current.length,
      versions: versions.length,
      bytes: versions.reduce((sum, entry) => sum + entry.size, 0),
      current_bytes: current.reduce((sum, entry) => sum + entry.size, 0),
      measured_at: expect.any(String)
    });
    expect(usage!.objects).toBeGreaterThanOrEqual(3);
    expect(usage!.versions).toBeGreaterThan(usage!.objects);
  });
});
