/**
 * `jupyter-store enable|disable --user|--sys-prefix`, run in-process through the command line:
 * what it writes and removes, what it prints, and its usage errors (one line on stderr and exit
 * status 2).
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
import * as enableCommands from '../../src/cli/enableCommands';
import { runJupyterStore } from '../../src/cli/program';
import { isPublishEnabled } from '../../src/settings/publishEnabled';

describe('jupyter-store enable / disable', () => {
  let home: string;
  let user: string;
  let venv: string;
  let env: NodeJS.ProcessEnv;
  let output: string[];
  let errors: string[];
  let jupyter: string | null;

  /** Run `jupyter-store <argv>` in-process in this test's environment; its exit status. */
  const cli = (...argv: string[]): Promise<number> =>
    runJupyterStore(argv, {
      io: { stdout: text => output.push(text), stderr: text => errors.push(text), env },
      findJupyter: () => jupyter,
      // jest cannot import() a module: the command line gets the one it would load.
      modules: { enable: () => Promise.resolve(enableCommands) }
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
    errors = [];
  });

  afterEach(() => rmSync(home, { recursive: true, force: true }));

  test('enable --user writes the switch in the user config dir and says so', async () => {
    expect(await cli('enable', '--user')).toBe(0);
    expect(JSON.parse(readFileSync(userFile(), 'utf8'))).toEqual({
      StoreExtension: { publish_enabled: true }
    });
    expect(printed()).toBe(
      `Publishing enabled for this user: wrote ${userFile()}\n` +
        'A running jupyter-store picks this up at its next request.\n'
    );
    expect(isPublishEnabled({ env })).toBe(true);
  });

  test('disable --user removes it, and says so when there was nothing to remove', async () => {
    expect(await cli('enable', '--user')).toBe(0);
    output = [];
    expect(await cli('disable', '--user')).toBe(0);
    expect(existsSync(userFile())).toBe(false);
    expect(printed()).toBe(`Publishing disabled for this user: removed ${userFile()}\n`);
    output = [];
    expect(await cli('disable', '--user')).toBe(0);
    expect(printed()).toBe(
      `Publishing was not enabled for this user: ${userFile()} does not exist\n`
    );
    expect(isPublishEnabled({ env })).toBe(false);
  });

  test('enable --sys-prefix writes to <prefix>/etc/jupyter of the jupyter found, symlinks resolved', async () => {
    // A symlinked launcher (as in `~/.local/bin/jupyter -> <venv>/bin/jupyter`) means its target's environment.
    const links = join(home, 'links');
    mkdirSync(links);
    symlinkSync(jupyter!, join(links, 'jupyter'));
    jupyter = join(links, 'jupyter');
    expect(await cli('enable', '--sys-prefix')).toBe(0);
    expect(existsSync(envFile())).toBe(true);
    expect(existsSync(userFile())).toBe(false);
    expect(printed()).toContain(
      `Publishing enabled for the environment ${venv} (the environment of ${jupyter}): wrote ${envFile()}`
    );
    expect(isPublishEnabled({ env, sysPrefix: venv })).toBe(true);
    expect(isPublishEnabled({ env })).toBe(false);
    output = [];
    expect(await cli('disable', '--sys-prefix')).toBe(0);
    expect(existsSync(envFile())).toBe(false);
    expect(printed()).toContain('Publishing disabled for the environment');
  });

  test('--sys-prefix --jupyter PATH and --sys-prefix-dir DIR choose the environment', async () => {
    const other = join(home, 'other-env');
    const otherJupyter = makeEnvironment(other);
    expect(await cli('enable', '--sys-prefix', '--jupyter', otherJupyter)).toBe(0);
    expect(existsSync(envFile(other))).toBe(true);
    const third = join(home, 'third');
    mkdirSync(third);
    expect(await cli('enable', '--sys-prefix', '--sys-prefix-dir', third)).toBe(0);
    expect(existsSync(envFile(third))).toBe(true);
    expect(printed()).toContain(`for the environment ${third} (from --sys-prefix-dir)`);
  });

  test('--sys-prefix falls back to $VIRTUAL_ENV when no jupyter is found', async () => {
    jupyter = null;
    const virtualEnv = join(home, 'plain-venv');
    mkdirSync(virtualEnv);
    env.VIRTUAL_ENV = virtualEnv;
    expect(await cli('enable', '--sys-prefix')).toBe(0);
    expect(existsSync(envFile(virtualEnv))).toBe(true);
    expect(printed()).toContain('(from $VIRTUAL_ENV)');
  });

  test('disabling one scope reports another scope that still enables publishing', async () => {
    expect(await cli('enable', '--sys-prefix')).toBe(0);
    expect(await cli('enable', '--user')).toBe(0);
    output = [];
    expect(await cli('disable', '--user')).toBe(0);
    expect(printed()).toContain(
      `Note: publishing stays on: ${envFile()} enables it; run 'jupyter store disable --sys-prefix' to turn it off there.`
    );
    output = [];
    expect(await cli('disable', '--sys-prefix')).toBe(0);
    expect(printed()).not.toContain('stays on');
  });

  test('enable --sys-prefix warns when a higher-precedence scope turns publishing off', async () => {
    mkdirSync(join(user, 'jupyter_store_config.d'), { recursive: true });
    writeFileSync(userFile(), JSON.stringify({ StoreExtension: { publish_enabled: false } }));
    expect(await cli('enable', '--sys-prefix')).toBe(0);
    expect(printed()).toContain(
      `Warning: publishing stays off: ${userFile()} turns it off, and it takes precedence.`
    );
  });

  test('a broken switch file elsewhere is reported', async () => {
    const broken = join(home, 'extra', 'jupyter_store_config.d', 'publish.json');
    mkdirSync(join(home, 'extra', 'jupyter_store_config.d'), { recursive: true });
    writeFileSync(broken, '{');
    env.JUPYTER_CONFIG_PATH = join(home, 'extra');
    expect(await cli('enable', '--user')).toBe(0);
    expect(printed()).toContain(`Warning: ${broken} is not valid JSON; it counts as "off".`);
  });

  test.each([
    [
      'enable',
      '--help',
      'Enable publishing (PUT {base}api/store/publish/<path>), which is off by default.'
    ],
    [
      'disable',
      '-h',
      "Take back 'jupyter-store enable': removes <config dir>/jupyter_store_config.d/publish.json from the Jupyter config directory of the scope."
    ]
  ])(
    '%s %s prints the usage, the description, every option and the scopes',
    async (command, flag, description) => {
      expect(await cli(command, flag)).toBe(0);
      const help = printed();
      expect(help).toMatch(
        new RegExp(`^Usage: jupyter-store ${command} --user\\|--sys-prefix \\[options\\]\n`)
      );
      // Commander wraps the description to the terminal's width.
      expect(help.replace(/\s+/g, ' ')).toContain(description);
      for (const option of [
        '--user',
        '--sys-prefix',
        '--jupyter <PATH>',
        '--sys-prefix-dir <DIR>'
      ]) {
        expect(help).toMatch(new RegExp(`\\n  ${option}\\s+\\S`));
      }
      expect(help).toMatch(/\n {2}-h, --help\s+show this help\n/);
      expect(help).toContain('Exactly one of --user and --sys-prefix is required.');
      expect(errors).toEqual([]);
    }
  );

  test.each([
    [[], /a scope is required: --user or --sys-prefix/],
    [['--user', '--sys-prefix'], /option '--user' cannot be used with option '--sys-prefix'/],
    [['--user', '--jupyter', '/x'], /--jupyter only goes with --sys-prefix/],
    [['--user', '--sys-prefix-dir', '/x'], /--sys-prefix-dir only goes with --sys-prefix/],
    [
      ['--sys-prefix', '--jupyter', '/x', '--sys-prefix-dir', '/y'],
      /option '--jupyter <PATH>' cannot be used with option '--sys-prefix-dir <DIR>'/
    ],
    [['--sys-prefix', '--sys-prefix-dir', '/nonexistent/dir'], /is not a directory/],
    [['--sys-prefix', '--jupyter', '/nonexistent/jupyter'], /is not an executable file/],
    [['--global'], /unknown option '--global'/],
    [['--user', 'extra'], /too many arguments for '(enable|disable)'/],
    [['--sys-prefix-dir'], /option '--sys-prefix-dir <DIR>' argument missing/]
  ])('%j is a usage error: one line, exit status 2', async (argv, message) => {
    for (const command of ['enable', 'disable']) {
      errors = [];
      expect(await cli(command, ...argv)).toBe(2);
      expect(errors).toHaveLength(1);
      expect(errors[0]).toMatch(/^jupyter-store: [^\n]+ \(see --help\)\n$/);
      expect(errors[0]).toMatch(message);
    }
    expect(output).toEqual([]);
    expect(existsSync(userFile())).toBe(false);
  });

  test('--sys-prefix without any environment to find is a usage error', async () => {
    jupyter = null;
    delete env.VIRTUAL_ENV;
    expect(await cli('enable', '--sys-prefix')).toBe(2);
    expect(errors.join('')).toMatch(
      /^jupyter-store: --sys-prefix: cannot tell which Python environment is meant/
    );
  });

  test('a config dir that cannot be written is an error naming the file (exit 1, not 2)', async () => {
    writeFileSync(join(home, 'blocker'), 'x');
    env.JUPYTER_CONFIG_DIR = join(home, 'blocker', 'config');
    expect(await cli('enable', '--user')).toBe(1);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(
      /^jupyter-store: cannot write .*blocker\/config\/jupyter_store_config.d\/publish.json/
    );
    expect(errors[0]).not.toContain('(see --help)');
  });
});
