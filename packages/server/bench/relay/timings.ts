/** The gateway's own timings of a relayed save, taken by a preload that wraps the built classes. */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { REPO_ROOT } from '../../test/support/jupyterServer';

/**
 * Write a preload that times, inside a gateway, the parts of every proxied PUT (Jupyter's part,
 * the relayed-save hook, the answer) and every durable journal append, by wrapping the built
 * classes' methods (`UpstreamProxy.web`/`webThen`, `ArchiveIntake.relayedSave`/`saved`,
 * `ArchiveJournal.append`), and writes them to `<pid>.timings.json` in `dir` at exit. It costs
 * a closure and two clock reads per request; other Node processes that load it (Jupyter's
 * build check) are left alone.
 */
export async function writeTimingPreload(dir: string): Promise<string> {
  const lib = join(REPO_ROOT, 'packages', 'server', 'lib');
  const file = join(dir, 'timing-preload.cjs');
  const script = `'use strict';
if (/lib[\\/]cli[\\/]main\\.js$/.test(process.argv[1] || '')) {
  const fs = require('node:fs');
  const path = require('node:path');
  const lib = ${JSON.stringify(lib)};
  const { UpstreamProxy } = require(path.join(lib, 'gateway', 'proxy.js'));
  const { ArchiveIntake } = require(path.join(lib, 'archive', 'intake.js'));
  const { ArchiveJournal } = require(path.join(lib, 'archive', 'journal.js'));
  const timings = { puts: [], relayed: [], appends: [] };
  const now = () => Number(process.hrtime.bigint()) / 1e6;
  const web = UpstreamProxy.prototype.web;
  UpstreamProxy.prototype.web = function (request, response) {
    if (request.method === 'PUT') {
      const at = Date.now();
      const t0 = now();
      response.once('finish', () => timings.puts.push({ at, upstreamMs: now() - t0 }));
    }
    return web.call(this, request, response);
  };
  const webThen = UpstreamProxy.prototype.webThen;
  UpstreamProxy.prototype.webThen = function (request, response, after) {
    const at = Date.now();
    const t0 = now();
    let t1 = NaN;
    let t2 = NaN;
    response.once('finish', () =>
      timings.puts.push({ at, upstreamMs: t1 - t0, hookMs: t2 - t1, answerMs: now() - t2 })
    );
    return webThen.call(this, request, response, async status => {
      t1 = now();
      try {
        return await after(status);
      } finally {
        t2 = now();
      }
    });
  };
  // Which relayed save a \`saved\` belongs to (saves of different paths overlap).
  const current = new (require('node:async_hooks').AsyncLocalStorage)();
  const saved = ArchiveIntake.prototype.saved;
  ArchiveIntake.prototype.saved = async function (...args) {
    const record = current.getStore();
    const t0 = now();
    try {
      return await saved.apply(this, args);
    } finally {
      if (record) record.savedMs = now() - t0;
    }
  };
  const relayedSave = ArchiveIntake.prototype.relayedSave;
  ArchiveIntake.prototype.relayedSave = async function (...args) {
    const record = { at: Date.now(), ms: NaN, savedMs: NaN };
    const t0 = now();
    try {
      return await current.run(record, () => relayedSave.apply(this, args));
    } finally {
      record.ms = now() - t0;
      timings.relayed.push(record);
    }
  };
  const append = ArchiveJournal.prototype.append;
  ArchiveJournal.prototype.append = async function (apiPath, content, options) {
    if (!options || options.durable === false) return append.call(this, apiPath, content, options);
    const at = Date.now();
    const t0 = now();
    try {
      return await append.call(this, apiPath, content, options);
    } finally {
      timings.appends.push({ at, ms: now() - t0 });
    }
  };
  process.on('exit', () => {
    fs.writeFileSync(path.join(${JSON.stringify(dir)}, process.pid + '.timings.json'), JSON.stringify(timings));
  });
}
`;
  await writeFile(file, script);
  return file;
}
