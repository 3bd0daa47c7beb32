/**
 * Bundle `lib/` (compiled by `tsc -b`) into a prebuilt JupyterLab extension with @jupyter/builder
 * (Rspack, module federation), against the JupyterLab 4.6 core manifest that @jupyterlab/core-meta
 * ships: the shared singletons come from that manifest, so no Python is involved.
 *
 * The output directory is the package's `jupyterlab.outputDir`: the `labextensions/` directory of
 * the server package, which `jupyter-store lab` hands to JupyterLab.
 *
 * `--development` builds unminified, with source maps.
 */
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const packageDir = path.resolve(__dirname, '..');
const builder = require.resolve('@jupyter/builder/lib/build-labextension.js', {
  paths: [packageDir]
});
const corePackageFile = require.resolve('@jupyterlab/core-meta/core.package.json', {
  paths: [packageDir]
});
const args = [builder, '--core-package-file', corePackageFile];
if (process.argv.includes('--development')) args.push('--development');
args.push(packageDir);

// The builder's progress lines are shown only when it fails.
const result = spawnSync(process.execPath, args, {
  stdio: ['ignore', 'pipe', 'pipe'],
  maxBuffer: 64 * 1024 * 1024
});
if (result.error) throw result.error;
if (result.status !== 0) {
  process.stdout.write(result.stdout);
  process.stderr.write(result.stderr);
  process.exit(result.status ?? 1);
}
