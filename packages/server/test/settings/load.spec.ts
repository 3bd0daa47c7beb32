import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  jupyterConfigPath,
  loadStoreSettings,
  redactSettings,
  SettingsError,
  splitSettingsFlags,
  storageMode
} from '../../src/settings';
import { temporarySettingsHome } from '../support/settingsHome';

describe('#loadStoreSettings()', () => {
  let home: string;
  let env: NodeJS.ProcessEnv;

  beforeEach(() => ({ home, env } = temporarySettingsHome()));

  afterEach(() => rmSync(home, { recursive: true, force: true }));

  function writeConfig(
    dir: string,
    settings: Record<string, unknown>,
    name = 'jupyter_store_config.json'
  ): string {
    mkdirSync(dir, { recursive: true });
    const file = join(dir, name);
    writeFileSync(file, JSON.stringify({ StoreSettings: settings }));
    return file;
  }

  test('every field has the specification’s default', () => {
    const { settings } = loadStoreSettings({ env });
    expect(settings).toMatchObject({
      workspace_prefix: 'workspace',
      published_prefix: 'published',
      object_region_name: 'us-east-1',
      object_bucket: '',
      max_threads: 16,
      enable_object_cloning: true,
      fs_cloning_basedir: ''
    });
    expect(settings.object_access_key_id).toBeUndefined();
    expect(settings.object_secret_access_key).toBeUndefined();
    expect(settings.object_endpoint_url).toBeUndefined();
    expect(settings.journal_dir).toBe(join(home, 'data', 'jupyter-store', 'journal'));
    expect(settings.local_store_dir).toBe(join(home, 'data', 'jupyter-store', 'objects'));
    expect(storageMode(settings)).toBe('embedded');
  });

  test('flags beat the environment, which beats --config, which beats the config path', () => {
    const sysPrefix = join(home, 'venv');
    writeConfig(join(sysPrefix, 'etc', 'jupyter'), {
      object_bucket: 'from-env-dir',
      workspace_prefix: 'env-dir',
      published_prefix: 'env-published',
      max_threads: 2
    });
    writeConfig(join(home, 'user'), { object_bucket: 'from-user', workspace_prefix: 'user' });
    const configFile = writeConfig(
      join(home, 'elsewhere'),
      { object_bucket: 'from-config', max_threads: 3 },
      'server.json'
    );
    const { settings, origins } = loadStoreSettings({
      env: {
        ...env,
        STORE_OBJECT_BUCKET: 'from-environment',
        STORE_OBJECT_REGION_NAME: 'eu-west-1'
      },
      sysPrefix,
      configFile,
      flags: { object_region_name: 'eu-central-1' }
    });
    expect(settings.object_bucket).toBe('from-environment');
    expect(settings.object_region_name).toBe('eu-central-1');
    expect(settings.max_threads).toBe(3);
    expect(settings.workspace_prefix).toBe('user');
    expect(settings.published_prefix).toBe('env-published');
    expect(origins.object_bucket).toBe('the environment');
    expect(origins.max_threads).toBe(configFile);
    expect(storageMode(settings)).toBe('s3');
  });

  test('clone_buckets: unset by default (any bucket), else a list from a flag or a file', () => {
    expect(loadStoreSettings({ env }).settings.clone_buckets).toBeUndefined();
    const fromFlag = loadStoreSettings({ env, flags: { clone_buckets: ' shared-a, shared.b ' } });
    expect(fromFlag.settings.clone_buckets).toEqual(['shared-a', 'shared.b']);
    const fromJson = loadStoreSettings({ env, flags: { clone_buckets: '["shared-a"]' } });
    expect(fromJson.settings.clone_buckets).toEqual(['shared-a']);
    // Set but empty: no bucket besides object_bucket.
    expect(loadStoreSettings({ env, flags: { clone_buckets: '' } }).settings.clone_buckets).toEqual(
      []
    );
    writeConfig(join(home, 'user'), { clone_buckets: ['from-config'] });
    expect(loadStoreSettings({ env }).settings.clone_buckets).toEqual(['from-config']);
  });

  test('named_prefix: `named` by default, apart from the other prefixes segment by segment', () => {
    expect(loadStoreSettings({ env }).settings.named_prefix).toBe('named');
    // `named` is not inside `named2`, nor `workspace` inside `workspace-named`.
    const beside = loadStoreSettings({
      env,
      flags: { named_prefix: 'workspace-named', published_prefix: 'named2' }
    });
    expect(beside.settings.named_prefix).toBe('workspace-named');
    // An empty published_prefix (publishing off) overlaps nothing.
    const { settings } = loadStoreSettings({ env, flags: { published_prefix: '' } });
    expect(settings.named_prefix).toBe('named');
  });

  test('command-line values are coerced as traitlets would', () => {
    const { settings } = loadStoreSettings({
      env,
      flags: { max_threads: '4', enable_object_cloning: 'False' }
    });
    expect(settings.max_threads).toBe(4);
    expect(settings.enable_object_cloning).toBe(false);
  });

  test.each([
    [
      { max_threads: '0' },
      /StoreSettings\.max_threads \(from the command line\) must be at least 1/
    ],
    [{ max_threads: 'many' }, /max_threads .*whole number/],
    [{ object_endpoint_url: 'ftp://x' }, /object_endpoint_url .*http/],
    [{ object_bucket: 'Not_A_Bucket' }, /object_bucket .*bucket name/],
    [{ fs_cloning_basedir: 'relative/dir' }, /fs_cloning_basedir .*absolute/],
    [{ enable_object_cloning: 'maybe' }, /enable_object_cloning .*true or false/],
    [{ object_checksums: 'sometimes' }, /object_checksums/],
    [{ object_access_key_id: 'AKIAEXAMPLE' }, /object_secret_access_key .*both/],
    [{ clone_buckets: 'ok-bucket,Not_A_Bucket' }, /clone_buckets .*bucket names/],
    [{ clone_buckets: '["ok-bucket", 3]' }, /clone_buckets/],
    [{ no_such_setting: '1' }, /no_such_setting .*not a setting/],
    [{ named_prefix: '/' }, /named_prefix .*must not be empty/],
    [{ named_prefix: 'workspace' }, /named_prefix .*apart from workspace_prefix.*equals/],
    [{ named_prefix: 'workspace/named/' }, /named_prefix .*apart from workspace_prefix.*is inside/],
    [
      { named_prefix: 'team', workspace_prefix: 'team/alice' },
      /named_prefix .*apart from workspace_prefix.*contains/
    ],
    [{ named_prefix: '/published' }, /named_prefix .*apart from published_prefix.*equals/]
  ])('%j stops start-up with the field and the reason', (flags, message) => {
    expect(() => loadStoreSettings({ env, flags })).toThrow(SettingsError);
    expect(() => loadStoreSettings({ env, flags })).toThrow(message);
  });

  test('an error about a credential never repeats the credential', () => {
    let error: Error | undefined;
    try {
      loadStoreSettings({ env: { ...env, STORE_OBJECT_ACCESS_KEY_ID: 'AKIASECRETVALUE' } });
    } catch (caught) {
      error = caught as Error;
    }
    expect(error).toBeInstanceOf(SettingsError);
    expect(error?.message).not.toContain('AKIASECRETVALUE');
  });

  test('a broken config file is named', () => {
    mkdirSync(join(home, 'user'), { recursive: true });
    writeFileSync(join(home, 'user', 'jupyter_store_config.json'), '{"StoreSettings": ');
    expect(() => loadStoreSettings({ env })).toThrow(
      /jupyter_store_config\.json\) is not valid JSON/
    );
  });

  test('a missing --config file is an error, a Python one is left to Jupyter', () => {
    expect(() => loadStoreSettings({ env, configFile: join(home, 'nope.json') })).toThrow(
      /cannot be read/
    );
    expect(() =>
      loadStoreSettings({ env, configFile: join(home, 'jupyter_server_config.py') })
    ).not.toThrow();
  });
});

