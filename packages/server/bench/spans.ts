/**
 * Where a save's time goes inside the gateway, stage by stage: a preload script (loaded into
 * the gateway with `NODE_OPTIONS=--require`, only by `npm run bench:archive -- --spans`) wraps
 * the functions of the built gateway that make up a contents PUT and records, per call, the wall
 * time and the CPU time of the main thread (`process.threadCpuUsage`) from entry until it
 * returned or its promise settled; at exit it writes them as JSON. Nothing in the gateway's own
 * code changes: without the preload there is no instrumentation at all.
 *
 * #### Notes
 * - Wrapped functions are exported functions and class prototype methods of `lib/`, replaced
 *   before the gateway loads them (a TypeScript CommonJS build reads an imported function from
 *   its module object at each call, and methods from the prototype). Functions a module calls
 *   internally (the router's `jsonBody` and `sendJson`) cannot be reached this way: their time is
 *   in the remainders (before `manager.put`, after it).
 * - Spans nest (a save's `serializeNotebook` holds `notary.sign`), so the rows do not add up;
 *   the report derives the exclusive stages from them.
 * - The main thread's CPU over an asynchronous span also counts whatever else the event loop
 *   ran meanwhile (another save, an upload): at a paced 20 saves/s little overlaps, but it is an
 *   upper bound. Work of the libuv threads (fsync) and of the signature worker is not in it.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { mean, quantile } from './stats';

/** Wall and main-thread CPU time of the calls of one wrapped function, in ms. */
export interface ISpanSamples {
  readonly wall: number[];
  readonly cpu: number[];
}

/** Everything the preload recorded: span name to samples, and what it could not wrap. */
export interface ISpanRecord {
  readonly spans: Record<string, ISpanSamples>;
  readonly missing: string[];
}

/**
 * The functions wrapped: span name, module relative to the gateway's `lib/` (the notebook format's
 * are in `@jupyter-store/nbformat`'s own `lib/`), the exported class (or `''` for an exported
 * function) and the method or function name.
 */
export const SPAN_TARGETS: ReadonlyArray<readonly [string, string, string, string]> = [
  ['auth: Authenticator.authenticate', 'gateway/auth.js', 'Authenticator', 'authenticate'],
  ['json: parsePythonJson', '../../nbformat/lib/json.js', '', 'parsePythonJson'],
  ['validate: parseRequest (schema)', 'http/schema.js', '', 'parseRequest'],
  ['manager.put', 'contents/manager.js', 'ContentsManager', 'put'],
  ['manager.saveNow', 'contents/manager.js', 'ContentsManager', 'saveNow'],
  [
    'manager.serializeNotebook (sign + serialise)',
    'contents/manager.js',
    'ContentsManager',
    'serializeNotebook'
  ],
  ['trust: notary.checkCells', 'contents/trust/notary.js', 'NotebookNotary', 'checkCells'],
  ['trust: notary.sign', 'contents/trust/notary.js', 'NotebookNotary', 'sign'],
  [
    'trust: notary.computeSignature (HMAC)',
    'contents/trust/notary.js',
    'NotebookNotary',
    'computeSignature'
  ],
  ['serialise: serializeNotebook', '../../nbformat/lib/notebook.js', '', 'serializeNotebook'],
  ['file: RootFs.writeFileAtomic', 'contents/rootFs.js', 'RootFs', 'writeFileAtomic'],
  ['checkpoints.list', 'contents/checkpoints.js', 'FileCheckpoints', 'list'],
  ['manager.get (model after save)', 'contents/manager.js', 'ContentsManager', 'get'],
  ['journal: ArchiveIntake.saved', 'archive/intake.js', 'ArchiveIntake', 'saved'],
  ['journal: ArchiveJournal.append', 'archive/journal.js', 'ArchiveJournal', 'append'],
  ['upload: S3ObjectStore.put (background)', 'storage/s3Store.js', 'S3ObjectStore', 'put']
];

/** Request-level spans the preload adds itself. */
export const REQUEST_SPAN = 'request: PUT handled → answer flushed';
export const BEFORE_PUT_SPAN = 'before manager.put (routing, auth, body, parse, validation)';
export const AFTER_PUT_SPAN = 'answer: manager.put settled → answer flushed';
export const BODY_SPAN = 'body: express.raw read';

/**
 * Write the preload into `dir`; the gateway writes `<pid>.spans.json` there when it exits.
 *
 * @param libDir - the built gateway's `lib` directory.
 */
