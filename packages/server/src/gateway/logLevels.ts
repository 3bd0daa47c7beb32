/**
 * The levels a user can ask for with `--log-level`: apart from the logger, so that the command
 * line can offer them without loading it.
 */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
