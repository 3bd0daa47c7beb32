#!/usr/bin/env node
/**
 * Stage the jupyter-store server for the two distributions that `scripts/package.sh` builds,
 * from the packages `npm run build` compiled:
 *
 *   build/package/server/    what the Python package carries as `jupyter_store/server/`:
 *     package.json           name and version (the CLI's --version reads it)
 *     lib/cli/main.js        the CLI and everything it loads, its npm dependencies included, as one
 *                            esbuild bundle (CommonJS, not minified, no source maps)
 *     lib/cli/…              other entry points the bundle loads by path (the signature worker)
 *     static/                the clone landing pages' CSS and JavaScript
 *     python/                the jupyter_store_upstream server extension and its config, which
 *                            `jupyter-store lab` hands to the Jupyter it starts
 *     node_modules/          what cannot be bundled: @parcel/watcher's prebuilt native binaries,
 *                            one package per Linux and macOS platform, and packages that load
 *                            files of their own at run time
 *     third-party-licenses.txt  the licences of everything bundled or copied
 *   build/package/upstream/  jupyter_store_upstream again, for the wheel's top level, so that a
 *                            Jupyter Server that the gateway fronts with `serve` can enable it
 *   build/package/npm/       the same bundle as an npm package: the prebuilt JupyterLab extension
 *                            inside (labextensions/), the platform binaries as optional
 *                            dependencies (npm installs the one that fits) and the unbundlable
 *                            packages as dependencies, all at the versions of package-lock.json.
 *
 * Nothing of the build machine ends up in what is staged: the bundle names its modules by paths
 * relative to the repository, and this script fails if the repository's absolute path appears
 * in any staged file.
 *
 * Usage: node scripts/packaging/stage.js   (after `npm run build`)
 */
'use strict';

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');
const SERVER_DIR = path.join(ROOT, 'packages', 'server');
const LABEXTENSION_DIR = path.join(SERVER_DIR, 'labextensions', '@jupyter-store', 'labextension');
const STAGE_DIR = path.join(ROOT, 'build', 'package');
/** Platform packages fetched with `npm pack`, kept between runs (build/ is not in git). */
const FETCH_CACHE_DIR = path.join(ROOT, 'build', 'cache', 'npm-pack');

/**
 * npm packages that must stay out of the bundle because they load files of their own at run
 * time beside their JavaScript (none today: @parcel/watcher's binaries are shipped as its
 * platform packages). Only those the server still depends on are used.
 */
const UNBUNDLABLE = [];

/** The @parcel/watcher platforms shipped: those where the gateway runs (it needs POSIX). */
const WATCHER_PLATFORMS = /^@parcel\/watcher-(linux|darwin)-/;

/** Files that never go into a distribution. */
const SKIPPED = /(^|\/)(__pycache__|\.DS_Store)$|\.(pyc|map|d\.ts)$/;

function fail(message) {
  process.stderr.write(`stage: ${message}\n`);
  process.exit(1);
}

function readJson(file) {
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

function writeJson(file, value) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

/** Copy a directory tree, leaving out {@link SKIPPED} files; symlinks are followed. */
function copyTree(from, to) {
  fs.cpSync(from, to, {
    recursive: true,
    dereference: true,
    filter: source => !SKIPPED.test(source.split(path.sep).join('/'))
  });
}

/** The directory of an installed npm package, as Node would resolve it from `fromDir`. */
function packageDir(name, fromDir) {
  for (let dir = fromDir; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', ...name.split('/'));
    if (fs.existsSync(path.join(candidate, 'package.json'))) return fs.realpathSync(candidate);
    if (path.dirname(dir) === dir) fail(`npm package ${name} is not installed: run npm install`);
  }
}

/** The licence files of a package directory (LICENSE, LICENCE, COPYING, NOTICE, any case). */
function licenseFiles(dir) {
  return fs
    .readdirSync(dir)
    .filter(name => /^(licen[cs]e|copying|notice)([.-].*)?$/i.test(name))
    .sort()
    .map(name => path.join(dir, name));
}

/**
 * Bundle the CLI with esbuild. Returns the directories of the npm packages it took code from.
 * The signature worker is a second entry point: the bundled code starts it by the path of
 * `signatureWorker.js` beside itself, so it goes into lib/cli/ too.
 */
async function bundle(outDir, external) {
  let esbuild;
  try {
    esbuild = require(packageDir('esbuild', ROOT));
  } catch (error) {
    fail(`cannot load esbuild (a devDependency): ${error.message}`);
  }
  const entryPoints = [{ in: path.join(SERVER_DIR, 'lib', 'cli', 'main.js'), out: 'cli/main' }];
  // Looked up by its source: lib/ may still hold a worker whose source is gone.
  if (fs.existsSync(path.join(SERVER_DIR, 'src', 'contents', 'trust', 'signatureWorker.ts'))) {
    const worker = path.join(SERVER_DIR, 'lib', 'contents', 'trust', 'signatureWorker.js');
    entryPoints.push({ in: worker, out: 'cli/signatureWorker' });
  }
  const minimumNode = /(\d+\.\d+)/.exec(
    readJson(path.join(SERVER_DIR, 'package.json')).engines.node
  );
  const result = await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints,
    outdir: path.join(outDir, 'lib'),
    bundle: true,
    platform: 'node',
    format: 'cjs',
    target: `node${minimumNode ? minimumNode[1] : '20'}`,
    external,
    // Readable stack traces in bug reports; the licences go into third-party-licenses.txt.
    minify: false,
    sourcemap: false,
    legalComments: 'none',
    metafile: true,
    logLevel: 'warning'
  });
  const packages = new Set();
  for (const input of Object.keys(result.metafile.inputs)) {
    const match = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (match) packages.add(fs.realpathSync(path.join(ROOT, match[1])));
  }
  return [...packages];
}