describe('#jupyterConfigPath()', () => {
  test('user first, then $JUPYTER_CONFIG_PATH, the environment, the system', () => {
    expect(
      jupyterConfigPath({
        env: { JUPYTER_CONFIG_DIR: '/u', JUPYTER_CONFIG_PATH: '/a:/b' },
        sysPrefix: '/venv'
      })
    ).toEqual(['/u', '/a', '/b', '/venv/etc/jupyter', '/usr/local/etc/jupyter', '/etc/jupyter']);
  });
});

describe('#splitSettingsFlags()', () => {
  test('takes --StoreSettings.x=v and --StoreSettings.x v, leaves the rest', () => {
    expect(
      splitSettingsFlags([
        '--port',
        '1',
        '--StoreSettings.object_bucket=b',
        '--StoreSettings.max_threads',
        '3',
        '--x'
      ])
    ).toEqual({ flags: { object_bucket: 'b', max_threads: '3' }, rest: ['--port', '1', '--x'] });
    expect(() => splitSettingsFlags(['--StoreSettings.object_bucket'])).toThrow(/needs a value/);
  });
});

describe('#redactSettings()', () => {
  test('credentials become <redacted>, unset ones stay unset', () => {
    const { settings } = loadStoreSettings({
      env: { HOME: '/h', JUPYTER_CONFIG_DIR: '/nonexistent-config', JUPYTER_DATA_DIR: '/d' },
      flags: { object_access_key_id: 'AKIA1', object_secret_access_key: 'shh' }
    });
    const shown = redactSettings(settings);
    expect(shown.object_access_key_id).toBe('<redacted>');
    expect(shown.object_secret_access_key).toBe('<redacted>');
    expect(JSON.stringify(shown)).not.toMatch(/AKIA1|shh/);
    expect(
      redactSettings({
        ...settings,
        object_access_key_id: undefined,
        object_secret_access_key: undefined
      }).object_access_key_id
    ).toBeUndefined();
  });
});
