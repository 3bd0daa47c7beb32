/**
 * Trust interoperability with the real nbformat (the project venv's Python): notebooks signed by
 * either side are trusted by the other, tampering is caught by both, both write the same
 * database in turn and at the same time, a Python transaction in progress is waited for rather
 * than trampled, a journal left by a crashed Python is rolled back, and a database Python keeps
 * locked does not fail a save.
 */
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ContentsManager } from '../../src/contents/manager';
import { parsePythonJson } from '@jupyter-store/nbformat';
import {
  NOTARY_ALGORITHMS,
  NotebookNotary,
  SignatureStoreBusyError,
  jupyterDataDir,
  walkNotebook
} from '../../src/contents/trust';

const REPO_ROOT = path.resolve(__dirname, '..', '..', '..', '..');
const PYTHON = path.join(REPO_ROOT, '.venv', 'bin', 'python');

/** nbformat's side of the tests, driven by a command name and a JSON payload on stdin. */
const HELPER = String.raw`
import base64, datetime, hashlib, json, os, random, sqlite3, sys, time, traceback
import nbformat
from nbformat.sign import NotebookNotary, yield_everything, signature_removed
from nbformat.v4 import new_notebook, new_code_cell, new_markdown_cell, new_raw_cell, new_output

WORDS = ["alpha", "\u03b2", "\u03b3\u03ac\u03bc\u03bc\u03b1", "\u6570\u636e", "\u00fc", "\U0001F600",
         "\U0001D518", "na\u00efve", "\u03a9", "x", "", "A", "Z", "\uffff", "\ue000", "\U00010000", "e\u0301"]
FLOATS = [1e16, 1e-7, 0.1, 1e22, -0.0, 0.0, 5e-324, 1.7976931348623157e308, 123456789.0, 2.5e-5,
          1.0, 2.0, -3.0, 100.0, 1e15, 0.5]

def generate(out_dir, count, seed):
    rng = random.Random(seed)
    def leaf():
        pick = rng.randrange(8)
        if pick == 0: return rng.randint(-10**6, 10**6)
        if pick == 1: return rng.random() * 10 ** rng.randint(-8, 20)
        if pick == 2: return float(rng.randint(-100, 100))
        if pick == 3: return rng.choice(FLOATS)
        if pick == 4: return 2 ** rng.randint(54, 90) * rng.choice([1, -1])
        if pick == 5: return rng.choice([True, False, None])
        return rng.choice(WORDS) + rng.choice(WORDS) + str(rng.randint(0, 9))
    def value(depth=0):
        if depth > 3 or rng.random() < 0.4: return leaf()
        if rng.random() < 0.5: return [value(depth + 1) for _ in range(rng.randint(0, 4))]
        return {rng.choice(WORDS) + rng.choice(WORDS) + k: value(depth + 1) for k in "abcd"[: rng.randint(0, 4)]}
    def text():
        return "\n".join(rng.choice(WORDS) * rng.randint(1, 5) for _ in range(rng.randint(0, 4)))
    def output(n):
        kind = rng.randrange(5)
        if kind == 0:
            return new_output("execute_result", execution_count=n, metadata={"m": value()},
                data={"text/plain": text(), "text/html": "<b>" + text() + "</b>", "application/json": value()})
        if kind == 1:
            png = base64.b64encode(rng.randbytes(rng.randint(10, 3000))).decode()
            return new_output("display_data", metadata={"image/png": {"width": 640.0, "height": 480}},
                data={"image/png": png, "text/plain": "<Figure size 640x480>"})
        if kind == 2:
            return new_output("stream", name=rng.choice(["stdout", "stderr"]), text=text() + "\n")
        if kind == 3:
            return new_output("error", ename="ValueError", evalue=text(), traceback=[text(), text()])
        return new_output("display_data", metadata={}, data={"text/latex": "$" + text() + "$"})
    paths = []
    for i in range(count):
        nb = new_notebook(metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
            "custom": value(), rng.choice(WORDS) + "key": value(), "floats": rng.sample(FLOATS, 4)})
        for j in range(rng.randint(1, 6)):
            pick = rng.random()
            if pick < 0.6:
                n = rng.randint(1, 99)
                cell = new_code_cell(source=text(), execution_count=n,
                    outputs=[output(n) for _ in range(rng.randint(0, 3))], metadata={"tags": ["tag" + rng.choice(WORDS)], "x": value()})
            elif pick < 0.8:
                cell = new_markdown_cell(source=text())
            else:
                cell = new_raw_cell(source=text(), metadata={"format": "text/html"})
            cell["id"] = "cell-%d-%d" % (i, j)
            nb.cells.append(cell)
        # What Jupyter writes, plus the keys its reader strips, which must not change the signature.
        data = json.loads(nbformat.writes(nb))
        if i % 4 == 0:
            data["metadata"]["signature"] = "sha256:" + "0" * 64
            for cell in data["cells"]:
                if cell["cell_type"] == "code":
                    cell["metadata"]["trusted"] = True
        path = os.path.join(out_dir, "nb%02d.ipynb" % i)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(data, f, sort_keys=True, indent=1, ensure_ascii=False)
        paths.append(path)
    return paths

def read(path):
    return nbformat.read(path, as_version=4)

def notary(args, **kw):
    # A Jupyter application makes its data dir before any notary uses it.
    from jupyter_core.utils import ensure_dir_exists
    ensure_dir_exists(args["dataDir"], mode=0o700)
    return NotebookNotary(data_dir=args["dataDir"], **kw)

def handle(cmd, args):
    if cmd == "generate":
        result = generate(args["dir"], args["count"], args["seed"])
    elif cmd == "sign":
        with notary(args) as n:
            for p in args["files"]:
                n.sign(read(p))
        result = True
    elif cmd == "check":
        with notary(args) as n:
            result = [n.check_signature(read(p)) for p in args["files"]]
    elif cmd == "signatures":
        result = {}
        for alg in args["algorithms"]:
            with notary(args, algorithm=alg, db_file=":memory:") as n:
                result[alg] = [n.compute_signature(read(p)) for p in args["files"]]
    elif cmd == "canonical":
        result = []
        for p in args["files"]:
            nb = read(p)
            h = hashlib.sha256()
            with signature_removed(nb):
                for b in yield_everything(nb):
                    h.update(b)
            result.append(h.hexdigest())
    elif cmd == "tamper":
        for i, path in enumerate(args["files"]):
            nb = read(path)
            if i % 2 == 0:
                # 2.0 -> 2 changes nothing for JavaScript, everything for str().
                nb.metadata["floats"] = [int(v) if isinstance(v, float) and v.is_integer() and abs(v) < 1e15 else v
                                         for v in nb.metadata["floats"]] + [7]
            else:
                nb.cells[0].source += " "
            nbformat.write(nb, path)
        result = True
    elif cmd == "db":
        db = sqlite3.connect(args["dbFile"])
        rows = db.execute("SELECT id, algorithm, signature, path, last_seen FROM nbsignatures ORDER BY id").fetchall()
        for row in rows:
            stamp = datetime.datetime.fromisoformat(row[4])
            assert stamp.utcoffset() == datetime.timedelta(0), row
        result = {
            "integrity": db.execute("PRAGMA integrity_check").fetchall(),
            "tables": db.execute("SELECT type, name, tbl_name FROM sqlite_master ORDER BY name").fetchall(),
            "columns": db.execute("PRAGMA table_info(nbsignatures)").fetchall(),
            "indexes": db.execute("PRAGMA index_list(nbsignatures)").fetchall(),
            "algosig": db.execute("PRAGMA index_info(algosig)").fetchall(),
            "rows": rows,
        }
        db.close()
    elif cmd == "hold":
        # Keep a transaction open on the shared database, as a busy Python would: IMMEDIATE lets
        # others read meanwhile, EXCLUSIVE keeps everyone out.
        db = sqlite3.connect(args["dbFile"], isolation_level=None)
        db.execute("BEGIN " + args.get("mode", "IMMEDIATE"))
        db.execute("INSERT INTO nbsignatures (algorithm, signature, last_seen) VALUES ('sha256', 'held', ?)",
                   (datetime.datetime.now(tz=datetime.timezone.utc).isoformat(),))
        print("holding", flush=True)
        time.sleep(args["seconds"])
        db.execute("COMMIT")
        db.close()
        result = "done"
    elif cmd == "hammer":
        # Sign and check notebooks' worth of signatures in a loop for a while, as a busy Jupyter.
        with notary(args) as n:
            store = n.store
            deadline = time.time() + args["seconds"]
            i = 0
            while time.time() < deadline:
                digest = "py-%d-%s" % (i, args["tag"])
                store.store_signature(digest, "sha256")
                assert store.check_signature(digest, "sha256")
                i += 1
        result = i
    elif cmd == "crash":
        # Die in the middle of a large write, leaving a hot journal and a half-written database.
        db = sqlite3.connect(args["dbFile"])
        db.execute("PRAGMA cache_size=2")
        db.execute("INSERT INTO nbsignatures (algorithm, signature, last_seen) "
                   "SELECT 'sha256', hex(randomblob(200)), '2000-01-01T00:00:00+00:00' FROM "
                   "(WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 5000) SELECT n FROM c)")
        db.execute("UPDATE nbsignatures SET path = hex(randomblob(100))")
        os._exit(0)
    elif cmd == "datadirs":
        from jupyter_core.paths import jupyter_data_dir
        result = []
        saved = dict(os.environ)
        try:
            for env in args["envs"]:
                os.environ.clear()
                os.environ.update(env)
                result.append(jupyter_data_dir())
        finally:
            os.environ.clear()
            os.environ.update(saved)
    else:
        raise SystemExit("unknown command " + cmd)
    return result

# "serve" answers one JSON request per line, so that nbformat is imported only once per run.
if sys.argv[1] == "serve":
    for line in sys.stdin:
        request = json.loads(line)
        try:
            reply = {"ok": handle(request["cmd"], request["args"])}
        except BaseException:
            reply = {"error": traceback.format_exc()}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
else:
    print(json.dumps(handle(sys.argv[1], json.loads(sys.stdin.read() or "{}"))), flush=True)

`;