export async function writeSpanPreload(dir: string, libDir: string): Promise<string> {
  const file = join(dir, 'save-spans-preload.cjs');
  const script = `'use strict';
const fs = require('node:fs');
const path = require('node:path');
const http = require('node:http');
const { AsyncLocalStorage } = require('node:async_hooks');
const lib = ${JSON.stringify(libDir)};
const spans = Object.create(null);
const missing = [];
const now = () => performance.now();
const cpu = () => { const u = process.threadCpuUsage(); return (u.user + u.system) / 1000; };
const record = (name, wall, cpuMs) => {
  const s = spans[name] || (spans[name] = { wall: [], cpu: [] });
  s.wall.push(wall); s.cpu.push(cpuMs);
};
const als = new AsyncLocalStorage();
function wrap(holder, key, name, after) {
  const original = holder && holder[key];
  if (typeof original !== 'function') { missing.push(name); return; }
  holder[key] = function (...args) {
    const t = now(); const c = cpu();
    const done = () => { record(name, now() - t, cpu() - c); if (after) after(); };
    let result;
    try { result = original.apply(this, args); } catch (error) { done(); throw error; }
    if (result && typeof result.then === 'function') {
      return result.then(v => { done(); return v; }, e => { done(); throw e; });
    }
    done();
    return result;
  };
}
const targets = ${JSON.stringify(SPAN_TARGETS)};
for (const [name, file, cls, key] of targets) {
  let mod;
  try { mod = require(path.join(lib, file)); } catch { missing.push(name); continue; }
  const after = name === 'manager.put'
    ? () => { const ctx = als.getStore(); if (ctx) { ctx.putEnd = now(); ctx.putEndCpu = cpu(); } }
    : undefined;
  if (cls === '') wrap(mod, key, name, after);
  else wrap(mod[cls] && mod[cls].prototype, key, name, after);
}
// manager.put's start, for the span before it.
{
  const mod = require(path.join(lib, 'contents/manager.js'));
  const proto = mod.ContentsManager && mod.ContentsManager.prototype;
  const wrapped = proto && proto.put;
  if (typeof wrapped === 'function') {
    proto.put = function (...args) {
      const ctx = als.getStore();
      if (ctx && ctx.putStart === undefined) {
        ctx.putStart = now();
        record(${JSON.stringify(BEFORE_PUT_SPAN)}, ctx.putStart - ctx.t, cpu() - ctx.c);
      }
      return wrapped.apply(this, args);
    };
  }
}
// The body reader: from the middleware's call to its next().
{
  const mod = require(path.join(lib, 'http/body.js'));
  const original = mod.rawBody;
  if (typeof original === 'function') {
    mod.rawBody = function (...args) {
      const middleware = original.apply(this, args);
      return function (req, res, next) {
        const t = now(); const c = cpu();
        return middleware.call(this, req, res, (...rest) => {
          record(${JSON.stringify(BODY_SPAN)}, now() - t, cpu() - c);
          return next(...rest);
        });
      };
    };
  } else missing.push(${JSON.stringify(BODY_SPAN)});
}
// Whole requests: PUTs of the contents API, from the 'request' event to the answer's 'finish'.
const emit = http.Server.prototype.emit;
http.Server.prototype.emit = function (event, req, res) {
  if (event !== 'request' || req.method !== 'PUT' || !String(req.url).includes('/api/contents/')) {
    return emit.apply(this, arguments);
  }
  const ctx = { t: now(), c: cpu() };
  res.once('finish', () => {
    const t = now(); const c = cpu();
    record(${JSON.stringify(REQUEST_SPAN)}, t - ctx.t, c - ctx.c);
    if (ctx.putEnd !== undefined) record(${JSON.stringify(AFTER_PUT_SPAN)}, t - ctx.putEnd, c - ctx.putEndCpu);
  });
  return als.run(ctx, () => emit.apply(this, arguments));
};
process.on('exit', () => {
  fs.writeFileSync(
    path.join(${JSON.stringify(dir)}, process.pid + '.spans.json'),
    JSON.stringify({ spans, missing })
  );
});
`;
  await writeFile(file, script);
  return file;
}

/** Read what a gateway recorded. */
export async function readSpans(file: string): Promise<ISpanRecord> {
  return JSON.parse(await readFile(file, 'utf8')) as ISpanRecord;
}

/**
 * A table of every span: calls, and per call the mean and p50 wall time and the mean
 * main-thread CPU, per save (total over the number of requests) and as a share of a request.
 */
export function formatSpans(record: ISpanRecord, title: string): string {
  const requests = record.spans[REQUEST_SPAN];
  const saves = requests?.wall.length ?? 0;
  const requestWall = requests === undefined ? NaN : mean(requests.wall);
  const rows = Object.entries(record.spans).map(([name, s]) => {
    const wallPerSave = s.wall.reduce((a, b) => a + b, 0) / Math.max(1, saves);
    const cpuPerSave = s.cpu.reduce((a, b) => a + b, 0) / Math.max(1, saves);
    return {
      name,
      line: `| ${name} | ${s.wall.length} | ${mean(s.wall).toFixed(3)} | ${quantile(s.wall, 0.5).toFixed(3)} | ${quantile(s.wall, 0.99).toFixed(3)} | ${wallPerSave.toFixed(3)} | ${cpuPerSave.toFixed(3)} | ${((wallPerSave / requestWall) * 100).toFixed(1)} % |`
    };
  });
  return [
    `${title} (${saves} PUTs)`,
    '',
    '| Span | calls | wall mean ms | wall p50 | wall p99 | wall ms / save | main-thread CPU ms / save | wall share of a request |',
    '|---|--:|--:|--:|--:|--:|--:|--:|',
    ...rows.map(row => row.line),
    ...(record.missing.length > 0
      ? ['', `Not wrapped (not found): ${record.missing.join(', ')}`]
      : [])
  ].join('\n');
}
