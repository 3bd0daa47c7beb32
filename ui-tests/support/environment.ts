/**
 * What the global set-up tells the tests, through environment variables (the way Playwright
 * passes values from its global set-up to the test workers).
 */
export interface IUiTestEnvironment {
  /** The gateway, with the store API and MinIO behind it, ending in `/`. */
  gatewayUrl: string;
  /** The gateway's root directory. */
  rootDir: string;
  /** The gateway's Jupyter config directory, where `jupyter store enable --user` writes. */
  configDir: string;
  /** The fs-clone base directory. */
  fsCloneDir: string;
  /** A plain JupyterLab (no gateway, no store API) that loads the extension too. */
  plainLabUrl: string;
  /** A second gateway whose bucket does not exist: a store API with archiving off. */
  unconfiguredGatewayUrl: string;
  /** MinIO. */
  objectEndpoint: string;
  objectAccessKeyId: string;
  objectSecretAccessKey: string;
  objectBucket: string;
  /** MinIO's process id (the status bar test pauses it). */
  objectServerPid: number;
}

const NAMES: Record<keyof IUiTestEnvironment, string> = {
  gatewayUrl: 'STORE_UI_GATEWAY_URL',
  rootDir: 'STORE_UI_ROOT_DIR',
  configDir: 'STORE_UI_CONFIG_DIR',
  fsCloneDir: 'STORE_UI_FS_CLONE_DIR',
  plainLabUrl: 'STORE_UI_PLAIN_LAB_URL',
  unconfiguredGatewayUrl: 'STORE_UI_UNCONFIGURED_GATEWAY_URL',
  objectEndpoint: 'STORE_UI_OBJECT_ENDPOINT',
  objectAccessKeyId: 'STORE_UI_OBJECT_ACCESS_KEY_ID',
  objectSecretAccessKey: 'STORE_UI_OBJECT_SECRET_ACCESS_KEY',
  objectBucket: 'STORE_UI_OBJECT_BUCKET',
  objectServerPid: 'STORE_UI_OBJECT_SERVER_PID'
};

/** Publish the environment to the test workers. */
export function exportEnvironment(values: IUiTestEnvironment): void {
  for (const [key, name] of Object.entries(NAMES)) {
    process.env[name] = String(values[key as keyof IUiTestEnvironment]);
  }
  // Galata's base URL, to which it appends `/lab`.
  process.env.TARGET_URL = values.gatewayUrl.replace(/\/+$/, '');
}

/** Read it in a test worker. @throws when the global set-up did not run. */
export function uiTestEnvironment(): IUiTestEnvironment {
  const read = (key: keyof IUiTestEnvironment): string => {
    const value = process.env[NAMES[key]];
    if (!value) throw new Error(`${NAMES[key]} is not set: run the UI tests with their config`);
    return value;
  };
  return {
    gatewayUrl: read('gatewayUrl'),
    rootDir: read('rootDir'),
    configDir: read('configDir'),
    fsCloneDir: read('fsCloneDir'),
    plainLabUrl: read('plainLabUrl'),
    unconfiguredGatewayUrl: read('unconfiguredGatewayUrl'),
    objectEndpoint: read('objectEndpoint'),
    objectAccessKeyId: read('objectAccessKeyId'),
    objectSecretAccessKey: read('objectSecretAccessKey'),
    objectBucket: read('objectBucket'),
    objectServerPid: Number(read('objectServerPid'))
  };
}