let tmp: string;
let helperFile: string;

function pythonEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    HOME: path.join(tmp, 'home'),
    JUPYTER_CONFIG_DIR: path.join(tmp, 'config'),
    JUPYTER_DATA_DIR: path.join(tmp, 'jupyter-data'),
    JUPYTER_RUNTIME_DIR: path.join(tmp, 'runtime'),
    PYTHONIOENCODING: 'utf-8',
    ...extra
  };
}

/**
 * One long-lived helper process (`serve`): nbformat takes over a second to import, and the tests
 * ask it a few dozen questions. Requests are answered strictly one at a time, in order.
 */
class PythonHelper {
  constructor() {
    this.child = spawn(PYTHON, [helperFile, 'serve'], { env: pythonEnv() });
    this.child.stderr.on('data', chunk => (this.stderr += chunk));
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (chunk: string) => {
      this.buffer += chunk;
      let newline: number;
      while ((newline = this.buffer.indexOf('\n')) >= 0) {
        const line = this.buffer.slice(0, newline);
        this.buffer = this.buffer.slice(newline + 1);
        this.waiting.shift()?.(line);
      }
    });
  }

  async request<T>(command: string, payload: object): Promise<T> {
    const line = new Promise<string>(resolve => this.waiting.push(resolve));
    this.child.stdin.write(`${JSON.stringify({ cmd: command, args: payload })}\n`);
    const reply = JSON.parse(await line) as { ok?: T; error?: string };
    if (reply.error !== undefined) throw new Error(`python ${command} failed:\n${reply.error}`);
    return reply.ok as T;
  }

  stop(): void {
    this.child.stdin.end();
  }

  private readonly child: ChildProcessWithoutNullStreams;
  private buffer = '';
  private stderr = '';
  private readonly waiting: ((line: string) => void)[] = [];
}

