/**
 * Start what the UI tests run against, once for the whole run:
 *
 * - MinIO on a loopback port, with a versioned bucket;
 * - the real gateway (`jupyter-store lab`, UI mode: `--no-auth --disable-check-xsrf`) archiving
 *   to that bucket, with a file-system clone directory and publishing enabled through the real
 *   `jupyter store enable --user`;
 * - a second gateway whose bucket does not exist, for "archiving is not configured";
 * - a plain JupyterLab without the gateway, for "no store API behind the server".
 *
 * Both JupyterLabs load the prebuilt extension from `packages/server/labextensions` and Galata's
 * helper extension (from the JupyterLab in the project venv, whose version it must match), with
 * the application exposed in the browser as Galata expects. Returns the teardown.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CLI,
  labDefaults,
  startGatewayProcess,
  type IGatewayProcess
} from '../../packages/server/test/support/gateway';
import { isolatedEnv, REPO_ROOT, VENV_DIR } from '../../packages/server/test/support/jupyterServer';
import {
  createVersionedBucket,
  startMinio,
  type IObjectServer
} from '../../packages/server/test/support/objectServers';
import { exportEnvironment } from './environment';
import { startPlainLab } from './plainLab';
import { notebookJson } from './notebooks';

/** Where `npm run build` puts the prebuilt extension. */
export const LABEXTENSIONS_DIR = join(REPO_ROOT, 'packages', 'server', 'labextensions');

const BUCKET = 'notebooks';

/** The directory that holds `@jupyterlab/galata-extension` in the venv's JupyterLab. */
function galataExtensionDir(): string {
  const python = join(VENV_DIR, 'bin', 'python');
  const found = spawnSync(
    python,
    ['-c', 'import os, jupyterlab.galata as g; print(os.path.dirname(g.__file__))'],
    { encoding: 'utf8', timeout: 60_000 }
  );
  const dir = found.stdout?.trim();
  if (found.status !== 0 || !dir || !existsSync(join(dir, '@jupyterlab', 'galata-extension'))) {
    throw new Error(
      `Galata's helper extension was not found in ${VENV_DIR}'s JupyterLab: ${found.stderr ?? ''}`
    );
  }
  return dir;
}

/**
 * `--LabApp.…` arguments for every JupyterLab of the tests: Galata's helper extension, and the
 * app exposed to the page. jupyter-store's own extension is not named: the gateway must load it
 * by itself, as it does for users.
 */
export function labArguments(galataDir: string): string[] {
  return [`--LabApp.extra_labextensions_path=${galataDir}`, '--LabApp.expose_app_in_browser=True'];
}

export default async function globalSetup(): Promise<() => Promise<void>> {
  if (!existsSync(join(LABEXTENSIONS_DIR, '@jupyter-store', 'labextension', 'package.json'))) {
    throw new Error(`${LABEXTENSIONS_DIR} has no built extension: run 'npm run build' first`);
  }
  const galataDir = galataExtensionDir();
  const cleanups: (() => Promise<unknown>)[] = [];
  const teardown = async (): Promise<void> => {
    for (const cleanup of cleanups.reverse()) {
      await cleanup().catch(error => console.error('UI test teardown:', error));
    }
  };
  try {
    const minio: IObjectServer = await startMinio();
    cleanups.push(() => minio.dispose());
    await createVersionedBucket(minio, BUCKET);

    const fsCloneDir = await mkdtemp(join(tmpdir(), 'store-ui-fs-clone-'));
    cleanups.push(() => rm(fsCloneDir, { recursive: true, force: true }));
    await mkdir(join(fsCloneDir, 'shared'));
    await writeFile(
      join(fsCloneDir, 'shared', 'template.ipynb'),
      notebookJson(['# Team template', 'print("from the shared directory")'])
    );

    const gateway: IGatewayProcess = await startGatewayProcess({
      args: [
        ...labDefaults(),
        '--no-auth',
        '--disable-check-xsrf',
        `--StoreSettings.object_endpoint_url=${minio.endpoint}`,
        `--StoreSettings.object_bucket=${BUCKET}`,
        `--StoreSettings.fs_cloning_basedir=${fsCloneDir}`,
        // Short enough that the status bar test sees a failure, and then the recovery, quickly.
        '--StoreSettings.object_timeout_seconds=4',
        '--StoreSettings.archive_retry_max_seconds=2',
        '--',
        ...labArguments(galataDir)
      ],
      env: {
        STORE_OBJECT_ACCESS_KEY_ID: minio.accessKeyId,
        STORE_OBJECT_SECRET_ACCESS_KEY: minio.secretAccessKey
      }
    });
    cleanups.push(async () => {
      const code = await gateway.stop();
      if (code !== 0)
        console.error(`gateway exited with ${code}:\n${gateway.stderr().slice(-4000)}`);
    });
    const enable = spawnSync(process.execPath, [CLI, 'enable', '--user'], {
      env: isolatedEnv(gateway.state),
      encoding: 'utf8',
      timeout: 30_000
    });
    if (enable.status !== 0) {
      throw new Error(`jupyter-store enable --user failed: ${enable.stderr}${enable.stdout}`);
    }

    // Started side by side: each takes a while to come up.
    const [plainLab, unconfigured] = await Promise.all([
      startPlainLab([
        // The gateway loads our extension by itself; a plain JupyterLab is told where it is.
        `--LabApp.extra_labextensions_path=${LABEXTENSIONS_DIR}`,
        ...labArguments(galataDir)
      ]).then(started => {
        cleanups.push(() => started.stop());
        return started;
      }),
      startGatewayProcess({
        args: [
          ...labDefaults(),
          '--no-auth',
          '--disable-check-xsrf',
          `--StoreSettings.object_endpoint_url=${minio.endpoint}`,
          '--StoreSettings.object_bucket=no-such-bucket',
          '--',
          ...labArguments(galataDir)
        ],
        env: {
          STORE_OBJECT_ACCESS_KEY_ID: minio.accessKeyId,
          STORE_OBJECT_SECRET_ACCESS_KEY: minio.secretAccessKey
        }
      }).then(started => {
        cleanups.push(() => started.stop());
        return started;
      })
    ]);

    exportEnvironment({
      gatewayUrl: gateway.url(''),
      rootDir: gateway.rootDir,
      configDir: gateway.state.config,
      fsCloneDir,
      plainLabUrl: plainLab.url,
      unconfiguredGatewayUrl: unconfigured.url(''),
      objectEndpoint: minio.endpoint,
      objectAccessKeyId: minio.accessKeyId,
      objectSecretAccessKey: minio.secretAccessKey,
      objectBucket: BUCKET,
      objectServerPid: minio.pid ?? 0
    });
  } catch (error) {
    await teardown();
    throw error;
  }
  return teardown;
}
