/**
 * Stop with a clear message when this Node is older than the `engines` range of package.json
 * (`>=MAJOR.MINOR`). jest.config.js and the Playwright config load it first, so that `npx jest` or
 * `npx playwright test` typed in a shell whose `node` is another one says what to do, instead of
 * failing somewhere inside on a module that Node lacks.
 */
const { engines } = require('../package.json');

const wanted = /^>=\s*(\d+)\.(\d+)/.exec(engines.node);
if (!wanted) throw new Error(`package.json: engines.node is not '>=MAJOR.MINOR': ${engines.node}`);
const [major, minor] = process.versions.node.split('.').map(Number);
const [wantedMajor, wantedMinor] = [Number(wanted[1]), Number(wanted[2])];
if (major < wantedMajor || (major === wantedMajor && minor < wantedMinor)) {
  process.stderr.write(
    `error: jupyter-store needs Node ${engines.node}, and this is Node ${process.version} ` +
      `(${process.execPath}).\n` +
      '       Run `source scripts/node-env.sh` first: it puts the Node of the project venv ' +
      '(Node 24, installed by `bash scripts/setup.sh`) first on PATH.\n' +
      '       The npm scripts that run code (npm test, npm run test:*, npm run bench:*) do that ' +
      'themselves.\n'
  );
  process.exit(1);
}
