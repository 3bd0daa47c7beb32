/**
 * `processStart` tells one process from a later one with the same pid, which is what keeps
 * `killUpstreamGroup` from killing another test's Jupyter after pids wrap around.
 */
import { spawn } from 'node:child_process';
import { processStart } from './gateway';

test('a running process has one start time, an ended one none', async () => {
  const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 200)'], { stdio: 'ignore' });
  const pid = child.pid as number;
  const start = processStart(pid);
  expect(start).toMatch(/^\d+$/);
  expect(processStart(pid)).toBe(start);
  expect(processStart(process.pid)).toMatch(/^\d+$/);
  await new Promise(resolve => child.once('exit', resolve));
  expect(processStart(pid)).toBeUndefined();
});