/**
 * The directory of `name@version`: the installed one when it is that version, else fetched with
 * `npm pack` from the registry into the cache (packages for other platforms are not installed).
 */
function platformPackage(name, version) {
  const installed = path.join(ROOT, 'node_modules', ...name.split('/'));
  if (
    fs.existsSync(path.join(installed, 'package.json')) &&
    readJson(path.join(installed, 'package.json')).version === version
  ) {
    return installed;
  }
  const unpacked = path.join(FETCH_CACHE_DIR, `${name.replace('/', '+')}@${version}`);
  if (fs.existsSync(path.join(unpacked, 'package.json'))) return unpacked;
  fs.mkdirSync(FETCH_CACHE_DIR, { recursive: true });
  const packed = spawnSync(
    'npm',
    ['pack', `${name}@${version}`, '--json', '--pack-destination', FETCH_CACHE_DIR],
    { cwd: FETCH_CACHE_DIR, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }
  );
  if (packed.status !== 0) fail(`npm pack ${name}@${version} failed`);
  const tarball = path.join(FETCH_CACHE_DIR, JSON.parse(packed.stdout)[0].filename);
  const partial = `${unpacked}.partial`;
  fs.rmSync(partial, { recursive: true, force: true });
  fs.mkdirSync(partial, { recursive: true });
  const untar = spawnSync('tar', ['-xzf', tarball, '-C', partial, '--strip-components=1'], {
    stdio: 'inherit'
  });
  if (untar.status !== 0) fail(`could not unpack ${tarball}`);
  fs.rmSync(tarball);
  fs.renameSync(partial, unpacked);
  return unpacked;
}

/** The licence section of one package for third-party-licenses.txt. */
function licenseSection(dir) {
  const manifest = readJson(path.join(dir, 'package.json'));
  const lines = [
    `${manifest.name}@${manifest.version} (${manifest.license ?? 'no licence field'})`
  ];
  const files = licenseFiles(dir);
  if (files.length === 0) lines.push('(the package ships no licence file)');
  for (const file of files) lines.push('', fs.readFileSync(file, 'utf8').trim());
  return lines.join('\n');
}

function writeLicenses(file, packageDirs) {
  const sections = [...new Set(packageDirs)]
    .map(dir => ({ dir, name: readJson(path.join(dir, 'package.json')).name }))
    .sort((a, b) => a.name.localeCompare(b.name))
    .map(({ dir }) => licenseSection(dir));
  const header =
    'jupyter-store bundles or ships the following npm packages; their licences follow.\n';
  fs.writeFileSync(file, `${header}\n${sections.join(`\n\n${'-'.repeat(79)}\n\n`)}\n`);
}

/** Every file below `dir`. */
function walk(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap(entry => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? walk(full) : [full];
  });
}

/** Fail if a staged file names the repository's absolute path. */
function checkNoBuildPaths(dir) {
  for (const file of walk(dir)) {
    if (fs.readFileSync(file).toString('latin1').includes(ROOT)) {
      fail(`${path.relative(ROOT, file)} contains the path of the repository, ${ROOT}`);
    }
  }
}

