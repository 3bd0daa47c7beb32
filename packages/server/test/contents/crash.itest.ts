/**
 * Writes leave no torn file: a process killed at any moment while saving leaves the old bytes or
 * the new bytes, never a mix, and never a half-written file under the target's name.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs/promises';
import * as os from 'node:os';
import * as path from 'node:path';

const FILEIO = path.resolve(__dirname, '../../lib/contents/fileio.js');

/** A child that rewrites the target forever with alternating 64 MiB contents. */
const WRITER = `
const { writeFileAtomic } = require(${JSON.stringify(FILEIO)});
const [target] = process.argv.slice(1);
const contents = [Buffer.alloc(64 * 1024 * 1024, 0x61), Buffer.alloc(64 * 1024 * 1024, 0x62)];
(async () => {
  process.stdout.write('ready\\n');
  for (let i = 0; ; i++) await writeFileAtomic(target, contents[i % 2]);
})();
`;

const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

describe('crash safety of writes', () => {
  it('leaves the old or the new content whenever the writer is killed', async () => {
    await fs.access(FILEIO).catch(() => {
      throw new Error(`${FILEIO} is missing: run "npm run build" first (scripts/test.sh does)`);
    });
    const root = await fs.mkdtemp(path.join(os.tmpdir(), 'crash-itest-'));
    const target = path.join(root, 'big.ipynb');
    const old = Buffer.alloc(1024 * 1024, 0x6f);
    await fs.writeFile(target, old);
    const allowed = new Set([
      sha(old),
      sha(Buffer.alloc(64 * 1024 * 1024, 0x61)),
      sha(Buffer.alloc(64 * 1024 * 1024, 0x62))
    ]);
    // Kill at a spread of moments, so some land mid-write; every outcome must be whole.
    for (const delayMs of [5, 40, 90, 160, 250, 400]) {
      const child = spawn(process.execPath, ['-e', WRITER, target], {
        stdio: ['ignore', 'pipe', 'inherit']
      });
      await new Promise<void>(resolve => child.stdout!.once('data', () => resolve()));
      await new Promise(resolve => setTimeout(resolve, delayMs));
      child.kill('SIGKILL');
      await new Promise(resolve => child.once('exit', resolve));
      expect(allowed.has(sha(await fs.readFile(target)))).toBe(true);
    }
    // Only hidden temporaries can be left by a kill, never a second visible file.
    const visible = (await fs.readdir(root)).filter(name => !name.startsWith('.'));
    expect(visible).toEqual(['big.ipynb']);
    await fs.rm(root, { recursive: true, force: true });
  }, 60_000);
});
