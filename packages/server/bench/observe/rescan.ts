/**
 * Measurement 2, unchanged re-scan: a warm `git status` of a 100,000-file root against the
 * product's reconciliation scan of the same unchanged root, in this process.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RACY_WINDOW_MS } from '../../src/archive/archiveIndex';
import { Archiving } from '../../src/archive/archiving';
import { ContentsManager } from '../../src/contents/manager';
import { createLogger } from '../../src/gateway/logger';
import { StoreSettingsSchema } from '../../src/settings';
import { REPO_ROOT } from '../../test/support/jupyterServer';
import { cleanupStep, log } from '../cleanup';
import { sleep } from '../harness';
import { Random } from '../notebook';
import { formatProfileSummary, summariseProfile } from '../profile';
import { formatMs } from '../stats';
import { INDEX_TIMEOUT_MS, type IPlans, type IRescanResult } from './model';
import { NotebookTree, filesUnder, folderName, smallFile } from './tree';

/** Run git in `cwd` with an isolated configuration; throws on failure. */
export function git(cwd: string, home: string, args: string[]): { ms: number; stdout: string } {
  const start = performance.now();
  const result = spawnSync('git', args, {
    cwd,
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
    timeout: 10 * 60_000,
    env: {
      ...process.env,
      HOME: home,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: join(home, '.gitconfig'),
      GIT_AUTHOR_NAME: 'bench',
      GIT_AUTHOR_EMAIL: 'bench@example.invalid',
      GIT_COMMITTER_NAME: 'bench',
      GIT_COMMITTER_EMAIL: 'bench@example.invalid'
    }
  });
  const ms = performance.now() - start;
  if (result.status !== 0) {
    throw new Error(`git ${args.join(' ')} failed (${result.status}): ${result.stderr}`);
  }
  return { ms, stdout: result.stdout };
}