async function main() {
  const serverManifest = readJson(path.join(SERVER_DIR, 'package.json'));
  for (const required of [
    path.join(SERVER_DIR, 'lib', 'cli', 'main.js'),
    path.join(LABEXTENSION_DIR, 'package.json')
  ]) {
    if (!fs.existsSync(required))
      fail(`${path.relative(ROOT, required)} is missing: run npm run build`);
  }

  const external = UNBUNDLABLE.filter(name => serverManifest.dependencies[name] !== undefined);
  const watcherManifest = readJson(
    path.join(packageDir('@parcel/watcher', SERVER_DIR), 'package.json')
  );
  const watcherPlatforms = Object.entries(watcherManifest.optionalDependencies ?? {}).filter(
    ([name]) => WATCHER_PLATFORMS.test(name)
  );
  if (watcherPlatforms.length === 0) fail('@parcel/watcher lists no platform packages');

  fs.rmSync(STAGE_DIR, { recursive: true, force: true });
  const serverStage = path.join(STAGE_DIR, 'server');
  const npmStage = path.join(STAGE_DIR, 'npm');

  // The bundle, then what the bundle reads beside itself.
  const bundled = await bundle(serverStage, external);
  copyTree(path.join(SERVER_DIR, 'static'), path.join(serverStage, 'static'));
  copyTree(path.join(SERVER_DIR, 'python'), path.join(serverStage, 'python'));
  copyTree(
    path.join(SERVER_DIR, 'python', 'jupyter_store_upstream'),
    path.join(STAGE_DIR, 'upstream', 'jupyter_store_upstream')
  );
  const common = {
    name: serverManifest.name,
    version: serverManifest.version,
    description: serverManifest.description,
    license: serverManifest.license
  };

  // The Python package's copy: every platform's watcher binary and the unbundlable packages in
  // node_modules/, where the bundle's require() finds them.
  const shipped = [];
  for (const [name, version] of watcherPlatforms) {
    const dir = platformPackage(name, version);
    copyTree(dir, path.join(serverStage, 'node_modules', ...name.split('/')));
    shipped.push(dir);
  }
  const externalVersions = {};
  for (const name of external) {
    const dir = packageDir(name, SERVER_DIR);
    const manifest = readJson(path.join(dir, 'package.json'));
    if (Object.keys(manifest.dependencies ?? {}).length > 0) {
      fail(`${name} has dependencies of its own: ship them too, or bundle it`);
    }
    copyTree(dir, path.join(serverStage, 'node_modules', ...name.split('/')));
    externalVersions[name] = manifest.version;
    shipped.push(dir);
  }
  writeJson(path.join(serverStage, 'package.json'), { ...common, private: true });
  writeLicenses(path.join(serverStage, 'third-party-licenses.txt'), [...bundled, ...shipped]);

  // The npm package: the same bundle and files, the Lab extension inside, and npm left to
  // install the one watcher binary that fits and the unbundlable packages.
  for (const entry of ['lib', 'static', 'python']) {
    copyTree(path.join(serverStage, entry), path.join(npmStage, entry));
  }
  copyTree(
    LABEXTENSION_DIR,
    path.join(npmStage, 'labextensions', '@jupyter-store', 'labextension')
  );
  writeLicenses(path.join(npmStage, 'third-party-licenses.txt'), bundled);
  fs.copyFileSync(path.join(ROOT, 'README.md'), path.join(npmStage, 'README.md'));
  writeJson(path.join(npmStage, 'package.json'), {
    ...common,
    keywords: ['jupyter', 'jupyterlab', 'jupyterlab-extension', 's3', 'notebook'],
    bin: serverManifest.bin,
    files: ['lib', 'static', 'python', 'labextensions', 'third-party-licenses.txt'],
    engines: serverManifest.engines,
    os: ['linux', 'darwin'],
    dependencies: externalVersions,
    optionalDependencies: Object.fromEntries(watcherPlatforms)
  });

  checkNoBuildPaths(STAGE_DIR);
  process.stdout.write(
    `staged ${path.relative(ROOT, serverStage)} and ${path.relative(ROOT, npmStage)} ` +
      `(${bundled.length} npm packages bundled; external: ${external.join(', ') || 'none'}; ` +
      `watcher platforms: ${watcherPlatforms.length})\n`
  );
}

main().catch(error => fail(error.stack ?? String(error)));
