/**
 * The file-system watcher on real temporary folders, with the real @parcel/watcher (inotify on
 * Linux) and a sink that records what it is told. Failures of inotify itself (the watch limit,
 * a dead subscription) are injected: the limits are per user and shared with whatever else
 * runs on the machine, so they are not lowered here.
 */
import type * as parcelWatcher from '@parcel/watcher';
import {
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeFileSync
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createLogger } from '../../src/gateway/logger';
import type { ChangeSource, IChangeSink } from '../../src/archive/sources/changes';
import { FileSystemWatcher, probeInotify } from '../../src/archive/sources/watcher';

jest.setTimeout(30_000);

type Call =
  | { kind: 'changed' | 'removed'; path: string; source: ChangeSource }
  | { kind: 'renamed'; path: string; to: string; source: ChangeSource }
  | { kind: 'rescan'; reason: string; source: ChangeSource };

class RecordingSink implements IChangeSink {
  readonly calls: Call[] = [];
  /** What the sink knows as files (see IChangeSink.isKnownFile); nothing unless a test says. */
  isKnownFile?: (path: string) => boolean;
  changed(path: string, source: ChangeSource): void {
    this.calls.push({ kind: 'changed', path, source });
  }
  removed(path: string, source: ChangeSource): void {
    this.calls.push({ kind: 'removed', path, source });
  }
  renamed(from: string, to: string, source: ChangeSource): void {
    this.calls.push({ kind: 'renamed', path: from, to, source });
  }
  rescan(reason: string, source: ChangeSource): void {
    this.calls.push({ kind: 'rescan', reason, source });
  }
  has(kind: 'changed' | 'removed', path: string): boolean {
    return this.calls.some(call => call.kind === kind && 'path' in call && call.path === path);
  }
  paths(kind: 'changed' | 'removed'): string[] {
    return this.calls.flatMap(call => (call.kind === kind ? [call.path] : []));
  }
  rescans(): string[] {
    return this.calls.flatMap(call => (call.kind === 'rescan' ? [call.reason] : []));
  }
}

/** What the current test's sink was told, for failure messages. */
let sinkCalls: () => unknown = () => [];

/** Poll until `condition` holds; fail after `timeoutMs`. */
async function until(condition: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) {
      throw new Error(`not in time: ${what}; the sink was told ${JSON.stringify(sinkCalls())}`);
    }
    await sleep(20);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms));
}

/** The message @parcel/watcher 2.6 rejects `subscribe` with when the watch limit is reached. */
const WATCH_LIMIT_MESSAGE = (dir: string) =>
  `inotify_add_watch on '${dir}' failed: No space left on device`;

