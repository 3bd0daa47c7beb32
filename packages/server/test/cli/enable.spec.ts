/**
 * `jupyter-store enable|disable --user|--sys-prefix`, called in-process (not yet dispatched by
 * main.ts): what it writes and removes, what it prints, and its usage errors (which main.ts turns
 * into one line on stderr and exit status 2).
 */
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  DISABLE_USAGE,
  ENABLE_USAGE,
  runDisable,
  runEnable,
  type IEnableContext
} from '../../src/cli/enableCommands';
import { UsageError } from '../../src/cli/flags';
import { isPublishEnabled } from '../../src/settings/publishEnabled';

describe('jupyter-store enable / disable', () => {
  let home: string;
  let user: string;
  let venv: string;
  let env: NodeJS.ProcessEnv;
  let output: string[];
  let jupyter: string | null;

  const context = (): IEnableContext => ({
    env,
    write: text => output.push(text),
    findJupyter: () => jupyter
  });
  const printed = () => output.join('');
  const userFile = () => join(user, 'jupyter_store_config.d', 'publish.json');
  const envFile = (prefix = venv) =>
    join(prefix, 'etc', 'jupyter', 'jupyter_store_config.d', 'publish.json');

  /** A fake environment with an executable `bin/jupyter`. */
  function makeEnvironment(dir: string): string {
    mkdirSync(join(dir, 'bin'), { recursive: true });
    const executable = join(dir, 'bin', 'jupyter');
    writeFileSync(executable, '#!/bin/sh\n');
    chmodSync(executable, 0o755);
    return executable;
  }

  beforeEach(() => {
    home = mkdtempSync(join(tmpdir(), 'enable-'));
    user = join(home, 'user-config');
    venv = join(home, 'venv');
    jupyter = makeEnvironment(venv);
    env = { HOME: home, JUPYTER_CONFIG_DIR: user, PATH: join(venv, 'bin') };
    output = [];
  });

  afterEach(() => rmSync(home, { recursive: true, force: true }));

  test('enable --user writes the switch in the user config dir and says so', () => {
    runEnable(['--user'], context());
    expect(JSON.parse(readFileSync(userFile(), 'utf8'))).toEqual({
      StoreExtension: { publish_enabled: true }
    });
    expect(printed()).toBe(
      `Publishing enabled for this user: wrote ${userFile()}\n` +
        'A running jupyter-store picks this up at its next request.\n'
    );
    expect(isPublishEnabled({ env })).toBe(true);
  });

  test('disable --user removes it, and says so when there was nothing to remove', () => {
    runEnable(['--user'], context());
    output = [];
    runDisable(['--user'], context());
    expect(existsSync(userFile())).toBe(false);
    expect(printed()).toBe(`Publishing disabled for this user: removed ${userFile()}\n`);
    output = [];
    runDisable(['--user'], context());
    expect(printed()).toBe(
      `Publishing was not enabled for this user: ${userFile()} does not exist\n`
    );
    expect(isPublishEnabled({ env })).toBe(false);
  });

  test('enable --sys-prefix writes to <prefix>/etc/jupyter of the jupyter found, symlinks resolved', () => {
    // A symlinked launcher (as in `~/.local/bin/jupyter -> <venv>/bin/jupyter`) means its target's environment.
    const links = join(home, 'links');
    mkdirSync(links);
    symlinkSync(jupyter!, join(links, 'jupyter'));
    jupyter = join(links, 'jupyter');
    runEnable(['--sys-prefix'], context());
    expect(existsSync(envFile())).toBe(true);
    expect(existsSync(userFile())).toBe(false);
    expect(printed()).toContain(
      `Publishing enabled for the environment ${venv} (the environment of ${jupyter}): wrote ${envFile()}`
    );
    expect(isPublishEnabled({ env, sysPrefix: venv })).toBe(true);
    expect(isPublishEnabled({ env })).toBe(false);
    output = [];
    runDisable(['--sys-prefix'], context());
    expect(existsSync(envFile())).toBe(false);
    expect(printed()).toContain('Publishing disabled for the environment');
  });

  test('--sys-prefix --jupyter PATH and --sys-prefix-dir DIR choose the environment', () => {
    const other = join(home, 'other-env');
    const otherJupyter = makeEnvironment(other);
    runEnable(['--sys-prefix', '--jupyter', otherJupyter], context());
    expect(existsSync(envFile(other))).toBe(true);
    const third = join(home, 'third');
    mkdirSync(third);
    runEnable(['--sys-prefix', '--sys-prefix-dir', third], context());
    expect(existsSync(envFile(third))).toBe(true);
    expect(printed()).toContain(`for the environment ${third} (from --sys-prefix-dir)`);
  });

  test('--sys-prefix falls back to $VIRTUAL_ENV when no jupyter is found', () => {
    jupyter = null;
    const virtualEnv = join(home, 'plain-venv');
    mkdirSync(virtualEnv);
    env.VIRTUAL_ENV = virtualEnv;
    runEnable(['--sys-prefix'], context());
    expect(existsSync(envFile(virtualEnv))).toBe(true);
    expect(printed()).toContain('(from $VIRTUAL_ENV)');
  });

  test('disabling one scope reports another scope that still enables publishing', () => {
    runEnable(['--sys-prefix'], context());
    runEnable(['--user'], context());
    output = [];
    runDisable(['--user'], context());
    expect(printed()).toContain(
      `Note: publishing stays on: ${envFile()} enables it; run 'jupyter store disable --sys-prefix' to turn it off there.`
    );
    output = [];
    runDisable(['--sys-prefix'], context());
    expect(printed()).not.toContain('stays on');
  });

  test('enable --sys-prefix warns when a higher-precedence scope turns publishing off', () => {
    mkdirSync(join(user, 'jupyter_store_config.d'), { recursive: true });
    writeFileSync(userFile(), JSON.stringify({ StoreExtension: { publish_enabled: false } }));
    runEnable(['--sys-prefix'], context());
    expect(printed()).toContain(
      `Warning: publishing stays off: ${userFile()} turns it off, and it takes precedence.`
    );
  });

  test('a broken switch file elsewhere is reported', () => {
    const broken = join(home, 'extra', 'jupyter_store_config.d', 'publish.json');
    mkdirSync(join(home, 'extra', 'jupyter_store_config.d'), { recursive: true });
    writeFileSync(broken, '{');
    env.JUPYTER_CONFIG_PATH = join(home, 'extra');
    runEnable(['--user'], context());
    expect(printed()).toContain(`Warning: ${broken} is not valid JSON; it counts as "off".`);
  });

  test('--help prints the usage', () => {
    runEnable(['--help'], context());
    expect(printed()).toBe(ENABLE_USAGE);
    output = [];
    runDisable(['-h'], context());
    expect(printed()).toBe(DISABLE_USAGE);
    expect(ENABLE_USAGE).toMatch(/--user[\s\S]*--sys-prefix/);
  });

  test.each([
    [[], /a scope is required: --user or --sys-prefix/],
    [['--user', '--sys-prefix'], /cannot be combined/],
    [['--user', '--jupyter', '/x'], /--jupyter only goes with --sys-prefix/],
    [['--user', '--sys-prefix-dir', '/x'], /--sys-prefix-dir only goes with --sys-prefix/],
    [['--sys-prefix', '--jupyter', '/x', '--sys-prefix-dir', '/y'], /cannot be combined/],
    [['--sys-prefix', '--sys-prefix-dir', '/nonexistent/dir'], /is not a directory/],
    [['--sys-prefix', '--jupyter', '/nonexistent/jupyter'], /is not an executable file/],
    [['--global'], /Unknown option '--global'/],
    [['--user', 'extra'], /positional/]
  ])('%j is a usage error', (argv, message) => {
    for (const run of [runEnable, runDisable]) {
      let caught: unknown;
      try {
        run(argv, context());
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(UsageError);
      expect((caught as Error).message).toMatch(message);
      expect((caught as Error).message).not.toContain('\n');
    }
    expect(existsSync(userFile())).toBe(false);
  });

  test('--sys-prefix without any environment to find is a usage error', () => {
    jupyter = null;
    delete env.VIRTUAL_ENV;
    expect(() => runEnable(['--sys-prefix'], context())).toThrow(
      /--sys-prefix: cannot tell which Python environment is meant/
    );
  });

  test('a config dir that cannot be written is an error naming the file (exit 1, not 2)', () => {
    writeFileSync(join(home, 'blocker'), 'x');
    env.JUPYTER_CONFIG_DIR = join(home, 'blocker', 'config');
    let caught: unknown;
    try {
      runEnable(['--user'], context());
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeDefined();
    expect(caught).not.toBeInstanceOf(UsageError);
    expect((caught as Error).message).toMatch(
      /^cannot write .*blocker\/config\/jupyter_store_config.d\/publish.json/
    );
  });
});
