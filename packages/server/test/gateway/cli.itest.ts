/**
 * The `jupyter-store` command line as a user meets it: help that documents every flag, and one
 * line plus exit status 2 for every wrong flag or value.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI } from '../support/gateway';

function run(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [CLI, ...args], {
    encoding: 'utf8',
    timeout: 30_000,
    env: { ...process.env, JUPYTER_RUNTIME_DIR: join(tmpdir(), 'cli-itest-unused-runtime') }
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('jupyter-store --help', () => {
  test('lists the commands', () => {
    const { status, stdout } = run('--help');
    expect(status).toBe(0);
    for (const command of ['lab', 'serve']) expect(stdout).toContain(`  ${command} `);
    // The contents API alone, without auth, is no command of the product's.
    expect(stdout).not.toContain('  contents ');
  });

  test.each([
    [
      'lab',
      [
        '--ip',
        '--port',
        '--root-dir',
        '--base-url',
        '--token',
        '--no-auth',
        '--config',
        '--jupyter',
        '--upstream-transport',
        '--allow-root',
        '--allow-remote-access',
        '--allow-origin',
        '--allow-origin-pat',
        '--disable-check-xsrf',
        '--log-level',
        '--help'
      ]
    ],
    [
      'serve',
      [
        '--upstream',
        '--ip',
        '--port',
        '--root-dir',
        '--base-url',
        '--token',
        '--config',
        '--log-level',
        '--help'
      ]
    ]
  ])('%s --help documents every flag', (command, flags) => {
    const { status, stdout } = run(command, '--help');
    expect(status).toBe(0);
    for (const flag of flags) expect(stdout).toMatch(new RegExp(`${flag}\\b.* \\S`));
  });

  test('--version prints the version', () => {
    const { status, stdout } = run('--version');
    expect(status).toBe(0);
    expect(stdout).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe('bad flags and values', () => {
  let rootDir: string;

  beforeAll(() => {
    rootDir = mkdtempSync(join(tmpdir(), 'cli-itest-'));
  });

  afterAll(() => rmSync(rootDir, { recursive: true, force: true }));

  test.each([
    [['frobnicate'], /unknown command 'frobnicate'/],
    [['lab', '--bogus'], /--bogus/],
    [['lab', '--port', 'abc'], /--port: 'abc'/],
    [['lab', '--port', '70000'], /--port: '70000'/],
    [['lab', '--root-dir', '/no/such/dir'], /--root-dir: '\/no\/such\/dir' is not a directory/],
    [
      ['lab', '--token', 't', '--no-auth'],
      /option '--token <T>' cannot be used with option '--no-auth'/
    ],
    [
      ['lab', '--upstream-transport', 'pigeon'],
      /option '--upstream-transport <KIND>' argument 'pigeon' is invalid/
    ],
    [['lab', '--log-level', 'loud'], /option '--log-level <LEVEL>' argument 'loud' is invalid/],
    [['lab', '--base-url', 'no-slash'], /--base-url: 'no-slash'/],
    [['lab', '--config', '/no/such/file.json'], /--config: '\/no\/such\/file.json'/],
    [['lab', '--allow-origin-pat', '('], /--allow-origin-pat: '\('/],
    [
      ['lab', '--jupyter', '/no/such/jupyter'],
      /--jupyter: '\/no\/such\/jupyter' is not an executable/
    ],
    [['serve'], /required option '--upstream <URL>' not specified/],
    [['serve', '--upstream', 'ftp://127.0.0.1:1'], /--upstream: .*http:\/\//],
    [['serve', '--upstream', 'http://127.0.0.1:1/user/x/'], /--upstream: .*origin only/],
    [['serve', '--upstream', 'unix:relative.sock'], /--upstream: .*absolute/],
    [['serve', '--port'], /--port/],
    [['lab', 'extra'], /too many arguments for 'lab'/],
    [
      ['serve', '--upstream', 'http://127.0.0.1:1', '--token', 't', '--token-file', '/x'],
      /option '--token <T>' cannot be used with option '--token-file <FILE>'/
    ],
    [['--bogus'], /unknown option '--bogus'/]
  ])('%j is refused with one line naming it', (args, pattern) => {
    const { status, stderr, stdout } = run(...args);
    expect(status).toBe(2);
    expect(stdout).toBe('');
    const lines = stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^jupyter-store: /);
    expect(lines[0]).toMatch(pattern);
  });
});
