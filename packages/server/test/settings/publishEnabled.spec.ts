import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jupyterConfigPath, loadStoreSettings } from '../../src/settings';
import {
  isPublishEnabled,
  publishConfigFile,
  publishEnablement,
  readPublishSwitch,
  removePublishSwitch,
  writePublishSwitch
} from '../../src/settings/publishEnabled';

describe('publish enablement', () => {
  let home: string;
  let env: NodeJS.ProcessEnv;
  let user: string;
  let extra: string;
  let sysPrefix: string;
  let environmentDir: string;

  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'publish-enabled-'));
    user = join(home, 'user');
    extra = join(home, 'extra');
    sysPrefix = join(home, 'venv');
    environmentDir = join(sysPrefix, 'etc', 'jupyter');
    env = { HOME: home, JUPYTER_CONFIG_DIR: user, JUPYTER_CONFIG_PATH: extra };
  });

  afterEach(() => rmSync(home, { recursive: true, force: true }));

  const sources = () => ({ env, sysPrefix });

  function writeRaw(dir: string, text: string): string {
    const file = publishConfigFile(dir);
    mkdirSync(join(dir, 'jupyter_store_config.d'), { recursive: true });
    writeFileSync(file, text);
    return file;
  }

  test('is off by default', () => {
    expect(isPublishEnabled(sources())).toBe(false);
    expect(publishEnablement(sources())).toEqual({
      enabled: false,
      decidedBy: null,
      switches: [],
      problems: []
    });
  });

  test('the switch file is jupyter_store_config.d/publish.json with a StoreExtension section', () => {
    const file = writePublishSwitch(user);
    expect(file).toBe(join(user, 'jupyter_store_config.d', 'publish.json'));
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({
      StoreExtension: { publish_enabled: true }
    });
    expect(readFileSync(file, 'utf8').endsWith('\n')).toBe(true);
  });

  test.each([
    ['the user', () => user],
    ['$JUPYTER_CONFIG_PATH', () => extra],
    ['the environment (sys.prefix)', () => environmentDir]
  ])('enabling in %s turns publishing on, read afresh on every call', (_scope, dir) => {
    expect(isPublishEnabled(sources())).toBe(false);
    const file = writePublishSwitch(dir());
    expect(isPublishEnabled(sources())).toBe(true);
    expect(publishEnablement(sources()).decidedBy).toBe(file);
    expect(removePublishSwitch(dir())).toEqual({ file, removed: true });
    expect(isPublishEnabled(sources())).toBe(false);
    expect(removePublishSwitch(dir())).toEqual({ file, removed: false });
  });

  test('the environment directory only counts when the sys.prefix is known', () => {
    writePublishSwitch(environmentDir);
    expect(isPublishEnabled({ env, sysPrefix })).toBe(true);
    expect(isPublishEnabled({ env })).toBe(false);
  });

  test('a higher-precedence false beats a lower true; a lower false does not beat a higher true', () => {
    writePublishSwitch(environmentDir, true);
    const userFile = writePublishSwitch(user, false);
    expect(publishEnablement(sources())).toMatchObject({ enabled: false, decidedBy: userFile });
    writePublishSwitch(user, true);
    writePublishSwitch(environmentDir, false);
    expect(publishEnablement(sources())).toMatchObject({ enabled: true, decidedBy: userFile });
  });

  test('a file without the key says nothing; the next scope decides', () => {
    writeRaw(user, JSON.stringify({ Other: { x: 1 } }));
    writeRaw(extra, JSON.stringify({ StoreExtension: {} }));
    const file = writePublishSwitch(environmentDir);
    expect(publishEnablement(sources())).toMatchObject({
      enabled: true,
      decidedBy: file,
      problems: []
    });
  });

  test.each([
    ['not JSON', '{"StoreExtension": ', /is not valid JSON/],
    ['empty', '', /is not valid JSON/],
    ['a list', '[]', /must hold a JSON object/],
    ['a section that is not an object', '{"StoreExtension": true}', /must be a JSON object/],
    ['a string value', '{"StoreExtension": {"publish_enabled": "yes"}}', /must be true or false/]
  ])('a file that is %s counts as off (fail closed) and is reported', (_what, text, problem) => {
    writePublishSwitch(environmentDir, true);
    const file = writeRaw(user, text);
    const state = publishEnablement(sources());
    expect(state.enabled).toBe(false);
    expect(state.decidedBy).toBe(file);
    expect(state.problems).toHaveLength(1);
    expect(state.problems[0]).toContain(file);
    expect(state.problems[0]).toMatch(problem);
    expect(readPublishSwitch(file)).toMatchObject({ enabled: false });
  });

  test('the switch directory is not read by settings, and settings files do not enable', () => {
    writePublishSwitch(user);
    // StoreSettings refuses unknown fields; the switch lives apart, so loading still works.
    expect(() => loadStoreSettings({ env })).not.toThrow();
    rmSync(publishConfigFile(user));
    mkdirSync(user, { recursive: true });
    writeFileSync(
      join(user, 'jupyter_store_config.json'),
      JSON.stringify({ StoreSettings: {}, StoreExtension: { publish_enabled: true } })
    );
    expect(isPublishEnabled(sources())).toBe(false);
  });

  test('reads exactly the directories of the Jupyter config path', () => {
    const dirs = jupyterConfigPath(sources());
    expect(dirs.slice(0, 3)).toEqual([user, extra, environmentDir]);
  });

  test('writing reports the file when it cannot be written', () => {
    const blocker = join(home, 'file');
    writeFileSync(blocker, 'x');
    expect(() => writePublishSwitch(join(blocker, 'config'))).toThrow(
      new RegExp(`^cannot write ${blocker}/config/jupyter_store_config.d/publish.json: ENOTDIR`)
    );
  });
});
