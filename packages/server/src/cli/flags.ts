/**
 * The CLI's flag parser lives in the client package, whose `jupyter store` commands share it;
 * the server's commands import it from here.
 */
export { describeFlags, parseFlags, UsageError } from '@jupyter-store/client';
export type { FlagSpec, IFlag } from '@jupyter-store/client';
