import pino from 'pino';
import type { LogLevel } from './logLevels';

/** The structured logger every gateway module writes to (pino: one JSON object per line). */
export type Logger = pino.Logger;

export { LOG_LEVELS, type LogLevel } from './logLevels';

/**
 * Credentials can reach a log line only by mistake; these paths are censored anyway, so that a
 * mistake does not become a leak.
 */
const REDACTED_PATHS = [
  'token',
  '*.token',
  'password',
  '*.password',
  'headers.authorization',
  'headers.cookie',
  '*.headers.authorization',
  '*.headers.cookie'
];

/**
 * A logger writing JSON lines to `destination` (default: standard error, so standard output
 * stays free for the start banner and for commands whose output is data).
 */
export function createLogger(
  options: { level?: LogLevel; destination?: pino.DestinationStream } = {}
): Logger {
  return pino(
    {
      name: 'jupyter-store',
      level: options.level ?? 'info',
      base: { pid: process.pid },
      redact: { paths: REDACTED_PATHS, censor: '<redacted>' },
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: label => ({ level: label }) }
    },
    options.destination ?? pino.destination({ fd: 2, sync: true })
  );
}

/** Query arguments whose values are secrets: Jupyter scrubs the same ones from its access log. */
const SECRET_ARGUMENTS = /([?&](?:token|_xsrf)=)[^&#]*/gi;

/** A URL fit for a log line: secret query arguments replaced by `<redacted>`. */
export function scrubUrl(url: string): string {
  return url.replace(SECRET_ARGUMENTS, '$1<redacted>');
}

/**
 * Log a finished request at the level Jupyter's access log uses: debug for success and
 * redirects, warn for client errors, error for server errors.
 */
export function logRequest(
  log: Logger,
  method: string | undefined,
  url: string,
  status: number,
  startedAt: bigint,
  handledBy: 'gateway' | 'upstream'
): void {
  const entry = {
    method,
    url: scrubUrl(url),
    status,
    ms: Number(process.hrtime.bigint() - startedAt) / 1e6,
    by: handledBy
  };
  if (status >= 500) log.error(entry, 'request failed');
  else if (status >= 400) log.warn(entry, 'request refused');
  else log.debug(entry, 'request');
}
