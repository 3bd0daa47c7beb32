/**
 * moveToTrash: the freedesktop.org layout that send2trash (Jupyter's `delete_to_trash`) makes,
 * entry for entry, also when the trash is missing or partly taken.
 */
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';
import { moveToTrash } from '../../src/contents/trash';

let sandbox: string;
let dataHome: string;
let trash: string;
let env: NodeJS.ProcessEnv;

beforeEach(async () => {
  sandbox = await fs.realpath(await fs.mkdtemp(path.join(os.tmpdir(), 'trash-spec-')));
  dataHome = path.join(sandbox, 'data');
  trash = path.join(dataHome, 'Trash');
  await fs.mkdir(dataHome);
  await fs.mkdir(path.join(sandbox, 'root'));
  env = { XDG_DATA_HOME: dataHome, HOME: sandbox };
});

afterEach(async () => {
  await fs.rm(sandbox, { recursive: true, force: true });
});

async function item(name: string, content: string): Promise<string> {
  const osPath = path.join(sandbox, 'root', name);
  await fs.writeFile(osPath, content);
  return osPath;
}

async function trashEntries(): Promise<{ files: string[]; info: string[] }> {
  return {
    files: (await fs.readdir(path.join(trash, 'files'))).sort(),
    info: (await fs.readdir(path.join(trash, 'info'))).sort()
  };
}

describe('#moveToTrash()', () => {
  it('creates a missing trash, private, with the item and its info file', async () => {
    const osPath = await item('a.txt', 'one');
    await moveToTrash(osPath, env);
    expect(await trashEntries()).toEqual({ files: ['a.txt'], info: ['a.txt.trashinfo'] });
    expect(await fs.readFile(path.join(trash, 'files', 'a.txt'), 'utf8')).toBe('one');
    const info = await fs.readFile(path.join(trash, 'info', 'a.txt.trashinfo'), 'utf8');
    expect(info).toMatch(
      new RegExp(
        `^\\[Trash Info\\]\\nPath=${osPath}\\nDeletionDate=\\d{4}-\\d\\d-\\d\\dT[\\d:]{8}\\n$`
      )
    );
    for (const dir of ['files', 'info']) {
      expect((await fs.stat(path.join(trash, dir))).mode & 0o777).toBe(0o700);
    }
    await expect(fs.access(osPath)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('names items of the same name `name 1.ext`, `name 2.ext`, as send2trash does', async () => {
    for (const content of ['one', 'two', 'three']) {
      await moveToTrash(await item('a.txt', content), env);
    }
    expect(await trashEntries()).toEqual({
      files: ['a 1.txt', 'a 2.txt', 'a.txt'],
      info: ['a 1.txt.trashinfo', 'a 2.txt.trashinfo', 'a.txt.trashinfo']
    });
    expect(await fs.readFile(path.join(trash, 'files', 'a 2.txt'), 'utf8')).toBe('three');
  });

  it('skips a name taken in files/ alone, keeping what is there', async () => {
    await fs.mkdir(path.join(trash, 'files'), { recursive: true });
    await fs.mkdir(path.join(trash, 'info'), { recursive: true });
    await fs.writeFile(path.join(trash, 'files', 'a.txt'), 'orphan');
    await moveToTrash(await item('a.txt', 'new'), env);
    expect(await trashEntries()).toEqual({
      files: ['a 1.txt', 'a.txt'],
      info: ['a 1.txt.trashinfo']
    });
    expect(await fs.readFile(path.join(trash, 'files', 'a.txt'), 'utf8')).toBe('orphan');
    expect(await fs.readFile(path.join(trash, 'files', 'a 1.txt'), 'utf8')).toBe('new');
  });

  it('makes files/ again when only it was removed', async () => {
    await moveToTrash(await item('a.txt', 'one'), env);
    await fs.rm(path.join(trash, 'files'), { recursive: true });
    await moveToTrash(await item('b.txt', 'two'), env);
    expect(await fs.readdir(path.join(trash, 'files'))).toEqual(['b.txt']);
    expect(await fs.readFile(path.join(trash, 'files', 'b.txt'), 'utf8')).toBe('two');
  });

  it('fails for a missing item and leaves no info file behind', async () => {
    await moveToTrash(await item('a.txt', 'one'), env);
    await expect(moveToTrash(path.join(sandbox, 'root', 'gone.txt'), env)).rejects.toMatchObject({
      code: 'ENOENT'
    });
    expect(await trashEntries()).toEqual({ files: ['a.txt'], info: ['a.txt.trashinfo'] });
  });
});
