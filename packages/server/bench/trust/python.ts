/**
 * nbformat's side of the trust benchmark: its `SQLiteSignatureStore` in the project venv's Python,
 * driven by a command and a JSON payload on stdin.
 */
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import { findVenvPython } from '../../test/support/jupyterServer';

/** nbformat's side, driven by a command and a JSON payload on stdin. */
const PYTHON = String.raw`
import json, sqlite3, sys, time
from nbformat.sign import SQLiteSignatureStore

args = json.loads(sys.stdin.readline())
cmd = args["cmd"]
if cmd == "prefill":
    store = SQLiteSignatureStore(args["dbFile"])
    store.close()
    db = sqlite3.connect(args["dbFile"])
    db.executemany("INSERT INTO nbsignatures (algorithm, signature, last_seen) VALUES ('sha256', ?, ?)",
                   ((sig, "2020-01-01T00:00:%02d.%06d+00:00" % (i // 1000000 % 60, i % 1000000))
                    for i, sig in enumerate(args["filler"])))
    db.commit()
    db.close()
    store = SQLiteSignatureStore(args["dbFile"])
    for sig in args["known"]:
        store.store_signature(sig, "sha256")
    store.close()
    print(json.dumps(True))
elif cmd == "run":
    started = time.perf_counter()
    store = SQLiteSignatureStore(args["dbFile"])
    first = (time.perf_counter() - started) * 1000
    out = {"first": first}
    for name, digests, expected in (("store", args["new"], None), ("hit", args["known"], True),
                                    ("miss", args["unknown"], False)):
        samples = []
        for digest in digests:
            t = time.perf_counter()
            answer = (store.store_signature if name == "store" else store.check_signature)(digest, "sha256")
            samples.append((time.perf_counter() - t) * 1000)
            if expected is not None and answer != expected:
                raise SystemExit("nbformat answered %r for %s" % (answer, name))
        out[name] = samples
    store.close()
    print(json.dumps(out))
elif cmd == "contend":
    # The store is opened before the lock is taken (opening under it would wait too).
    store = SQLiteSignatureStore(args["dbFile"])
    print("ready", flush=True)
    sys.stdin.readline()
    t = time.perf_counter()
    try:
        store.store_signature(args["digest"], "sha256")
        outcome = "stored"
    except sqlite3.OperationalError as error:
        outcome = "failed: " + str(error)
    print(json.dumps({"ms": (time.perf_counter() - t) * 1000, "outcome": outcome}), flush=True)
elif cmd == "hold":
    db = sqlite3.connect(args["dbFile"], isolation_level=None)
    db.execute("BEGIN EXCLUSIVE")
    print("holding", flush=True)
    time.sleep(args["seconds"])
    db.execute("COMMIT")
    db.close()
`;

let python: string | undefined;

/** The project venv's Python (found on the first call). */
export function venvPython(): string {
  return (python ??= findVenvPython());
}

export function runPython<T>(input: object): T {
  const result = spawnSync(venvPython(), ['-c', PYTHON], {
    input: JSON.stringify(input),
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024
  });
  if (result.status !== 0) throw new Error(`python failed: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

/** A Python process started on a command; resolves the first line that contains `marker`. */
export function startPython(
  input: object,
  marker: string
): { child: ChildProcessWithoutNullStreams; ready: Promise<void>; lines: string[] } {
  const child = spawn(venvPython(), ['-c', PYTHON], { stdio: 'pipe' });
  // The payload is the first line; further lines are signals to the script.
  child.stdin.write(`${JSON.stringify(input)}\n`);
  const lines: string[] = [];
  let buffer = '';
  let stderr = '';
  child.stderr.on('data', chunk => (stderr += chunk));
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on('data', chunk => {
      buffer += chunk;
      const parts = buffer.split('\n');
      buffer = parts.pop() ?? '';
      lines.push(...parts);
      if (parts.some(line => line.includes(marker))) resolve();
    });
    child.on('exit', code => reject(new Error(`python exited (${code}) early: ${stderr}`)));
  });
  ready.catch(() => undefined);
  return { child, ready, lines };
}

export function exited(child: ChildProcessWithoutNullStreams): Promise<void> {
  return new Promise(resolve =>
    child.exitCode !== null ? resolve() : child.once('exit', () => resolve())
  );
}