describe('FileSystemWatcher', () => {
  let root: string;
  let sink: RecordingSink;
  let logLines: string[];
  let watcher: FileSystemWatcher | undefined;

  const log = () =>
    createLogger({
      level: 'debug',
      destination: new Writable({
        write(chunk: Buffer, _encoding, callback) {
          logLines.push(chunk.toString('utf8'));
          callback();
        }
      })
    });

  const startWatcher = async (
    options: Partial<FileSystemWatcher.IOptions> = {}
  ): Promise<FileSystemWatcher> => {
    watcher = new FileSystemWatcher({
      rootDir: root,
      enabled: true,
      sink,
      log: log(),
      detect: () => Promise.resolve([]),
      backoff: { baseMs: 50, capMs: 200 },
      ...options
    });
    await watcher.start();
    return watcher;
  };

  /** Wait until a write to a fresh file is reported: everything before it has been too. */
  const sentinel = async (name = `sentinel-${Date.now()}.ipynb`) => {
    writeFileSync(join(root, name), '{}');
    await until(() => sink.has('changed', name), `the sentinel ${name}`);
  };

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'watcher-'));
    sink = new RecordingSink();
    sinkCalls = () => sink.calls.slice(-20);
    logLines = [];
  });

  afterEach(async () => {
    await watcher?.close();
    watcher = undefined;
    rmSync(root, { recursive: true, force: true });
  });

  it('reports a notebook created, updated and deleted in the root', async () => {
    const started = await startWatcher();
    expect(started.status()).toMatchObject({ mode: 'inotify', reason: null, seen: 0 });

    writeFileSync(join(root, 'x.ipynb'), '{}');
    await until(() => sink.has('changed', 'x.ipynb'), 'create');
    const afterCreate = sink.paths('changed').length;

    writeFileSync(join(root, 'x.ipynb'), '{"cells": []}');
    await until(() => sink.paths('changed').length > afterCreate, 'update');

    unlinkSync(join(root, 'x.ipynb'));
    await until(() => sink.has('removed', 'x.ipynb'), 'delete');

    expect(sink.calls.every(call => call.source === 'watcher')).toBe(true);
    expect(started.status().seen).toBeGreaterThanOrEqual(3);
  });

  it('lets the sink reach a notebook in folders made after start (mkdir -p), and watches them', async () => {
    await startWatcher();
    mkdirSync(join(root, 'a', 'b'), { recursive: true });
    writeFileSync(join(root, 'a', 'b', 'x.ipynb'), '{}');

    // One create of the top folder, or the file itself: either lets the sink find it.
    const reaches = (path: string) =>
      path === 'a/b/x.ipynb' || 'a/b/x.ipynb'.startsWith(`${path}/`);
    await until(() => sink.paths('changed').some(reaches), 'a path leading to a/b/x.ipynb');

    // When a/b was made before @parcel/watcher watched a, it is never watched: the root is
    // watched afresh, and a rescan covers what changed in between. Otherwise a/b is reported.
    await until(
      () =>
        sink.rescans().some(reason => reason.includes('watched afresh')) ||
        sink.has('changed', 'a/b'),
      'a/b watched'
    );
    const before = sink.calls.length;
    writeFileSync(join(root, 'a', 'b', 'x.ipynb'), '{"cells": []}');
    await until(
      () =>
        sink.calls
          .slice(before)
          .some(call => call.kind === 'changed' && call.path === 'a/b/x.ipynb'),
      'a later write in a/b'
    );
  });

  it('reports a renamed notebook as removed under its old name and changed under its new one', async () => {
    writeFileSync(join(root, 'old.ipynb'), '{}');
    await startWatcher();
    renameSync(join(root, 'old.ipynb'), join(root, 'new.ipynb'));
    await until(
      () => sink.has('removed', 'old.ipynb') && sink.has('changed', 'new.ipynb'),
      'removed(old) and changed(new)'
    );
  });

  it('watches the subfolders of a folder moved in from outside', async () => {
    const outside = mkdtempSync(join(tmpdir(), 'watcher-outside-'));
    try {
      mkdirSync(join(outside, 'tree', 'sub', 'deeper'), { recursive: true });
      writeFileSync(join(outside, 'tree', 'sub', 'deeper', 'n.ipynb'), '{}');
      await startWatcher();
      renameSync(join(outside, 'tree'), join(root, 'tree'));
      await until(() => sink.has('changed', 'tree'), 'changed(tree)');
      await until(
        () => sink.rescans().some(reason => reason.includes('watched afresh')),
        'watching afresh'
      );
      expect(watcher!.status()).toMatchObject({ mode: 'inotify', reason: null });
      writeFileSync(join(root, 'tree', 'sub', 'deeper', 'n.ipynb'), '{"cells": []}');
      await until(() => sink.has('changed', 'tree/sub/deeper/n.ipynb'), 'the nested write');
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it('checks a folder moved in where a known file was, once its removal was reported', async () => {
    const outside = mkdtempSync(join(tmpdir(), 'watcher-outside-'));
    try {
      mkdirSync(join(outside, 'tree', 'sub', 'deeper'), { recursive: true });
      writeFileSync(join(outside, 'tree', 'sub', 'deeper', 'n.ipynb'), '{}');
      writeFileSync(join(root, 'tree'), '{}');
      // As the intake does: a known file until its removal is reported.
      sink.isKnownFile = path => path === 'tree' && !sink.has('removed', 'tree');
      await startWatcher();
      unlinkSync(join(root, 'tree'));
      await until(() => sink.has('removed', 'tree'), 'removed(tree)');
      renameSync(join(outside, 'tree'), join(root, 'tree'));
      await until(
        () => sink.rescans().some(reason => reason.includes('watched afresh')),
        'watching afresh'
      );
      writeFileSync(join(root, 'tree', 'sub', 'deeper', 'n.ipynb'), '{"cells": []}');
      await until(() => sink.has('changed', 'tree/sub/deeper/n.ipynb'), 'the nested write');
    } finally {
      rmSync(outside, { recursive: true, force: true });
    }
  });

  it('reports a renamed folder, and writes below it under the new path afterwards', async () => {
    mkdirSync(join(root, 'p', 'sub'), { recursive: true });
    writeFileSync(join(root, 'p', 'sub', 'f.ipynb'), '{}');
    await startWatcher();
    renameSync(join(root, 'p'), join(root, 'q'));
    await until(
      () => sink.has('removed', 'p') && sink.has('changed', 'q'),
      'removed(p), changed(q)'
    );

    // Without watching afresh, this write would be reported as p/sub/f.ipynb (a stale path).
    await until(
      () => sink.rescans().some(reason => reason.includes('watched afresh')),
      'watching afresh after the rename'
    );
    writeFileSync(join(root, 'q', 'sub', 'f.ipynb'), '{"cells": []}');
    await until(() => sink.has('changed', 'q/sub/f.ipynb'), 'the write under the new path');
  });

  it('does not report anything under .git, node_modules or .ipynb_checkpoints', async () => {
    mkdirSync(join(root, '.git', 'objects'), { recursive: true });
    mkdirSync(join(root, 'project', 'node_modules', 'pkg'), { recursive: true });
    await startWatcher();

    writeFileSync(join(root, '.git', 'objects', 'x.ipynb'), '{}');
    writeFileSync(join(root, 'project', 'node_modules', 'pkg', 'y.ipynb'), '{}');
    mkdirSync(join(root, '.ipynb_checkpoints'));
    writeFileSync(join(root, '.ipynb_checkpoints', 'n-checkpoint.ipynb'), '{}');
    mkdirSync(join(root, 'node_modules', 'other'), { recursive: true });
    writeFileSync(join(root, 'node_modules', 'other', 'z.ipynb'), '{}');
    mkdirSync(join(root, 'project', '__pycache__'));
    writeFileSync(join(root, 'project', '__pycache__', 'm.pyc'), '');
    await sentinel();

    const reported = [...sink.paths('changed'), ...sink.paths('removed')];
    expect(
      reported.filter(path =>
        path
          .split('/')
          .some(part => part.startsWith('.') || part === 'node_modules' || part === '__pycache__')
      )
    ).toEqual([]);
  });

  it('falls back to polling when subscribing hits the watch limit, naming the limit', async () => {
    let calls = 0;
    const subscribe: typeof parcelWatcher.subscribe = dir => {
      calls++;
      return Promise.reject(new Error(WATCH_LIMIT_MESSAGE(join(dir, 'deep', 'folder'))));
    };
    const started = await startWatcher({ subscribe });

    const status = started.status();
    expect(status.mode).toBe('polling');
    const limit = readFileSync('/proc/sys/fs/inotify/max_user_watches', 'utf8').trim();
    expect(status.reason).toContain(`fs.inotify.max_user_watches is ${limit}`);
    expect(status.reason).toContain('No space left on device');
    expect(status.reason).toContain('sysctl -w fs.inotify.max_user_watches=');
    expect(status.reason).toContain('periodic scan');
    // No retry: each attempt would take every free watch of the user for a moment.
    await sleep(400);
    expect(calls).toBe(1);
    expect(logLines.some(line => line.includes('inotify watch limit'))).toBe(true);
  });

  it('polls without subscribing when the root is on NFS', async () => {
    let calls = 0;
    const subscribe: typeof parcelWatcher.subscribe = () => {
      calls++;
      return Promise.reject(new Error('must not subscribe'));
    };
    const reason = `the root ${root} is on an NFS mount (mounted at /srv, type nfs4): inotify does not see writes by other clients`;
    const started = await startWatcher({
      subscribe,
      detect: () => Promise.resolve([{ path: '', reason }])
    });
    expect(started.status()).toMatchObject({ mode: 'polling', blindSpots: [{ path: '', reason }] });
    expect(started.status().reason).toContain('inotify does not see writes by other clients');
    expect(calls).toBe(0);
  });

  it('still watches a root with blind spots below it, and reports them', async () => {
    const spot = {
      path: 'shared',
      reason: '/shared is an NFS mount: inotify does not see writes by other clients'
    };
    const started = await startWatcher({ detect: () => Promise.resolve([spot]) });
    expect(started.status()).toMatchObject({ mode: 'inotify', blindSpots: [spot] });
    await sentinel();
  });

  it('is off, and subscribes to nothing, when disabled', async () => {
    let calls = 0;
    const subscribe: typeof parcelWatcher.subscribe = () => {
      calls++;
      return Promise.reject(new Error('must not subscribe'));
    };
    const started = await startWatcher({ enabled: false, subscribe });
    expect(started.status().mode).toBe('off');
    expect(started.status().reason).toContain('archive_watch');
    writeFileSync(join(root, 'x.ipynb'), '{}');
    await sleep(300);
    expect(calls).toBe(0);
    expect(sink.calls).toEqual([]);
  });

  it('reports nothing after close()', async () => {
    const started = await startWatcher();
    await sentinel();
    await started.close();
    const before = sink.calls.length;
    writeFileSync(join(root, 'after.ipynb'), '{}');
    mkdirSync(join(root, 'later'));
    await sleep(700);
    expect(sink.calls.length).toBe(before);
    expect(started.status().mode).toBe('off');
  });

  it('rescans and subscribes again when the subscription reports an error', async () => {
    const callbacks: parcelWatcher.SubscribeCallback[] = [];
    let unsubscribed = 0;
    const subscribe: typeof parcelWatcher.subscribe = (_dir, callback) => {
      callbacks.push(callback);
      return Promise.resolve({
        unsubscribe: () => {
          unsubscribed++;
          return Promise.resolve();
        }
      });
    };
    const started = await startWatcher({ subscribe });
    expect(started.status().mode).toBe('inotify');

    void callbacks[0](new Error('Error reading from inotify: Input/output error'), []);
    expect(sink.rescans()).toEqual([
      'the file-system watcher failed: Error reading from inotify: Input/output error'
    ]);
    expect(started.status().mode).toBe('polling');
    await until(
      () => callbacks.length === 2 && started.status().mode === 'inotify',
      'resubscribed'
    );
    expect(unsubscribed).toBe(1);
    // Changes made while nothing watched were not seen: a second rescan.
    await until(() => sink.rescans().length === 2, 'the rescan after resubscribing');
    expect(sink.rescans()[1]).toContain('watching resumed');

    // A late error from the dropped subscription changes nothing.
    void callbacks[0](new Error('late'), []);
    expect(sink.rescans()).toHaveLength(2);

    // Events of the new subscription arrive as API paths; paths outside the root are dropped.
    void callbacks[1](null, [
      { path: join(root, 'n.ipynb'), type: 'create' },
      { path: join(root, 'dir', 'm.ipynb'), type: 'update' },
      { path: join(root, 'gone.ipynb'), type: 'delete' },
      { path: join(root, '..', 'elsewhere.ipynb'), type: 'create' },
      { path: join(root, '.git', 'HEAD'), type: 'update' }
    ]);
    expect(sink.calls.slice(2)).toEqual([
      { kind: 'changed', path: 'n.ipynb', source: 'watcher' },
      { kind: 'changed', path: 'dir/m.ipynb', source: 'watcher' },
      { kind: 'removed', path: 'gone.ipynb', source: 'watcher' }
    ]);
  });

  it('rescans and watches again when the root is removed and comes back', async () => {
    await startWatcher();
    rmSync(root, { recursive: true });
    await until(
      () => sink.rescans().some(reason => reason.includes('was removed or moved away')),
      'the rescan after the root went'
    );
    expect(watcher!.status().mode).toBe('polling');
    mkdirSync(root);
    await until(() => watcher!.status().mode === 'inotify', 'watching again');
    writeFileSync(join(root, 'back.ipynb'), '{}');
    await until(() => sink.has('changed', 'back.ipynb'), 'a write in the new root');
  });

  it('rescans after a burst of changes (an overflow would be silent)', async () => {
    await startWatcher();
    for (let i = 0; i < 1500; i++) writeFileSync(join(root, `f${i}.txt`), 'x');
    await until(
      () => sink.rescans().some(reason => reason.includes('burst')),
      'the rescan after the burst',
      10_000
    );
  });

  it('finds the watch of a new empty folder (no false alarm about the limit)', async () => {
    const started = await startWatcher();
    mkdirSync(join(root, 'solo'));
    await until(() => sink.has('changed', 'solo'), 'the new folder');
    await sleep(800);
    expect(started.status()).toMatchObject({ mode: 'inotify', reason: null });
    expect(sink.rescans()).toEqual([]);
    writeFileSync(join(root, 'solo', 'x.ipynb'), '{}');
    await until(() => sink.has('changed', 'solo/x.ipynb'), 'a write in the new folder');
  });

  it('polls, with the reason, while the root does not exist', async () => {
    rmSync(root, { recursive: true });
    const started = await startWatcher();
    expect(started.status().mode).toBe('polling');
    expect(started.status().reason).toContain('cannot be read');
    mkdirSync(root);
    await until(() => started.status().mode === 'inotify', 'watching once the root exists');
  });

  it('can use inotify here (the child-process check)', async () => {
    if (process.platform !== 'linux') return;
    expect(await probeInotify(root)).toBeNull();
    expect(await probeInotify(join(root, 'missing'))).toMatchObject({ code: 'ENOENT' });
  });
});
