/**
 * What every benchmark does around its servers: a list of clean-up steps run once, whatever
 * happened (including SIGINT, SIGTERM and SIGHUP), and a log on stderr.
 */

/** Write one benchmark progress line on stderr. */
export function log(message: string): void {
  process.stderr.write(`[bench] ${message}\n`);
}

/** Steps to run at the end, last registered first. */
export const cleanups: Array<() => Promise<void>> = [];
let cleaning: Promise<void> | undefined;

/**
 * Register a clean-up step and return a function that runs it now: the step runs once, when
 * that function is called or at the end, whichever comes first.
 */
export function cleanupStep(step: () => Promise<void>): () => Promise<void> {
  let done: Promise<void> | undefined;
  const once = (): Promise<void> => (done ??= step());
  cleanups.push(once);
  return once;
}

/** Has clean-up begun (after a signal the servers go away under the run)? */
export function cleaningUp(): boolean {
  return cleaning !== undefined;
}

/** Stop every server (and remove temporary trees), once, whatever happened. */
export function cleanUp(): Promise<void> {
  cleaning ??= (async () => {
    for (const step of cleanups.reverse()) {
      try {
        await step();
      } catch (error) {
        log(`clean-up: ${(error as Error).message}`);
      }
    }
  })();
  return cleaning;
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    log(`${signal}: stopping the servers`);
    void cleanUp().finally(() => process.exit(130));
  });
}
