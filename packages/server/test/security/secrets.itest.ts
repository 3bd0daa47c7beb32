/**
 * Secrets stay with the gateway. `jupyter-store lab` gets its token from a `--token-file` and the
 * object store's credentials from `STORE_OBJECT_*` variables, and archives to MinIO: no process
 * of its tree (the gateway, Jupyter, a kernel) has the token or a credential on its command line,
 * neither a kernel's environment nor Jupyter's holds them, the logs never show them, and saves
 * are still archived. The token or a credential given on the command line draws one warning;
 * `$JUPYTER_TOKEN` still works and does not reach kernels; a bad `--token-file` is a usage error.
 */
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { callGateway, saveNotebook, waitUntil } from '../client/storeCli';
import { useArchivingLab } from '../support/archivingLab';
import { CLI, labDefaults, startGatewayProcess, type IGatewayProcess } from '../support/gateway';
import { withKernel } from '../support/kernel';
import type { IObjectServer } from '../support/objectServers';

jest.setTimeout(180_000);

const BUCKET = 'secret-notebooks';
/** The token in the file; random enough that no other text contains it by chance. */
const FILE_TOKEN = `file-token-${Math.random().toString(36).slice(2)}`;

let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'security-secrets-'));
});

afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------
// What the tests look at: /proc, a kernel's environment, the gateway's log lines
// ---------------------------------------------------------------------------------------------

/** The parent of every process, from `/proc/<pid>/stat` (processes that vanish are skipped). */
function parentPids(): Map<number, number> {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // `pid (comm) state ppid …`: comm may hold spaces and parentheses.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parents.set(Number(entry), Number(fields[1]));
    } catch {
      // gone
    }
  }
  return parents;
}

/** `root` and every process below it. */
function processTree(root: number): number[] {
  const parents = parentPids();
  const tree = [root];
  for (let i = 0; i < tree.length; i++) {
    for (const [pid, parent] of parents) if (parent === tree[i]) tree.push(pid);
  }
  return tree;
}

/** A process's command line, its arguments joined by spaces ('' once it is gone). */
function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
  } catch {
    return '';
  }
}

/** `os.environ` of a new kernel started through the gateway. */
async function kernelEnvironment(gateway: IGatewayProcess): Promise<Record<string, string>> {
  // Hex, so that Python's repr of the result needs no unescaping.
  const shown = await withKernel(gateway, kernel =>
    kernel.execute('import json, os; json.dumps(dict(os.environ)).encode().hex()')
  );
  return JSON.parse(Buffer.from(shown.replace(/^'|'$/g, ''), 'hex').toString('utf8')) as Record<
    string,
    string
  >;
}

/** The gateway's log lines (JSON on stderr) at level warn. */
function warnings(gateway: Pick<IGatewayProcess, 'stderr'>): Array<Record<string, unknown>> {
  return gateway
    .stderr()
    .split('\n')
    .filter(line => line.startsWith('{'))
    .map(line => JSON.parse(line) as Record<string, unknown>)
    .filter(entry => entry.level === 'warn');
}

/** The regular files below `dir`, recursively. */
function filesBelow(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...filesBelow(full));
    else if (entry.isFile()) files.push(full);
  }
  return files;
}

// ---------------------------------------------------------------------------------------------
// The token in a file, the credentials in the environment
// ---------------------------------------------------------------------------------------------

