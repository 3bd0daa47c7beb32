/**
 * Named versions against the real gateway (`jupyter-store lab`) archiving to MinIO: `POST
 * {base}api/store/named/{path}` right after a save names what was saved (also when coalescing
 * holds the save back), or names the version given; names are replaced, read back in version listings (also on the versions of a path a
 * notebook had before a rename) and removed with `DELETE`; and the named copy keeps the bytes
 * when the archived version itself is deleted, which is what the copy is for.
 */
import { DeleteObjectCommand, GetObjectCommand } from '@aws-sdk/client-s3';
import {
  NamedVersionSchema,
  type NamedVersion,
  UnnamedVersionSchema,
  VersionListingSchema,
  type ObjectVersion,
  type VersionListing
} from '@jupyter-store/contract';
import { runCli, terminalEnv } from '../client/storeCli';
import { useArchivingLab, type IArchivingLab } from '../support/archivingLab';
import { saveMarkdownNotebook } from '../support/notebookSaves';

jest.setTimeout(180_000);

const BUCKET = 'named-bucket';

/** A status and its JSON body: a named version, or an error. */
interface IAnswer {
  readonly status: number;
  readonly body: Partial<NamedVersion> & { reason?: string; message?: string };
}

/** Calls of the store API and reads of the bucket, against `lab`'s gateway and MinIO. */
function namedVersionsApi(lab: IArchivingLab, bucket: string) {
  const auth = (): Record<string, string> => ({ Authorization: `token ${lab.gateway.token}` });

  /** Save a notebook with one markdown cell of `text` through the contents API. */
  async function save(path: string, text: string): Promise<void> {
    expect(await saveMarkdownNotebook(lab.gateway, path, text)).toBeLessThan(300);
  }

  /** `POST api/store/named/<path>` with `body`: the status and the JSON answer. */
  async function name(path: string, body: unknown): Promise<IAnswer> {
    const response = await fetch(lab.gateway.url(`api/store/named/${encodeURI(path)}`), {
      method: 'POST',
      headers: { ...auth(), 'Content-Type': 'application/json' },
      body: JSON.stringify(body)
    });
    return { status: response.status, body: (await response.json()) as IAnswer['body'] };
  }

  async function unname(path: string, versionId: string): Promise<IAnswer> {
    const response = await fetch(
      lab.gateway.url(
        `api/store/named/${encodeURI(path)}?object_version_id=${encodeURIComponent(versionId)}`
      ),
      { method: 'DELETE', headers: auth() }
    );
    return { status: response.status, body: (await response.json()) as IAnswer['body'] };
  }

  async function listing(path: string): Promise<VersionListing> {
    const response = await fetch(lab.gateway.url(`api/store/versions/${encodeURI(path)}`), {
      headers: auth()
    });
    expect(response.status).toBe(200);
    return VersionListingSchema.parse(await response.json());
  }

  /** The archived versions of `path`, once there are `count`. */
  async function versions(path: string, count: number): Promise<ObjectVersion[]> {
    const deadline = Date.now() + 60_000;
    let listed = (await listing(path)).workspace.versions;
    while (listed.length < count && Date.now() < deadline) {
      await new Promise(resolve => setTimeout(resolve, 200));
      listed = (await listing(path)).workspace.versions;
    }
    expect(listed).toHaveLength(count);
    return listed;
  }

  /** The markdown text of an object in the bucket, read with the SDK. */
  async function textOf(key: string, versionId?: string): Promise<string> {
    const object = await lab.s3.send(
      new GetObjectCommand({ Bucket: bucket, Key: key, VersionId: versionId })
    );
    const notebook = JSON.parse(await object.Body!.transformToString()) as {
      cells: { source: string | string[] }[];
    };
    const source = notebook.cells[0].source;
    return Array.isArray(source) ? source.join('') : source;
  }

  return { auth, save, name, unname, listing, versions, textOf };
}

