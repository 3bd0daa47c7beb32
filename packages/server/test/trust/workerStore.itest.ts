/**
 * The signature database in a worker thread (WorkerSignatureStore): the same answers, rows and
 * errors as the SQLite store it runs, read by Python's sqlite3 and nbformat, with crash and close
 * handled, and no SQLite in the calling thread.
 *
 * An integration test because the worker runs the built `lib/` (there is no JavaScript in `src/`
 * for a worker to load); the test command builds first.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import type { Worker } from 'node:worker_threads';
import { createNotary } from '../../src/app';
import {
  SignatureStoreBusyError,
  WorkerSignatureStore,
  signatureWorkerFile
} from '../../src/contents/trust';
import { REPO_ROOT, findVenvPython } from '../support/jupyterServer';

const LIB = path.join(REPO_ROOT, 'packages', 'server', 'lib');

let tmp: string;
let dbFile: string;
const stores: WorkerSignatureStore[] = [];

beforeAll(() => {
  if (!fs.existsSync(path.join(LIB, 'contents', 'trust', 'signatureWorker.js'))) {
    throw new Error(`${LIB} has no signature worker; run \`npm run build\` before these tests`);
  }
});

beforeEach(() => {
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'trust-worker-')));
  dbFile = path.join(tmp, 'data', 'nbsignatures.db');
});

afterEach(async () => {
  await Promise.all(stores.splice(0).map(store => store.close()));
  fs.rmSync(tmp, { recursive: true, force: true });
});

/** A store closed after the test, whatever happens in it. */
function workerStore(options: Partial<WorkerSignatureStore.IOptions> = {}): WorkerSignatureStore {
  const store = new WorkerSignatureStore({ dbFile, ...options });
  stores.push(store);
  return store;
}

/** A clock that advances one second per reading, from a fixed start. */
function steppingClock(start = Date.UTC(2024, 0, 2, 3, 4, 5, 600)): () => Date {
  let t = start;
  return () => new Date((t += 1000));
}

function exited(worker: Worker): Promise<number> {
  return new Promise(resolve => worker.once('exit', resolve));
}

/**
 * A transaction that keeps everyone else out of the database (`BEGIN EXCLUSIVE`, as a busy Python
 * can), on a connection of this thread, until `release`.
 */
function lockDatabase(): { release: () => void } {
  const db = new DatabaseSync(dbFile);
  db.exec('BEGIN EXCLUSIVE');
  return {
    release: () => {
      db.exec('ROLLBACK');
      db.close();
    }
  };
}

/** Until the call has reached the worker and is waiting for the locked database. */
function settle(ms = 200): Promise<void> {
  return new Promise(resolve => setTimeout(resolve, ms));
}

