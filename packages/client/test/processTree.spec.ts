import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ancestry,
  connectionFileOf,
  findKernelProcess,
  procProcessTable
} from '../src/processTree';
import { fakeProcessTable, temporaryDir } from './fakes';

const KERNEL_ID = '3f1c0a52-8d3e-4c6b-9a57-2b0f6f0d9e11';
const CONNECTION_FILE = `/run/user/jupyter/runtime/kernel-${KERNEL_ID}.json`;
const exists = (file: string): boolean => file === CONNECTION_FILE;

describe('#ancestry()', () => {
  test('the process and its ancestors, nearest first, until one cannot be read', () => {
    const table = fakeProcessTable([
      { pid: 30, ppid: 20, argv: ['c'] },
      { pid: 20, ppid: 10, argv: ['b'] },
      { pid: 10, ppid: 5, argv: ['a'] }
    ]);
    expect(ancestry(30, table).map(info => info.pid)).toEqual([30, 20, 10]);
  });

  test('stops at a cycle instead of looping', () => {
    const table = fakeProcessTable([
      { pid: 2, ppid: 3, argv: [] },
      { pid: 3, ppid: 2, argv: [] }
    ]);
    expect(ancestry(2, table).map(info => info.pid)).toEqual([2, 3]);
  });

  test('reads this process and its parent from /proc', () => {
    const chain = ancestry(process.pid, procProcessTable);
    expect(chain[0].pid).toBe(process.pid);
    expect(chain[0].ppid).toBe(process.ppid);
    expect(chain[0].argv).toContain(process.argv[1]);
    expect(chain[1]?.pid).toBe(process.ppid);
  });
});

describe('#connectionFileOf()', () => {
  test.each([
    [['python', '-m', 'ipykernel_launcher', '-f', CONNECTION_FILE]],
    [['python', '-m', 'ipykernel_launcher', `--f=${CONNECTION_FILE}`]],
    [['deno', 'jupyter', '--kernel', '--conn', CONNECTION_FILE]],
    [['tslab', 'kernel', `--config-path=${CONNECTION_FILE}`]]
  ])('finds the kernel id in %j', argv => {
    expect(connectionFileOf(argv, exists)).toEqual({
      kernelId: KERNEL_ID,
      connectionFile: CONNECTION_FILE
    });
  });

  test.each([
    ['a shell command that mentions one', ['/bin/sh', '-c', `jupyter store x ${CONNECTION_FILE}`]],
    ['a relative path', ['python', '-f', `kernel-${KERNEL_ID}.json`]],
    ['a file that does not exist', ['python', '-f', '/tmp/kernel-gone.json']],
    ['another name', ['python', '-f', '/run/user/jupyter/runtime/jpserver-1.json']]
  ])('is not fooled by %s', (_what, argv) => {
    expect(connectionFileOf(argv, exists)).toBeUndefined();
  });

  test('checks that the file exists on disk by default', () => {
    const dir = temporaryDir('kernel');
    try {
      const file = join(dir, 'kernel-abc.json');
      expect(connectionFileOf(['python', '-f', file])).toBeUndefined();
      writeFileSync(file, '{}');
      expect(connectionFileOf(['python', '-f', file])?.kernelId).toBe('abc');
    } finally {
      rmSync(dir, { recursive: true });
    }
  });
});

describe('#findKernelProcess()', () => {
  test('the nearest ancestor started with a connection file', () => {
    const table = fakeProcessTable([
      { pid: 50, ppid: 40, argv: ['node', 'main.js', 'publish'] },
      { pid: 40, ppid: 30, argv: ['/bin/sh', '-c', 'jupyter store publish'] },
      { pid: 30, ppid: 20, argv: ['python', '-m', 'ipykernel_launcher', '-f', CONNECTION_FILE] },
      {
        pid: 20,
        ppid: 1,
        argv: ['python', '-m', 'ipykernel_launcher', '-f', '/other/kernel-x.json']
      }
    ]);
    expect(findKernelProcess(50, table, file => file.endsWith('.json'))).toEqual({
      kernelId: KERNEL_ID,
      connectionFile: CONNECTION_FILE,
      pid: 30
    });
  });

  test('the process itself, when it is the kernel (a TypeScript kernel using the library)', () => {
    const table = fakeProcessTable([
      { pid: 7, ppid: 1, argv: ['deno', 'jupyter', '--kernel', '--conn', CONNECTION_FILE] }
    ]);
    expect(findKernelProcess(7, table, exists)?.pid).toBe(7);
  });

  test('nothing outside a kernel', () => {
    const table = fakeProcessTable([{ pid: 7, ppid: 1, argv: ['bash'] }]);
    expect(findKernelProcess(7, table, exists)).toBeUndefined();
  });
});
