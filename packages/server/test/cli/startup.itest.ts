/**
 * The store commands, which a kernel runs often, start without the server's code: the built
 * CLI loads the gateway, the logger and the settings only for the commands that need them.
 */
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI } from '../support/gateway';

/** The files the CLI loads with these arguments, as it leaves them (help, usage errors). */
function loadedBy(args: string[]): { status: number | null; files: string[] } {
  const script = `
    const Module = require('node:module');
    const load = Module._load;
    const files = new Set();
    Module._load = function (request, parent, isMain) {
      try { files.add(Module._resolveFilename(request, parent, isMain)); } catch {}
      return load.apply(this, arguments);
    };
    process.on('exit', () => process.stderr.write(JSON.stringify([...files])));
    process.argv = [process.argv[0], ${JSON.stringify(CLI)}, ...${JSON.stringify(args)}];
    require(${JSON.stringify(CLI)});
  `;
  const result = spawnSync(process.execPath, ['-e', script], {
    encoding: 'utf8',
    timeout: 30_000,
    env: { ...process.env, JUPYTER_RUNTIME_DIR: join(tmpdir(), 'startup-itest-unused-runtime') }
  });
  const files = JSON.parse(result.stderr.slice(result.stderr.lastIndexOf('['))) as string[];
  return { status: result.status, files };
}

/** What only `lab`, `serve`, `enable` and `disable` need. */
const SERVER_CODE = [
  /\/packages\/server\/lib\/gateway\/(?!logLevels\.js$)/,
  /\/packages\/server\/lib\/settings\/(?!commandLine\.js$|settingsError\.js$)/,
  /\/packages\/server\/lib\/(contents|archive|storage|api)\//,
  /\/node_modules\/(pino|express|@aws-sdk)\//
];

test.each([
  [['--help']],
  [['clone', '--help']],
  [['clone']],
  [['lab', '--help']],
  [['singleuser', '--help']],
  [['frobnicate']]
])('jupyter-store %j loads none of the server code', args => {
  const { status, files } = loadedBy(args);
  expect(status).toBe(args.includes('--help') ? 0 : 2);
  expect(files.some(file => file.endsWith('/packages/server/lib/cli/program.js'))).toBe(true);
  expect(files.filter(file => SERVER_CODE.some(pattern => pattern.test(file)))).toEqual([]);
});

test('jupyter-store lab loads the gateway when it runs', () => {
  const { status, files } = loadedBy(['lab', '--port', 'abc']);
  expect(status).toBe(2);
  expect(files.some(file => file.endsWith('/packages/server/lib/gateway/start.js'))).toBe(true);
});

test('jupyter-store singleuser loads its module when it runs', () => {
  const { status, files } = loadedBy(['singleuser', '--activity-interval', 'never']);
  expect(status).toBe(2);
  expect(files.some(file => file.endsWith('/packages/server/lib/hub/singleuser.js'))).toBe(true);
});
