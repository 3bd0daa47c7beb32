/**
 * The set-up most integration specs share: a real MinIO (or versitygw) with versioned buckets and
 * an S3 client for looking into them, the real `jupyter-store lab` archiving to one of those buckets, and
 * Chromium for the specs that drive Lab in a browser.
 *
 * {@link useObjectServer} and {@link useArchivingLab} register the `beforeAll` that starts these
 * and the `afterAll` that stops them in the describe block (or file) they are called in, and
 * return the running pieces; a spec's own hooks, declared after the call, run after these (jest
 * runs the hooks of a block in the order they were declared). {@link startArchivingGateway}
 * starts one more gateway on a server a spec already has.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import type { Browser } from 'playwright-core';
import { launchChromium } from './browser';
import {
  labDefaults,
  startGatewayProcess,
  stopGatewayAndJupyter,
  type IGatewayProcess,
  type IGatewayProcessOptions
} from './gateway';
import {
  createVersionedBucket,
  s3ClientFor,
  startObjectServerOfKind,
  type IObjectServer,
  type ObjectServerKind
} from './objectServers';

/** Options of {@link startArchivingGateway}. */
export interface IArchivingGatewayOptions extends Omit<IGatewayProcessOptions, 'command'> {
  /**
   * The flags that say which Jupyter to run, before every other flag: {@link labDefaults} (the
   * project venv) unless given, e.g. `ecosystemLabDefaults()`.
   */
  defaults?: readonly string[];
  /**
   * Where the endpoint and the bucket go: `flags` (`--StoreSettings.object_…`, the default) or
   * `environment` (`STORE_OBJECT_ENDPOINT_URL`, `STORE_OBJECT_BUCKET`). The credentials are
   * always in the environment, never on the command line.
   */
  settingsIn?: 'flags' | 'environment';
  /** Credentials other than the server's own (a gateway the server must refuse). */
  accessKeyId?: string;
  secretAccessKey?: string;
}

/**
 * Run `jupyter-store lab` archiving to `bucket` of `server` (which must exist: see
 * {@link createVersionedBucket}), with `options.args` after the archive's flags and
 * `options.env` over its variables.
 */
export function startArchivingGateway(
  server: IObjectServer,
  bucket: string,
  options: IArchivingGatewayOptions = {}
): Promise<IGatewayProcess> {
  const { defaults, settingsIn, accessKeyId, secretAccessKey, ...rest } = options;
  const inFlags = settingsIn !== 'environment';
  return startGatewayProcess({
    ...rest,
    args: [
      ...(defaults ?? labDefaults()),
      ...(inFlags
        ? [
            `--StoreSettings.object_endpoint_url=${server.endpoint}`,
            `--StoreSettings.object_bucket=${bucket}`
          ]
        : []),
      ...(options.args ?? [])
    ],
    env: {
      STORE_OBJECT_ACCESS_KEY_ID: accessKeyId ?? server.accessKeyId,
      STORE_OBJECT_SECRET_ACCESS_KEY: secretAccessKey ?? server.secretAccessKey,
      ...(inFlags
        ? {}
        : { STORE_OBJECT_ENDPOINT_URL: server.endpoint, STORE_OBJECT_BUCKET: bucket }),
      ...options.env
    }
  });
}

/** Options of {@link useObjectServer}. */
export interface IObjectServerRigOptions {
  /** Which server; MinIO unless given. */
  kind?: ObjectServerKind;
  /** Buckets to create, with versioning, once MinIO runs. */
  buckets?: readonly string[];
  /** Also launch Chromium, alongside the rest. */
  browser?: boolean;
  /** The timeout of the `beforeAll` and the `afterAll`; the file's default unless given. */
  timeoutMs?: number;
}

/** What {@link useObjectServer} started; each getter throws if `beforeAll` did not start it. */
export interface IObjectServerRig {
  readonly server: IObjectServer;
  /** An S3 client for {@link server}. */
  readonly s3: S3Client;
  /** Chromium, with the `browser` option only. */
  readonly browser: Browser;
}