let helper: PythonHelper;

/** Ask nbformat; any Python failure fails the test. */
function py<T>(command: string, payload: object = {}): Promise<T> {
  return helper.request<T>(command, payload);
}

/**
 * Read a notebook as nbformat's reader hands it to the notary: JSON with Python's number kinds
 * kept (integral floats and big ints as PyNumber), and the transient keys stripped.
 */
function readNotebook(file: string): Record<string, unknown> {
  const notebook = parsePythonJson(fs.readFileSync(file)) as Record<string, unknown>;
  const metadata = notebook.metadata as Record<string, unknown>;
  delete metadata.orig_nbformat;
  delete metadata.orig_nbformat_minor;
  delete metadata.signature;
  for (const cell of notebook.cells as Record<string, Record<string, unknown>>[]) {
    delete cell.metadata.trusted;
  }
  return notebook;
}

function canonicalDigest(notebook: object): string {
  const hash = createHash('sha256');
  walkNotebook(notebook, { push: piece => hash.update(piece, 'utf8') });
  return hash.digest('hex');
}

async function generate(dir: string, count: number, seed: number): Promise<string[]> {
  fs.mkdirSync(dir, { recursive: true });
  return await py<string[]>('generate', { dir, count, seed });
}

async function ourCheck(dataDir: string, files: string[]): Promise<boolean[]> {
  const notary = new NotebookNotary({ dataDir });
  try {
    const answers = [];
    for (const file of files) answers.push(await notary.checkSignature(readNotebook(file)));
    return answers;
  } finally {
    await notary.close();
  }
}