describe('named versions, saves held back by coalescing (gateway + MinIO)', () => {
  const COALESCED = 'named-coalesced';
  // A save within the hour after the last archived one waits for the end of the hour, unless
  // someone asks for it: naming the newest version must ask for it.
  const lab = useArchivingLab({
    bucket: COALESCED,
    gateway: { args: ['--StoreSettings.archive_min_interval_seconds=3600'] }
  });
  const { save, name, versions, textOf } = namedVersionsApi(lab, COALESCED);

  it('names the save just made, not the version archived before it', async () => {
    await save('held.ipynb', 'archived at once');
    const [first] = await versions('held.ipynb', 1);
    await save('held.ipynb', 'held back');
    const answer = await name('held.ipynb', { name: 'what I just saved' });
    expect(answer.status).toBe(200);
    expect(answer.body.object_version_id).not.toBe(first.object_version_id);
    expect(await textOf(answer.body.label!.object_key)).toBe('held back');
    const [newest] = await versions('held.ipynb', 2);
    expect(newest.object_version_id).toBe(answer.body.object_version_id);
  });
});

describe('named versions (gateway + MinIO)', () => {
  const lab = useArchivingLab({ bucket: BUCKET });
  const { auth, save, name, unname, listing, versions, textOf } = namedVersionsApi(lab, BUCKET);

  it('names the version a save just made, without waiting on the client side', async () => {
    await save('first.ipynb', 'one');
    await versions('first.ipynb', 1);
    await save('first.ipynb', 'two');
    // Straight after the save: the server waits for it to be archived, then names it.
    const answer = await name('first.ipynb', { name: 'before refactor' });
    expect(answer.status).toBe(200);
    const named = NamedVersionSchema.parse(answer.body);
    const [newest] = await versions('first.ipynb', 2);
    expect(named).toMatchObject({
      path: 'first.ipynb',
      object_bucket: BUCKET,
      object_key: 'workspace/first.ipynb',
      object_version_id: newest.object_version_id,
      label: {
        name: 'before refactor',
        note: null,
        object_key: `named/workspace/first.ipynb/${newest.object_version_id}`
      }
    });
    expect(Date.parse(named.label.named_at)).not.toBeNaN();
    expect(await textOf(named.label.object_key)).toBe('two');
  });

  it('names the version given, replaces a name, and round-trips unicode names and notes', async () => {
    await save('second.ipynb', 'old');
    await versions('second.ipynb', 1);
    await save('second.ipynb', 'new');
    const [newest, oldest] = await versions('second.ipynb', 2);
    const first = await name('second.ipynb', {
      name: 'draft',
      object_version_id: oldest.object_version_id
    });
    expect(first.status).toBe(200);
    expect(first.body.object_version_id).toBe(oldest.object_version_id);
    expect(await textOf(first.body.label!.object_key)).toBe('old');

    const unicode = {
      name: '  Vor dem Umbau — 改稿 🎉  ',
      note: 'sent to reviewers\nzweite Zeile: ünïcødé %41',
      object_version_id: oldest.object_version_id
    };
    const renamed = await name('second.ipynb', unicode);
    expect(renamed.status).toBe(200);
    expect(renamed.body.label).toMatchObject({
      name: 'Vor dem Umbau — 改稿 🎉',
      note: unicode.note,
      object_key: first.body.label!.object_key
    });
    const [listedNewest, listedOldest] = (await listing('second.ipynb')).workspace.versions;
    expect(listedNewest.object_version_id).toBe(newest.object_version_id);
    expect(listedNewest.label).toBeUndefined();
    expect(listedOldest.label).toEqual(renamed.body.label);

    // The CLI prints the name and the note in the listing.
    const cli = await runCli(['versions', 'second.ipynb'], terminalEnv(lab.gateway));
    expect(cli.status).toBe(0);
    expect(cli.stdout).toContain(
      `    ${oldest.object_version_id}  ${oldest.last_modified}  ${oldest.size} bytes  ` +
        '"Vor dem Umbau — 改稿 🎉"\n      sent to reviewers\n      zweite Zeile: ünïcødé %41\n'
    );
  });

  it('refuses bad names, too long labels, unknown versions and notebooks without versions', async () => {
    await save('third.ipynb', 'x');
    const [version] = await versions('third.ipynb', 1);
    const id = version.object_version_id;
    for (const body of [
      {},
      { name: '   ' },
      { name: 'a\nb' },
      { name: 'x'.repeat(101) },
      { name: 'a', note: 'n'.repeat(501) }
    ]) {
      const refused = await name('third.ipynb', { ...body, object_version_id: id });
      expect(refused).toMatchObject({ status: 400, body: { reason: 'bad request' } });
    }
    // Within the character limits, but over the 2 KB of metadata once percent-encoded.
    const tooLong = await name('third.ipynb', { name: '名'.repeat(100), note: '€'.repeat(200) });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.reason).toBe('label too long');
    expect(tooLong.body.message).toMatch(/2048/);

    const unknown = await name('first.ipynb', { name: 'x', object_version_id: id });
    expect(unknown.status).toBe(404);
    const never = await name('never-saved.ipynb', { name: 'x' });
    expect(never).toMatchObject({ status: 404, body: { reason: 'no versions' } });
    // Nothing was named by the refusals.
    expect((await listing('third.ipynb')).workspace.versions[0].label).toBeUndefined();
  });

  it('shows names on the versions of the path a notebook had before a rename', async () => {
    await save('before.ipynb', 'before the rename');
    const [version] = await versions('before.ipynb', 1);
    const answer = await name('before.ipynb', { name: 'kept across renames' });
    expect(answer.body.object_version_id).toBe(version.object_version_id);
    const moved = await fetch(lab.gateway.url('api/contents/before.ipynb'), {
      method: 'PATCH',
      headers: { ...auth(), 'Content-Type': 'application/json' },
      body: JSON.stringify({ path: 'after.ipynb' })
    });
    expect(moved.status).toBe(200);
    const history = await versions('after.ipynb', 2);
    expect(history[0]).toMatchObject({ path: 'after.ipynb' });
    expect(history[0].label).toBeUndefined();
    expect(history[1]).toMatchObject({
      path: 'before.ipynb',
      object_version_id: version.object_version_id,
      label: { name: 'kept across renames' }
    });
  });

  it('removes a name, and a name the version does not have is 404 `not named`', async () => {
    await save('fourth.ipynb', 'x');
    const [version] = await versions('fourth.ipynb', 1);
    const id = version.object_version_id;
    expect((await name('fourth.ipynb', { name: 'to remove' })).status).toBe(200);
    const removed = await unname('fourth.ipynb', id);
    expect(removed.status).toBe(200);
    expect(UnnamedVersionSchema.parse(removed.body)).toEqual({
      path: 'fourth.ipynb',
      object_version_id: id,
      label_key: `named/workspace/fourth.ipynb/${id}`
    });
    expect((await listing('fourth.ipynb')).workspace.versions[0].label).toBeUndefined();
    expect(await unname('fourth.ipynb', id)).toMatchObject({
      status: 404,
      body: { reason: 'not named' }
    });
    const response = await fetch(lab.gateway.url('api/store/named/fourth.ipynb'), {
      method: 'DELETE',
      headers: auth()
    });
    expect(response.status).toBe(400);
  });

  it('keeps the named bytes when the archived version itself is deleted', async () => {
    await save('fifth.ipynb', 'worth keeping');
    const [version] = await versions('fifth.ipynb', 1);
    const answer = await name('fifth.ipynb', { name: 'keeper', note: 'survives' });
    expect(answer.status).toBe(200);
    const namedKey = answer.body.label!.object_key;
    expect(await textOf(namedKey)).toBe(
      await textOf('workspace/fifth.ipynb', version.object_version_id)
    );
    // What an expiring retention rule does to the archived version: remove it for good.
    await lab.s3.send(
      new DeleteObjectCommand({
        Bucket: BUCKET,
        Key: 'workspace/fifth.ipynb',
        VersionId: version.object_version_id
      })
    );
    await expect(textOf('workspace/fifth.ipynb', version.object_version_id)).rejects.toMatchObject({
      name: expect.stringMatching(/NoSuchVersion|NoSuchKey/)
    });
    expect(await textOf(namedKey)).toBe('worth keeping');
  });
});