describe('lab with --token-file and the credentials in STORE_OBJECT_* variables', () => {
  let minio: IObjectServer;
  let s3: S3Client;
  let gateway: IGatewayProcess;
  /** What must never leave the gateway. */
  let secrets: Record<string, string>;

  const lab = useArchivingLab({
    bucket: BUCKET,
    gateway: () => {
      const tokenFile = join(scratch, 'token');
      writeFileSync(tokenFile, `${FILE_TOKEN}\n`, { mode: 0o600 });
      return {
        settingsIn: 'environment',
        args: ['--token-file', tokenFile, '--log-level', 'debug'],
        // The user's own, for boto3 in notebooks: not ours to take away.
        env: { AWS_DEFAULT_REGION: 'eu-north-1', AWS_PROFILE: 'notebook-user' }
      };
    }
  });

  beforeAll(() => {
    ({ server: minio, s3, gateway } = lab);
    secrets = {
      token: FILE_TOKEN,
      'secret access key': minio.secretAccessKey,
      'access key id': minio.accessKeyId
    };
  });

  test('the token is the file’s first line, and the runtime record holding it has mode 0600', async () => {
    expect(gateway.token).toBe(FILE_TOKEN);
    const record = join(gateway.state.runtime, `jpserver-${gateway.child.pid}.json`);
    expect(statSync(record).mode & 0o777).toBe(0o600);
    // Jupyter has the same token: the gateway's auth asks it.
    expect((await callGateway(gateway, 'GET', 'api/contents')).status).toBe(200);
    const refused = await fetch(gateway.url('api/contents'), {
      headers: { Authorization: `token ${FILE_TOKEN}x` }
    });
    expect(refused.status).toBe(403);
  });

  test('no process of the gateway’s tree, a kernel included, has a secret on its command line', async () => {
    const upstreamPid = gateway.record.upstream_pid as number;
    const lines = await withKernel(gateway, async kernel => {
      expect(await kernel.execute('6 * 7')).toBe('42');
      return new Map(processTree(gateway.child.pid as number).map(pid => [pid, commandLine(pid)]));
    });
    expect(lines.get(gateway.child.pid as number)).toMatch(/main\.js lab/);
    expect(lines.get(upstreamPid)).toMatch(/jupyter-lab/);
    // The kernel, a child of Jupyter, was in the tree while it ran.
    expect([...lines.values()].filter(line => /ipykernel/.test(line))).toHaveLength(1);
    for (const [pid, line] of lines) {
      for (const [what, value] of Object.entries(secrets)) {
        if (line.includes(value))
          throw new Error(`the ${what} is on the command line of ${pid}: ${line}`);
      }
    }
    expect(lines.get(upstreamPid)).not.toMatch(/token/i);
  });

  test('a kernel’s environment holds neither the token nor a credential; AWS_* stay', async () => {
    const env = await kernelEnvironment(gateway);
    for (const [name, value] of Object.entries(env)) {
      for (const [what, secret] of Object.entries(secrets)) {
        if (value.includes(secret)) throw new Error(`the ${what} is in the kernel's ${name}`);
      }
    }
    expect(
      Object.keys(env).filter(name => /^STORE_OBJECT_|^JUPYTER_TOKEN|^JUPYTER_STORE_/.test(name))
    ).toEqual([]);
    // Nor the path of the private config directory Jupyter read the token from.
    expect(env.JUPYTER_CONFIG_PATH).toBeUndefined();
    expect(env).toMatchObject({ AWS_DEFAULT_REGION: 'eu-north-1', AWS_PROFILE: 'notebook-user' });
  });

  test('Jupyter’s own environment holds no secret, and the token file it read is gone', () => {
    const upstreamPid = gateway.record.upstream_pid as number;
    const environ = readFileSync(`/proc/${upstreamPid}/environ`, 'utf8');
    for (const [what, secret] of Object.entries(secrets)) {
      if (environ.includes(secret)) throw new Error(`the ${what} is in Jupyter's environment`);
    }
    // The private directory of the upstream socket held the token's config file until start-up.
    const privateDir = dirname(gateway.record.upstream_url.replace(/^unix:/, ''));
    expect(statSync(privateDir).mode & 0o777).toBe(0o700);
    for (const file of filesBelow(privateDir)) {
      expect(readFileSync(file, 'utf8')).not.toContain(FILE_TOKEN);
    }
  });

  test('a save is archived to MinIO: the gateway itself still has the credentials', async () => {
    await saveNotebook(gateway, 'secrets.ipynb', 'archived with credentials from the environment');
    const onDisk = readFileSync(join(gateway.rootDir, 'secrets.ipynb'));
    expect(onDisk.toString('utf8')).toContain('archived with credentials from the environment');
    const archived = await waitUntil(async () => {
      try {
        const object = await s3.send(
          new GetObjectCommand({ Bucket: BUCKET, Key: 'workspace/secrets.ipynb' }),
          { abortSignal: AbortSignal.timeout(15_000) }
        );
        return Buffer.from(await object.Body!.transformToByteArray()).equals(onDisk);
      } catch {
        return false;
      }
    }, 60_000);
    expect(archived).toBe(true);
  });

  test('neither the logs (at debug) nor the banner show a credential; only the banner the token', () => {
    const output = gateway.stdout() + gateway.stderr();
    expect(output).not.toContain(minio.secretAccessKey);
    expect(output).not.toContain(minio.accessKeyId);
    expect(gateway.stderr()).not.toContain(FILE_TOKEN);
    expect(gateway.stdout()).toContain(`?token=${FILE_TOKEN}`);
    expect(warnings(gateway).filter(entry => /\bps\b/.test(String(entry.msg)))).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// The token and credentials on the command line, the token in $JUPYTER_TOKEN
// ---------------------------------------------------------------------------------------------

describe('the token and credentials on the command line, or the token in $JUPYTER_TOKEN', () => {
  const CLI_TOKEN = `cli-token-${Math.random().toString(36).slice(2)}`;
  const CLI_SECRET = `cli-secret-${Math.random().toString(36).slice(2)}`;
  const ENV_TOKEN = `env-token-${Math.random().toString(36).slice(2)}`;
  let onCommandLine: IGatewayProcess;
  let fromEnvironment: IGatewayProcess;

  beforeAll(async () => {
    const started = await Promise.allSettled([
      startGatewayProcess({
        args: [
          ...labDefaults(),
          '--token',
          CLI_TOKEN,
          '--StoreSettings.object_access_key_id=AKIACOMMANDLINE',
          '--StoreSettings.object_secret_access_key',
          CLI_SECRET
        ]
      }),
      startGatewayProcess({ args: labDefaults(), env: { JUPYTER_TOKEN: ENV_TOKEN } })
    ]);
    for (const result of started) if (result.status === 'rejected') throw result.reason;
    [onCommandLine, fromEnvironment] = started.map(
      result => (result as PromiseFulfilledResult<IGatewayProcess>).value
    );
  });

  afterAll(async () => {
    await onCommandLine?.stop();
    await fromEnvironment?.stop();
  });

  test('they work, with one warning naming the flags and where else to give them', () => {
    expect(onCommandLine.token).toBe(CLI_TOKEN);
    const warned = warnings(onCommandLine).filter(entry => /\bps\b/.test(String(entry.msg)));
    expect(warned).toHaveLength(1);
    expect(warned[0].flags).toEqual([
      '--token',
      '--StoreSettings.object_access_key_id',
      '--StoreSettings.object_secret_access_key'
    ]);
    expect(warned[0].msg).toBe(
      '--token, --StoreSettings.object_access_key_id, --StoreSettings.object_secret_access_key ' +
        'on the command line are visible to other users in ps; use --token-file or ' +
        '$JUPYTER_TOKEN for the token, and $STORE_OBJECT_ACCESS_KEY_ID or ' +
        '$STORE_OBJECT_SECRET_ACCESS_KEY or jupyter_store_config.json for credentials'
    );
    // The secret itself is printed nowhere.
    expect(onCommandLine.stdout() + onCommandLine.stderr()).not.toContain(CLI_SECRET);
  });

  test('$JUPYTER_TOKEN is the token, with no warning, and kernels do not see it', async () => {
    expect(fromEnvironment.token).toBe(ENV_TOKEN);
    expect(warnings(fromEnvironment).filter(entry => /\bps\b/.test(String(entry.msg)))).toEqual([]);
    const env = await kernelEnvironment(fromEnvironment);
    expect(env.JUPYTER_TOKEN).toBeUndefined();
    expect(Object.values(env).filter(value => value.includes(ENV_TOKEN))).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// --token-file as a flag
// ---------------------------------------------------------------------------------------------

describe('--token-file', () => {
  function run(...args: string[]): { status: number | null; stdout: string; stderr: string } {
    const result = spawnSync(process.execPath, [CLI, ...args], {
      encoding: 'utf8',
      timeout: 30_000,
      cwd: scratch,
      env: { ...process.env, JUPYTER_RUNTIME_DIR: join(scratch, 'unused-runtime') }
    });
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  }

  test.each(['lab', 'serve'])('%s --help documents it', command => {
    const { status, stdout } = run(command, '--help');
    expect(status).toBe(0);
    expect(stdout).toMatch(/--token-file <FILE>\s+read .*token from FILE/);
    expect(stdout).toMatch(/give the token with --token-file or \$JUPYTER_TOKEN/);
  });

  test.each([
    [['lab'], 'missing', /--token-file: '.*missing' cannot be read \(ENOENT\)/],
    [['lab'], 'a-directory', /--token-file: '.*a-directory' cannot be read \(EISDIR\)/],
    [['lab'], 'empty', /--token-file: '.*empty' is empty/],
    [['lab'], 'newline', /--token-file: '.*newline' is empty/],
    [['lab'], 'two-lines', /--token-file: '.*two-lines' holds more than one line/],
    [
      ['lab', '--token', 't'],
      'good',
      /option '--token <T>' cannot be used with option '--token-file <FILE>'/
    ],
    [
      ['lab', '--no-auth'],
      'good',
      /option '--token-file <FILE>' cannot be used with option '--no-auth'/
    ],
    [['serve', '--upstream', 'http://127.0.0.1:1'], 'missing', /--token-file: .* \(ENOENT\)/]
  ])('%j with the file %s is refused with one line, exit status 2', (args, name, pattern) => {
    const files = join(scratch, 'token-files');
    mkdirSync(join(files, 'a-directory'), { recursive: true });
    writeFileSync(join(files, 'empty'), '');
    writeFileSync(join(files, 'newline'), '\n');
    writeFileSync(join(files, 'two-lines'), 'first\nsecond\n');
    writeFileSync(join(files, 'good'), 'good-token\n');
    const { status, stdout, stderr } = run(...args, '--token-file', join(files, name));
    expect(status).toBe(2);
    expect(stdout).toBe('');
    const lines = stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^jupyter-store: /);
    expect(lines[0]).toMatch(pattern);
    expect(lines[0]).not.toContain('good-token');
  });
});