/**
 * The gateway's options, or a function of the started server that prepares what the gateway needs
 * (objects in the bucket, directories) and returns them.
 */
export type ArchivingGatewaySetUp =
  | IArchivingGatewayOptions
  | ((rig: IObjectServerRig) => IArchivingGatewayOptions | Promise<IArchivingGatewayOptions>);

/** Options of {@link useArchivingLab}. */
export interface IArchivingLabOptions extends IObjectServerRigOptions {
  /** The bucket the gateway archives to; created with versioning before it starts. */
  bucket: string;
  /** The gateway's options (see {@link startArchivingGateway}); none by default. */
  gateway?: ArchivingGatewaySetUp;
}

/** What {@link useArchivingLab} started. */
export interface IArchivingLab extends IObjectServerRig {
  readonly gateway: IGatewayProcess;
  /** The gateway's exit code once `afterAll` stopped it, for a spec's own `afterAll`. */
  readonly exitCode: number | string | undefined;
}

/**
 * MinIO or `options.kind` (with `options.buckets`), an S3 client for it, and Chromium if asked, for the tests of
 * the current describe block (or file); all stopped after them.
 */
export function useObjectServer(options: IObjectServerRigOptions = {}): IObjectServerRig {
  return Private.useRig(options, options.buckets ?? [], undefined);
}

/**
 * {@link useObjectServer} with `options.bucket` created, and `jupyter-store lab` archiving to it
 * (see {@link startArchivingGateway}); the gateway is stopped first afterwards, and Jupyter's
 * process group killed if it did not exit cleanly.
 */
export function useArchivingLab(options: IArchivingLabOptions): IArchivingLab {
  return Private.useRig(options, [options.bucket, ...(options.buckets ?? [])], {
    bucket: options.bucket,
    setUp: options.gateway ?? {}
  });
}

namespace Private {
  /** Throw if `value` was not started. */
  export function started<T>(value: T | undefined, what: string): T {
    if (value === undefined) throw new Error(`beforeAll did not start ${what}`);
    return value;
  }

  /** Both `use…` functions: the object server, the buckets, the browser, and the gateway if asked. */
  export function useRig(
    options: IObjectServerRigOptions,
    buckets: readonly string[],
    lab: { bucket: string; setUp: ArchivingGatewaySetUp } | undefined
  ): IArchivingLab {
    let server: IObjectServer | undefined;
    let s3: S3Client | undefined;
    let browser: Browser | undefined;
    let gateway: IGatewayProcess | undefined;
    let exitCode: number | string | undefined;
    const rig: IArchivingLab = {
      get server() {
        return started(server, options.kind ?? 'minio');
      },
      get s3() {
        return started(s3, 'an S3 client');
      },
      get browser() {
        return started(browser, 'Chromium');
      },
      get gateway() {
        return started(gateway, 'the gateway');
      },
      get exitCode() {
        return exitCode;
      }
    };

    const startServers = async (): Promise<void> => {
      server = await startObjectServerOfKind(options.kind ?? 'minio');
      s3 = s3ClientFor(server);
      for (const bucket of buckets) await createVersionedBucket(server, bucket);
      if (lab) {
        const gatewayOptions = typeof lab.setUp === 'function' ? await lab.setUp(rig) : lab.setUp;
        gateway = await startArchivingGateway(server, lab.bucket, gatewayOptions);
      }
    };

    beforeAll(async () => {
      // Chromium's start-up does not depend on the servers': both at once.
      const [servers, launched] = await Promise.allSettled([
        startServers(),
        options.browser ? launchChromium() : Promise.resolve(undefined)
      ]);
      if (launched.status === 'fulfilled') browser = launched.value;
      if (servers.status === 'rejected') throw servers.reason;
      if (launched.status === 'rejected') throw launched.reason;
    }, options.timeoutMs);

    afterAll(async () => {
      await browser?.close().catch(() => undefined);
      if (gateway) exitCode = await stopGatewayAndJupyter(gateway);
      s3?.destroy();
      await server?.dispose();
    }, options.timeoutMs);

    return rig;
  }
}