/** Run Python (the project venv's, with nbformat) on a script, JSON in and out. */
function python<T>(script: string, input: object): T {
  const result = spawnSync(findVenvPython(), ['-c', script], {
    input: JSON.stringify(input),
    encoding: 'utf8',
    env: {
      HOME: path.join(tmp, 'home'),
      JUPYTER_CONFIG_DIR: path.join(tmp, 'config'),
      JUPYTER_DATA_DIR: path.join(tmp, 'jupyter-data'),
      JUPYTER_RUNTIME_DIR: path.join(tmp, 'runtime'),
      PYTHONIOENCODING: 'utf-8'
    }
  });
  if (result.status !== 0) throw new Error(`python failed:\n${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

const PY_DB = String.raw`
import json, sqlite3, sys
args = json.load(sys.stdin)
db = sqlite3.connect(args["dbFile"])
out = {
    "integrity": db.execute("PRAGMA integrity_check").fetchall(),
    "columns": [c[1] for c in db.execute("PRAGMA table_info(nbsignatures)").fetchall()],
    "algosig": [c[2] for c in db.execute("PRAGMA index_info(algosig)").fetchall()],
    "rows": db.execute("SELECT algorithm, signature, path, last_seen FROM nbsignatures ORDER BY id").fetchall(),
}
if args.get("insert"):
    db.execute("INSERT INTO nbsignatures (algorithm, signature, last_seen) VALUES ('sha256', ?, '2024-01-01T00:00:00+00:00')",
               (args["insert"],))
    db.commit()
db.close()
print(json.dumps(out))
`;

const PY_CHECK = String.raw`
import json, sys
import nbformat
from nbformat.sign import NotebookNotary
args = json.load(sys.stdin)
notary = NotebookNotary(data_dir=args["dataDir"])
print(json.dumps(notary.check_signature(nbformat.read(args["file"], as_version=4))))
`;

jest.setTimeout(60_000);

describe('WorkerSignatureStore', () => {
  it('runs the worker from the built lib when the caller is TypeScript', () => {
    expect(signatureWorkerFile()).toBe(path.join(LIB, 'contents', 'trust', 'signatureWorker.js'));
  });

  it('stores, checks and removes as the SQLite store does, in a worker started on first use', async () => {
    const store = workerStore({ now: steppingClock() });
    expect(store.worker).toBeUndefined();
    expect(fs.existsSync(dbFile)).toBe(false);

    await store.storeSignature('d1', 'sha256');
    expect(store.worker).toBeDefined();
    expect(await store.checkSignature('d1', 'sha256')).toBe(true);
    expect(await store.checkSignature('d1', 'sha512')).toBe(false);
    expect(await store.checkSignature('d2', 'sha256')).toBe(false);
    // Calls in flight together each get their own answer.
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        i % 2 === 0
          ? store.storeSignature(`p${i}`, 'sha256').then(() => `stored p${i}`)
          : store.checkSignature('d1', 'sha256').then(known => `d1 ${known}`)
      )
    );
    expect(answers).toEqual(
      Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? `stored p${i}` : 'd1 true'))
    );
    await store.removeSignature('d1', 'sha256');
    await store.removeSignature('never-stored', 'sha256');
    expect(await store.checkSignature('d1', 'sha256')).toBe(false);
    expect(store.dbFile).toBe(dbFile);

    // The clock of the calling thread stamped the rows (one reading per call).
    const db = python<{ rows: unknown[][] }>(PY_DB, { dbFile });
    expect(db.rows[0]).toEqual(['sha256', 'p0', null, '2024-01-02T03:04:10.600000+00:00']);
    expect(db.rows.map(row => row[1])).toEqual(Array.from({ length: 10 }, (_, i) => `p${2 * i}`));
  });

  it('writes a database that Python sqlite3 reads, and reads what Python writes', async () => {
    const store = workerStore();
    await store.storeSignature('from-node', 'sha256');
    const db = python<Record<string, unknown[]>>(PY_DB, { dbFile, insert: 'from-python' });
    expect(db.integrity).toEqual([['ok']]);
    expect(db.columns).toEqual(['id', 'algorithm', 'signature', 'path', 'last_seen']);
    expect(db.algosig).toEqual(['algorithm', 'signature']);
    expect(db.rows).toEqual([
      ['sha256', 'from-node', null, expect.stringMatching(/^\d{4}-\d\d-\d\dT[\d:.]+\+00:00$/)]
    ]);
    expect(await store.checkSignature('from-python', 'sha256')).toBe(true);
  });

  it("is the server's notary store, whose signatures nbformat trusts", async () => {
    const dataDir = path.join(tmp, 'data');
    const file = path.join(tmp, 'signed.ipynb');
    const notebook = {
      cells: [
        {
          cell_type: 'code',
          execution_count: 1,
          id: 'cell-1',
          metadata: {},
          outputs: [
            {
              output_type: 'execute_result',
              execution_count: 1,
              data: { 'text/html': '<b>2</b>' },
              metadata: {}
            }
          ],
          source: '1+1'
        }
      ],
      metadata: {},
      nbformat: 4,
      nbformat_minor: 5
    };
    fs.writeFileSync(file, JSON.stringify(notebook));
    const notary = createNotary(dataDir);
    try {
      expect(await notary.checkSignature(notebook)).toBe(false);
      await notary.sign(notebook);
      expect(python<boolean>(PY_CHECK, { dataDir, file })).toBe(true);
    } finally {
      await notary.close();
    }
  });

  it('passes on the warnings and the in-memory fallback of the store in the worker', async () => {
    fs.mkdirSync(path.dirname(dbFile), { recursive: true });
    fs.writeFileSync(dbFile, 'this is not a database '.repeat(100));
    const warnings: string[] = [];
    const store = workerStore({ warn: message => warnings.push(message) });
    await store.storeSignature('d', 'sha256');
    expect(warnings.join('\n')).toMatch(/moved to .*nbsignatures\.db\.bak/);
    expect(fs.existsSync(`${dbFile}.bak`)).toBe(true);

    fs.writeFileSync(path.join(tmp, 'blocker'), '');
    const blocked = workerStore({
      dbFile: path.join(tmp, 'blocker', 'nbsignatures.db'),
      warn: message => warnings.push(message)
    });
    await blocked.storeSignature('d', 'sha256');
    expect(await blocked.checkSignature('d', 'sha256')).toBe(true);
    expect(blocked.dbFile).toBe(':memory:');
    expect(warnings.join('\n')).toMatch(/in-memory/);
  });

  it('rejects with SignatureStoreBusyError, across the thread boundary', async () => {
    const store = workerStore({ busyTimeoutMs: 150 });
    await store.storeSignature('d', 'sha256');
    const lock = lockDatabase();
    const error = await store.storeSignature('e', 'sha256').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SignatureStoreBusyError);
    expect(error).toMatchObject({ name: 'SignatureStoreBusyError', dbFile });
    expect((error as SignatureStoreBusyError).waitedMs).toBeGreaterThanOrEqual(140);
    expect((error as Error).message).toMatch(/stayed locked for \d+ ms/);
    // The stack says where in the worker it was raised.
    expect((error as Error).stack).toMatch(/signatureStore\.js/);
    lock.release();
    expect(await store.checkSignature('e', 'sha256')).toBe(false);
  });

  it('stops the worker on close; calls pending then or made later reject as closed', async () => {
    const unused = workerStore();
    await unused.close();
    expect(unused.worker).toBeUndefined();
    await expect(unused.checkSignature('d', 'sha256')).rejects.toThrow(/store is closed/);

    const store = workerStore({ busyTimeoutMs: 30_000 });
    await store.storeSignature('d', 'sha256');
    const worker = store.worker as Worker;
    const exit = exited(worker);
    const lock = lockDatabase();
    const pending = store.checkSignature('d', 'sha256').catch((error: unknown) => error);
    await settle();
    const started = Date.now();
    await store.close();
    expect(Date.now() - started).toBeLessThan(5000);
    expect(await pending).toEqual(new Error('The notebook signature store is closed'));
    await exit;
    expect(store.worker).toBeUndefined();
    await expect(store.checkSignature('d', 'sha256')).rejects.toThrow(/store is closed/);
    await expect(store.storeSignature('d', 'sha256')).rejects.toThrow(/store is closed/);
    // Closing again is harmless.
    await store.close();
    // No new worker was started for the calls after close.
    expect(store.worker).toBeUndefined();
    lock.release();
  });

  it('fails the pending calls of a worker that dies, and starts a new one on the next call', async () => {
    const store = workerStore({ busyTimeoutMs: 30_000 });
    await store.storeSignature('d', 'sha256');
    const first = store.worker as Worker;
    const lock = lockDatabase();
    const pending = [store.storeSignature('e', 'sha256'), store.checkSignature('d', 'sha256')].map(
      call => call.catch((error: unknown) => error)
    );
    await settle();
    await first.terminate();
    for (const error of await Promise.all(pending)) {
      expect((error as Error).message).toMatch(
        /signature worker for .*nbsignatures\.db stopped unexpectedly.*next one starts a new worker/
      );
    }
    expect(store.worker).toBeUndefined();

    lock.release();
    expect(await store.checkSignature('d', 'sha256')).toBe(true);
    await store.storeSignature('f', 'sha256');
    expect(store.worker).toBeDefined();
    expect(store.worker).not.toBe(first);
    const db = python<{ rows: unknown[][] }>(PY_DB, { dbFile });
    expect(db.rows.map(row => row[1])).toEqual(['d', 'f']);
  });

  it('keeps SQLite out of the calling thread, warns about nothing, and keeps the process alive only while a call is pending', () => {
    // A fresh process on the built lib, as the gateway runs: the server's notary, then a call
    // that waits for a locked database while nothing else keeps the process alive. It never
    // closes anything, and must still exit on its own once the answers are in. Its stderr must
    // stay empty: no ExperimentalWarning about node:sqlite either.
    const script = String.raw`
      const fs = require('node:fs');
      const path = require('node:path');
      const [lib, dataDir] = process.argv.slice(1);
      const { createNotary } = require(path.join(lib, 'app.js'));
      const { WorkerSignatureStore } = require(path.join(lib, 'contents', 'trust'));
      const loaded = () => process.moduleLoadList.filter(name => /\bsqlite\b/i.test(name));
      const notebook = { cells: [], metadata: {}, nbformat: 4, nbformat_minor: 5 };
      const other = { cells: [], metadata: { other: true }, nbformat: 4, nbformat_minor: 5 };
      (async () => {
        const notary = createNotary(dataDir);
        await notary.sign(notebook);
        const trusted = [await notary.checkSignature(notebook), await notary.checkSignature(other)];
        const inThisThread = loaded();
        // Now this thread may load SQLite too: to lock the database as a busy Python would.
        const dbFile = path.join(dataDir, 'nbsignatures.db');
        const { DatabaseSync } = require('node:sqlite');
        const lock = new DatabaseSync(dbFile);
        lock.exec('BEGIN EXCLUSIVE');
        const store = new WorkerSignatureStore({ dbFile, busyTimeoutMs: 500 });
        store.checkSignature('x', 'sha256').catch(error => {
          lock.exec('ROLLBACK');
          lock.close();
          process.stdout.write(JSON.stringify({
            trusted,
            busy: error.name,
            sqlite: inThisThread,
            rows: fs.statSync(dbFile).size > 0
          }) + '\n');
        });
      })().catch(error => {
        console.error(error);
        process.exitCode = 1;
      });
    `;
    const started = Date.now();
    const child = spawnSync(process.execPath, ['-e', script, LIB, path.join(tmp, 'data')], {
      encoding: 'utf8',
      timeout: 30_000
    });
    expect(child.error).toBeUndefined();
    expect({ status: child.status, stderr: child.stderr }).toEqual({ status: 0, stderr: '' });
    expect(JSON.parse(child.stdout)).toEqual({
      trusted: [true, false],
      busy: 'SignatureStoreBusyError',
      sqlite: [],
      rows: true
    });
    // It exited when the work was done, not at the timeout.
    expect(Date.now() - started).toBeLessThan(20_000);
  });
});
