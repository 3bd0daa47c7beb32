import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StoreSettingsSchema, validateStoreSettings } from '../../src/settings';

const settingsWith = (values: Record<string, unknown>) => StoreSettingsSchema.parse(values);

describe('#validateStoreSettings()', () => {
  test('the defaults: the embedded store archives, object cloning works, publish and fs clone are off', () => {
    const { features, reasons } = validateStoreSettings(settingsWith({}));
    expect(features).toEqual({
      store_valid: true,
      archive_valid: true,
      publish_valid: false,
      object_clone_valid: true,
      fs_clone_valid: false
    });
    expect(reasons.publish_valid).toMatch(/jupyter store enable/);
    expect(reasons.fs_clone_valid).toMatch(/fs_cloning_basedir is not set/);
  });

  test('an endpoint without a bucket has no store, and says so for every storage feature', () => {
    const { features, reasons } = validateStoreSettings(
      settingsWith({ object_endpoint_url: 'http://127.0.0.1:9000' }),
      { publishEnabled: true }
    );
    expect(features.store_valid).toBe(false);
    expect(features.archive_valid).toBe(false);
    expect(features.publish_valid).toBe(false);
    expect(features.object_clone_valid).toBe(false);
    expect(reasons.store_valid).toMatch(/object_bucket is not set/);
  });

  test('empty prefixes turn archive and publish off', () => {
    const { features, reasons } = validateStoreSettings(
      settingsWith({ object_bucket: 'notebooks', workspace_prefix: '/', published_prefix: '' }),
      { publishEnabled: true }
    );
    expect(features.store_valid).toBe(true);
    expect(reasons.archive_valid).toBe('workspace_prefix is empty');
    expect(reasons.publish_valid).toBe('published_prefix is empty');
  });

  test('publish needs enabling', () => {
    const settings = settingsWith({ object_bucket: 'notebooks' });
    expect(validateStoreSettings(settings, { publishEnabled: true }).features.publish_valid).toBe(
      true
    );
    expect(validateStoreSettings(settings).features.publish_valid).toBe(false);
  });

  test('a failed bucket check turns the storage features off with its reason', () => {
    const { features, reasons } = validateStoreSettings(
      settingsWith({ object_bucket: 'notebooks' }),
      {
        storageCheck: 'the credentials were refused (InvalidAccessKeyId)'
      }
    );
    expect(features.archive_valid).toBe(false);
    expect(reasons.archive_valid).toMatch(/credentials were refused/);
  });

  test('object cloning can be turned off', () => {
    const { features, reasons } = validateStoreSettings(
      settingsWith({ enable_object_cloning: false })
    );
    expect(features.object_clone_valid).toBe(false);
    expect(reasons.object_clone_valid).toBe('enable_object_cloning is false');
  });

  test('fs cloning needs an existing absolute directory', () => {
    const dir = mkdtempSync(join(tmpdir(), 'fs-clone-'));
    try {
      expect(
        validateStoreSettings(settingsWith({ fs_cloning_basedir: dir })).features.fs_clone_valid
      ).toBe(true);
      const missing = validateStoreSettings(
        settingsWith({ fs_cloning_basedir: join(dir, 'nope') })
      );
      expect(missing.features.fs_clone_valid).toBe(false);
      expect(missing.reasons.fs_clone_valid).toMatch(/is not a directory/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
