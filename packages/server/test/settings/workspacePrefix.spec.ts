import { rmSync } from 'node:fs';
import { loadStoreSettings, SettingsError } from '../../src/settings';
import {
  fillWorkspacePrefix,
  isWorkspaceTemplate,
  userNameProblem
} from '../../src/settings/workspacePrefix';
import { temporarySettingsHome } from '../support/settingsHome';

describe('workspace_prefix as a template', () => {
  let home: string;
  let env: NodeJS.ProcessEnv;

  beforeEach(() => ({ home, env } = temporarySettingsHome()));

  afterEach(() => rmSync(home, { recursive: true, force: true }));

  function load(flags: Record<string, string>, extra: NodeJS.ProcessEnv = {}) {
    return loadStoreSettings({ env: { ...env, ...extra }, flags }).settings;
  }

  /** The message of the SettingsError that loading throws. */
  function refusal(flags: Record<string, string>, extra: NodeJS.ProcessEnv = {}): string {
    try {
      load(flags, extra);
    } catch (error) {
      expect(error).toBeInstanceOf(SettingsError);
      return (error as Error).message;
    }
    throw new Error('the settings were accepted');
  }

  test('{username} is filled from JUPYTERHUB_USER', () => {
    const settings = load(
      { workspace_prefix: 'workspace/{username}' },
      { JUPYTERHUB_USER: 'alice' }
    );
    expect(settings.workspace_prefix).toBe('workspace/alice');
  });

  test('every occurrence is filled', () => {
    const settings = load(
      { workspace_prefix: '{username}/w/{username}' },
      { JUPYTERHUB_USER: 'a' }
    );
    expect(settings.workspace_prefix).toBe('a/w/a');
  });

  test('a prefix without the placeholder is used as it is', () => {
    expect(load({ workspace_prefix: 'ws' }, { JUPYTERHUB_USER: 'alice' }).workspace_prefix).toBe(
      'ws'
    );
  });

  test('the credential service keeps the template', () => {
    const { settings } = loadStoreSettings({
      env,
      flags: { workspace_prefix: 'workspace/{username}' },
      keepWorkspaceTemplate: true
    });
    expect(settings.workspace_prefix).toBe('workspace/{username}');
  });

  test('the placeholder without JUPYTERHUB_USER stops the start, naming the variable', () => {
    expect(refusal({ workspace_prefix: 'workspace/{username}' })).toBe(
      'StoreSettings.workspace_prefix (from the command line) uses {username}, which needs ' +
        'JUPYTERHUB_USER (a JupyterHub single-user server has it)'
    );
  });

  test.each([
    ['another prefix', 'alice/../bob'],
    ['dots alone', '..'],
    ['a wildcard', 'al*ce']
  ])('a user name with %s is refused', (_what, user) => {
    expect(
      refusal({ workspace_prefix: 'workspace/{username}' }, { JUPYTERHUB_USER: user })
    ).toMatch(
      /^StoreSettings\.workspace_prefix \(from the command line\) cannot hold the JupyterHub user name/
    );
  });

  test.each([
    ['another placeholder', 'workspace/{user}'],
    ['a stray brace', 'workspace/{username'],
    ['a ".." segment', 'workspace/../{username}'],
    ['a "." segment', './{username}']
  ])('a template with %s is refused', (_what, template) => {
    expect(refusal({ workspace_prefix: template }, { JUPYTERHUB_USER: 'alice' })).toContain(
      'may hold no braces besides the {username} placeholder'
    );
  });
});

describe('#fillWorkspacePrefix()', () => {
  it('never yields an empty prefix or one with a ".." segment', () => {
    for (const user of ['', '..', '.', 'a/..', '../x']) {
      expect(() => fillWorkspacePrefix('{username}', user)).toThrow();
    }
    expect(fillWorkspacePrefix('{username}', 'a.b')).toBe('a.b');
  });
});

describe('#isWorkspaceTemplate()', () => {
  it('accepts the usual prefixes', () => {
    for (const template of [
      '',
      'workspace',
      '/workspace/',
      'workspace/{username}',
      'a.b/{username}'
    ]) {
      expect(isWorkspaceTemplate(template)).toBe(true);
    }
  });
});

describe('#userNameProblem()', () => {
  it('accepts JupyterHub names, e-mail addresses included', () => {
    for (const name of ['alice', 'a.b@example.org', 'ünïcode', 'x_1-2']) {
      expect(userNameProblem(name)).toBeUndefined();
    }
  });

  it('says what is wrong', () => {
    expect(userNameProblem('a*')).toBe(
      'holds "*", which could widen an object key or policy pattern'
    );
    expect(userNameProblem('')).toBe('is empty');
    expect(userNameProblem('...')).toBe('is only dots');
  });
});