async function ourSign(dataDir: string, files: string[]): Promise<void> {
  const notary = new NotebookNotary({ dataDir });
  try {
    for (const file of files) await notary.sign(readNotebook(file));
  } finally {
    await notary.close();
  }
}

// Python starts in about two seconds and some tests wait for Python transactions on purpose.
jest.setTimeout(120_000);

beforeAll(() => {
  if (!fs.existsSync(PYTHON)) {
    throw new Error(
      `The trust integration tests need the project venv's Python at ${PYTHON} ` +
        '(with nbformat installed); create it with scripts/setup.sh.'
    );
  }
  tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'trust-itest-')));
  helperFile = path.join(tmp, 'helper.py');
  fs.writeFileSync(helperFile, HELPER);
  helper = new PythonHelper();
});

afterAll(() => {
  helper?.stop();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('trust shared with nbformat', () => {
  it('walks and hashes a few dozen generated notebooks exactly as Python does', async () => {
    const files = await generate(path.join(tmp, 'walk'), 36, 1);
    const notebooks = files.map(readNotebook);
    expect(notebooks.map(canonicalDigest)).toEqual(await py<string[]>('canonical', { files }));

    const dataDir = path.join(tmp, 'walk-data');
    const python = await py<Record<string, string[]>>('signatures', {
      dataDir,
      files: files.slice(0, 6),
      algorithms: NOTARY_ALGORITHMS
    });
    for (const algorithm of NOTARY_ALGORITHMS) {
      const notary = new NotebookNotary({ dataDir, dbFile: ':memory:', algorithm });
      expect([algorithm, notebooks.slice(0, 6).map(nb => notary.computeSignature(nb))]).toEqual([
        algorithm,
        python[algorithm]
      ]);
    }
  });

  it('(1) trusts what Python signed, using the secret Python created', async () => {
    const dataDir = path.join(tmp, 'py-first');
    const files = await generate(path.join(tmp, 'py-signed'), 30, 2);
    // Python goes first, so the secret and the database are the ones it made.
    expect(await py<boolean[]>('check', { dataDir, files })).toEqual(files.map(() => false));
    expect(await ourCheck(dataDir, files)).toEqual(files.map(() => false));
    await py('sign', { dataDir, files });
    expect(await ourCheck(dataDir, files)).toEqual(files.map(() => true));

    const secret = path.join(dataDir, 'notebook_secret');
    expect(fs.statSync(secret).mode & 0o777).toBe(0o600);
    const lines = fs.readFileSync(secret, 'ascii').split('\n');
    expect(lines.slice(0, -1).every(line => line.length === 76)).toBe(true);
  });

  it('(2) Python trusts what we signed, using the secret we created', async () => {
    const dataDir = path.join(tmp, 'node-first');
    const files = await generate(path.join(tmp, 'node-signed'), 30, 3);
    await ourSign(dataDir, files);
    expect(fs.statSync(path.join(dataDir, 'notebook_secret')).mode & 0o777).toBe(0o600);
    expect(await py<boolean[]>('check', { dataDir, files })).toEqual(files.map(() => true));
    // And the rows we wrote are ones Python can read back as it writes them.
    const db = await py<{ rows: unknown[][] }>('db', {
      dbFile: path.join(dataDir, 'nbsignatures.db')
    });
    expect(db.rows).toHaveLength(30);
    for (const row of db.rows) {
      expect(row[1]).toBe('sha256');
      expect(row[3]).toBeNull();
      expect(row[4]).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?\+00:00$/);
    }
  });

  it('(3) a tampered notebook is untrusted on both sides', async () => {
    const dataDir = path.join(tmp, 'tamper');
    const files = await generate(path.join(tmp, 'tampered'), 8, 4);
    await py('sign', { dataDir, files: files.slice(0, 4) });
    await ourSign(dataDir, files.slice(4));
    expect(await py<boolean[]>('check', { dataDir, files })).toEqual(files.map(() => true));
    expect(await ourCheck(dataDir, files)).toEqual(files.map(() => true));

    await py('tamper', { files });
    expect(await py<boolean[]>('check', { dataDir, files })).toEqual(files.map(() => false));
    expect(await ourCheck(dataDir, files)).toEqual(files.map(() => false));
  });

  it('(4) both write the same database in turn and both still read all of it', async () => {
    const dataDir = path.join(tmp, 'shared');
    const files = await generate(path.join(tmp, 'shared-nbs'), 24, 5);
    const [a, b, c, d] = [
      files.slice(0, 6),
      files.slice(6, 12),
      files.slice(12, 18),
      files.slice(18)
    ];
    await ourSign(dataDir, a);
    await py('sign', { dataDir, files: b });
    await ourSign(dataDir, c);
    await py('sign', { dataDir, files: d });
    expect(await py<boolean[]>('check', { dataDir, files })).toEqual(files.map(() => true));
    expect(await ourCheck(dataDir, files)).toEqual(files.map(() => true));

    // Unsigning on our side is seen by Python.
    const notary = new NotebookNotary({ dataDir });
    await notary.unsign(readNotebook(b[0]));
    await notary.close();
    expect(await py<boolean[]>('check', { dataDir, files: [b[0], b[1]] })).toEqual([false, true]);

    // The database we created first has Python's schema, and is intact.
    const ours = await py<Record<string, unknown>>('db', {
      dbFile: path.join(dataDir, 'nbsignatures.db')
    });
    const pythonDataDir = path.join(tmp, 'python-schema');
    await py('sign', { dataDir: pythonDataDir, files: [files[0]] });
    const theirs = await py<Record<string, unknown>>('db', {
      dbFile: path.join(pythonDataDir, 'nbsignatures.db')
    });
    expect(ours.integrity).toEqual([['ok']]);
    for (const key of ['tables', 'columns', 'indexes', 'algosig']) {
      expect([key, ours[key]]).toEqual([key, theirs[key]]);
    }
    expect(ours.rows).toHaveLength(23);
  });

  it('waits for Python transactions instead of trampling them', async () => {
    const dataDir = path.join(tmp, 'concurrent');
    const dbFile = path.join(dataDir, 'nbsignatures.db');
    const files = await generate(path.join(tmp, 'concurrent-nbs'), 4, 6);
    await py('sign', { dataDir, files: [files[0]] });

    // A patient notary signs once Python commits.
    const holder = holdTransaction(dbFile, 1.5, 'IMMEDIATE');
    await holder.ready;
    let started = Date.now();
    await ourSign(dataDir, [files[1]]);
    expect(Date.now() - started).toBeGreaterThan(800);
    await holder.done;

    // An impatient one, while Python writes: checking only reads, so it is answered at once
    // (without refreshing last_seen); signing gives up after its busy timeout.
    const impatient = new NotebookNotary({ dataDir, busyTimeoutMs: 300 });
    const holder2 = holdTransaction(dbFile, 2, 'IMMEDIATE');
    await holder2.ready;
    started = Date.now();
    expect(await impatient.checkSignature(readNotebook(files[0]))).toBe(true);
    expect(Date.now() - started).toBeLessThan(250);
    await expect(impatient.sign(readNotebook(files[2]))).rejects.toBeInstanceOf(
      SignatureStoreBusyError
    );
    await holder2.done;

    // BEGIN EXCLUSIVE keeps even readers out: the impatient check answers untrusted, a patient
    // one waits and answers trusted, and signing waits too.
    const holder3 = holdTransaction(dbFile, 1.5, 'EXCLUSIVE');
    await holder3.ready;
    expect(await impatient.checkSignature(readNotebook(files[0]))).toBe(false);
    const patient = new NotebookNotary({ dataDir });
    started = Date.now();
    const [checked] = await Promise.all([
      patient.checkSignature(readNotebook(files[1])),
      patient.sign(readNotebook(files[3]))
    ]);
    expect(checked).toBe(true);
    expect(Date.now() - started).toBeGreaterThan(600);
    await holder3.done;
    await patient.close();
    expect(await impatient.checkSignature(readNotebook(files[0]))).toBe(true);
    await impatient.close();

    const db = await py<{ integrity: unknown; rows: unknown[][] }>('db', { dbFile });
    expect(db.integrity).toEqual([['ok']]);
    expect(db.rows.map(row => row[2]).filter(sig => sig === 'held')).toHaveLength(3);
    expect(await py<boolean[]>('check', { dataDir, files })).toEqual([true, true, false, true]);
  });

  it('signs and checks at the same time as Python, both sides seeing every signature', async () => {
    const dataDir = path.join(tmp, 'both-at-once');
    const dbFile = path.join(dataDir, 'nbsignatures.db');
    await py('sign', { dataDir, files: [] });
    // A Python process and this one, writing the same database for three seconds. (One: two
    // Python processes also contend with each other, and Python leaves no pause between its own
    // commits, so how they share the lock is between them, not something this store decides.)
    const child = spawn(PYTHON, [helperFile, 'hammer'], { env: pythonEnv() });
    child.stdin.end(JSON.stringify({ dataDir, seconds: 3, tag: 1 }));
    let out = '';
    let err = '';
    child.stdout.on('data', chunk => (out += chunk));
    child.stderr.on('data', chunk => (err += chunk));
    const python = new Promise<number>((resolve, reject) =>
      child.on('exit', code =>
        code === 0 ? resolve(JSON.parse(out) as number) : reject(new Error(err))
      )
    );
    const notary = new NotebookNotary({ dataDir });
    const ours: string[] = [];
    const until = Date.now() + 3000;
    while (Date.now() < until) {
      const digest = `node-${ours.length}`;
      await notary.store.storeSignature(digest, 'sha256');
      expect(await notary.store.checkSignature(digest, 'sha256')).toBe(true);
      ours.push(digest);
    }
    const count = await python;
    await notary.close();
    expect(ours.length).toBeGreaterThan(10);
    expect(count).toBeGreaterThan(10);

    const db = await py<{ integrity: unknown; rows: unknown[][] }>('db', { dbFile });
    expect(db.integrity).toEqual([['ok']]);
    const stored = new Set(db.rows.map(row => row[2] as string));
    expect(stored.size).toBe(db.rows.length);
    expect(ours.filter(digest => !stored.has(digest))).toEqual([]);
    const theirs = Array.from({ length: count }, (_, n) => `py-${n}-1`);
    expect(theirs.filter(digest => !stored.has(digest))).toEqual([]);
  });

  it('rolls back a journal left by a crashed Python, as Python would', async () => {
    const dataDir = path.join(tmp, 'crashed');
    const dbFile = path.join(dataDir, 'nbsignatures.db');
    const files = await generate(path.join(tmp, 'crashed-nbs'), 2, 7);
    await py('sign', { dataDir, files: [files[0]] });
    const crash = spawnSync(PYTHON, [helperFile, 'crash'], {
      input: JSON.stringify({ dbFile }),
      env: pythonEnv(),
      encoding: 'utf8'
    });
    expect(crash.status).toBe(0);
    expect(fs.existsSync(`${dbFile}-journal`)).toBe(true);

    const warnings: string[] = [];
    const notary = new NotebookNotary({ dataDir, busyTimeoutMs: 300, warn: m => warnings.push(m) });
    // The first reader (we) rolls the half-written transaction back, and reads the intact file.
    expect(await notary.checkSignature(readNotebook(files[0]))).toBe(true);
    expect(fs.existsSync(`${dbFile}-journal`)).toBe(false);
    await notary.sign(readNotebook(files[1]));
    await notary.close();
    expect(warnings).toEqual([]);
    expect(fs.existsSync(`${dbFile}.bak`)).toBe(false);

    expect(await py<boolean[]>('check', { dataDir, files })).toEqual([true, true]);
    const db = await py<{ integrity: unknown; rows: unknown[] }>('db', { dbFile });
    expect(db.integrity).toEqual([['ok']]);
    expect(db.rows).toHaveLength(2);
  });

  it('saves a notebook while Python keeps the database locked, unsigned rather than failed', async () => {
    const dataDir = path.join(tmp, 'locked-save');
    const dbFile = path.join(dataDir, 'nbsignatures.db');
    const root = path.join(tmp, 'locked-save-root');
    fs.mkdirSync(root, { recursive: true });
    await py('sign', { dataDir, files: [] });
    const logged: string[] = [];
    const manager = new ContentsManager({
      rootDir: root,
      notary: new NotebookNotary({ dataDir, busyTimeoutMs: 300 }),
      log: message => logged.push(message)
    });
    const content = {
      nbformat: 4,
      nbformat_minor: 5,
      metadata: {},
      cells: [
        {
          cell_type: 'code',
          id: 'c1',
          execution_count: 1,
          metadata: { trusted: true },
          source: '1+1',
          outputs: [
            {
              output_type: 'execute_result',
              execution_count: 1,
              metadata: {},
              data: { 'text/html': '<b>2</b>', 'text/plain': '2' }
            }
          ]
        }
      ]
    };
    const holder = holdTransaction(dbFile, 3, 'EXCLUSIVE');
    await holder.ready;
    const started = Date.now();
    // The manager takes the cells' `trusted` flags off the model it is given: a copy each time.
    const model = await manager.save('locked.ipynb', {
      type: 'notebook',
      content: JSON.parse(JSON.stringify(content))
    });
    expect(Date.now() - started).toBeLessThan(2000);
    expect(model).toMatchObject({ name: 'locked.ipynb', type: 'notebook' });
    expect(fs.existsSync(path.join(root, 'locked.ipynb'))).toBe(true);
    expect(logged.join('\n')).toMatch(/could not sign locked\.ipynb; it stays untrusted/);
    await holder.done;
    // Once Python lets go, the next save signs it.
    logged.length = 0;
    await manager.save('locked.ipynb', {
      type: 'notebook',
      content: JSON.parse(JSON.stringify(content))
    });
    expect(logged).toEqual([]);
    expect(
      await py<boolean[]>('check', { dataDir, files: [path.join(root, 'locked.ipynb')] })
    ).toEqual([true]);
    await manager.close();
  });

  it('finds the same Jupyter data directory as jupyter_core', async () => {
    const home = path.join(tmp, 'home');
    fs.mkdirSync(home, { recursive: true });
    const cases: NodeJS.ProcessEnv[] = [
      { HOME: home },
      { HOME: home, XDG_DATA_HOME: path.join(tmp, 'xdg') },
      { HOME: home, XDG_DATA_HOME: 'relative-xdg' },
      { HOME: home, JUPYTER_DATA_DIR: path.join(tmp, 'explicit') },
      { HOME: home, JUPYTER_PLATFORM_DIRS: '1' },
      { HOME: home, JUPYTER_PLATFORM_DIRS: '1', XDG_DATA_HOME: path.join(tmp, 'xdg2') },
      { HOME: home, JUPYTER_PLATFORM_DIRS: '1', XDG_DATA_HOME: 'relative-xdg' },
      { HOME: home, JUPYTER_PLATFORM_DIRS: 'off', JUPYTER_NO_CONFIG: '1' }
    ];
    const python = await py<string[]>('datadirs', { envs: cases });
    expect(cases.map(env => [env, jupyterDataDir({ env })])).toEqual(
      cases.map((env, index) => [env, python[index]])
    );
  });
});

/**
 * Start the helper's `hold` command (a row inserted in a transaction begun with `mode`, committed
 * after `seconds`); `ready` once the transaction is open, `done` at exit.
 */
function holdTransaction(
  dbFile: string,
  seconds: number,
  mode: 'IMMEDIATE' | 'EXCLUSIVE'
): { ready: Promise<void>; done: Promise<void> } {
  const child = spawn(PYTHON, [helperFile, 'hold'], { env: pythonEnv() });
  child.stdin.end(JSON.stringify({ dbFile, seconds, mode }));
  let stderr = '';
  child.stderr.on('data', chunk => (stderr += chunk));
  const ready = new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', chunk => {
      out += chunk;
      if (out.includes('holding')) resolve();
    });
    child.on('exit', () => reject(new Error(`hold exited early: ${stderr}`)));
  });
  const done = new Promise<void>((resolve, reject) =>
    child.on('exit', code => (code === 0 ? resolve() : reject(new Error(`hold failed: ${stderr}`))))
  );
  // A test that fails before awaiting these must not also crash the run.
  ready.catch(() => undefined);
  done.catch(() => undefined);
  return { ready, done };
}