/** Profile this process (V8's sampling profiler) while `work` runs; returns the summary. */
async function profileInProcess(work: () => Promise<void>): Promise<string> {
  const session = new Session();
  session.connect();
  const post = (method: string): Promise<unknown> =>
    new Promise((resolve, reject) =>
      session.post(method, (error, result) => (error ? reject(error) : resolve(result)))
    );
  let profile: unknown;
  try {
    await post('Profiler.enable');
    await post('Profiler.start');
    try {
      await work();
    } finally {
      profile = ((await post('Profiler.stop')) as { profile: unknown }).profile;
    }
  } finally {
    session.disconnect();
  }
  const dir = await mkdtemp(join(tmpdir(), 'bench-rescan-profile-'));
  try {
    const file = join(dir, 'rescan.cpuprofile');
    await writeFile(file, JSON.stringify(profile));
    return formatProfileSummary(await summariseProfile(file, REPO_ROOT));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export async function measureRescan(
  tree: NotebookTree,
  plan: IPlans['rescan'],
  profile: boolean
): Promise<IRescanResult> {
  const notebooksDir = await tree.dir();
  const dir = await mkdtemp(join(tmpdir(), 'bench-rescan-'));
  const removeDir = cleanupStep(() => rm(dir, { recursive: true, force: true }));
  try {
    const root = join(dir, 'root');
    const home = join(dir, 'home');
    mkdirSync(home);
    cpSync(notebooksDir, root, { recursive: true });
    const notebooks = tree.paths.length;
    const perFolder = Math.ceil((plan.files - notebooks) / tree.plan.folders);
    const random = new Random(0x5ca7);
    let written = notebooks;
    let bytes = tree.bytes;
    for (let folder = 0; folder < tree.plan.folders && written < plan.files; folder++) {
      for (let i = 0; i < perFolder && written < plan.files; i++, written++) {
        const { ext, text } = smallFile(random, i % 3);
        writeFileSync(
          join(root, folderName(folder), `file-${String(i).padStart(3, '0')}.${ext}`),
          text
        );
        bytes += Buffer.byteLength(text);
      }
    }
    const files = filesUnder(root).length;
    if (files !== plan.files)
      throw new Error(`the re-scan root has ${files} files, not ${plan.files}`);
    log(`re-scan root: ${files.toLocaleString('en-US')} files, ${(bytes / 1e6).toFixed(1)} MB`);

    git(root, home, ['init', '-q']);
    const add = git(root, home, ['add', '-A']);
    const commit = git(root, home, ['commit', '-q', '-m', 'the tree']);
    log(`git add ${formatMs(add.ms)}, commit ${formatMs(commit.ms)}`);
    // A tree at rest: files written within the racy window of their first read are read again
    // by the next scan (their timestamps cannot prove them unchanged), which is not what this
    // phase measures.
    await sleep(RACY_WINDOW_MS);

    // The product: in this process, embedded store, no watcher, no periodic scan.
    const scanLines: Array<{ files: number; changed: number; gone: number; ms: number }> = [];
    const logger = createLogger({
      level: 'debug',
      destination: {
        write(line: string): void {
          if (line.includes('"scan complete"')) {
            scanLines.push(JSON.parse(line) as (typeof scanLines)[number]);
          }
        }
      }
    });
    const settings = StoreSettingsSchema.parse({
      local_store_dir: join(dir, 'objects'),
      journal_dir: join(dir, 'journal'),
      archive_watch: false,
      archive_scan_interval_seconds: 86_400
    });
    const indexStart = performance.now();
    const archiving = await Archiving.start(
      settings,
      new ContentsManager({ rootDir: root }),
      logger
    );
    const closeArchiving = cleanupStep(() => archiving.close(10_000));
    try {
      await archiving.firstScan();
      const deadline = indexStart + INDEX_TIMEOUT_MS;
      for (;;) {
        const status = archiving.queue?.status();
        if (status !== undefined && status.pending === 0 && status.archived >= notebooks) break;
        if (performance.now() > deadline) {
          throw new Error(
            `the first scan archived ${status?.archived ?? 0} of ${notebooks} notebooks`
          );
        }
        await sleep(50);
      }
      if (!(await archiving.settled(60_000))) throw new Error('the intake did not settle');
      const indexSeconds = (performance.now() - indexStart) / 1000;
      log(`re-scan: first scan archived ${notebooks} notebooks in ${indexSeconds.toFixed(1)} s`);

      const gitStatus = (oneThread: boolean): number => {
        const args = oneThread
          ? ['-c', 'core.preloadIndex=false', 'status', '--porcelain']
          : ['status', '--porcelain'];
        const { ms, stdout } = git(root, home, args);
        if (stdout !== '') throw new Error(`git status is not clean:\n${stdout.slice(0, 500)}`);
        return ms;
      };
      const scanOnce = async (): Promise<{ ms: number; cpuMs: number }> => {
        const cpu = process.cpuUsage();
        const start = performance.now();
        await archiving.scanNow('bench');
        const ms = performance.now() - start;
        const used = process.cpuUsage(cpu);
        const line = scanLines.at(-1);
        if (
          line === undefined ||
          line.changed !== 0 ||
          line.gone !== 0 ||
          line.files !== notebooks
        ) {
          throw new Error(
            `the re-scan of an unchanged root found changes: ${JSON.stringify(line)}`
          );
        }
        return { ms, cpuMs: (used.user + used.system) / 1000 };
      };
      for (let i = 0; i < plan.warmup; i++) {
        gitStatus(false);
        gitStatus(true);
        await scanOnce();
      }
      const result = {
        git: [] as number[],
        gitOneThread: [] as number[],
        scan: [] as number[],
        scanCpu: [] as number[]
      };
      const timed = async (): Promise<void> => {
        for (let i = 0; i < plan.runs; i++) {
          // Which goes first alternates.
          const scanFirst = i % 2 === 1;
          if (scanFirst) {
            const { ms, cpuMs } = await scanOnce();
            result.scan.push(ms);
            result.scanCpu.push(cpuMs);
          }
          result.git.push(gitStatus(false));
          result.gitOneThread.push(gitStatus(true));
          if (!scanFirst) {
            const { ms, cpuMs } = await scanOnce();
            result.scan.push(ms);
            result.scanCpu.push(cpuMs);
          }
        }
      };
      const loggedBefore = scanLines.length;
      const summary = profile ? await profileInProcess(timed) : (await timed(), undefined);
      const last = scanLines.at(-1)!;
      return {
        files,
        notebooks,
        bytes,
        gitAddSeconds: add.ms / 1000,
        gitCommitSeconds: commit.ms / 1000,
        indexSeconds,
        warmup: plan.warmup,
        ...result,
        scanFiles: last.files,
        scanChanged: last.changed,
        scanLoggedMs: scanLines.slice(loggedBefore).map(line => line.ms),
        profile: summary
      };
    } finally {
      await closeArchiving();
    }
  } finally {
    await removeDir();
  }
}
