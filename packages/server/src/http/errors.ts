import type { ErrorRequestHandler, Response } from 'express';
import { HttpError } from '../errors';

/** Send Jupyter's error body `{"message", "reason"}` with the status. */
export function sendError(
  res: Response,
  status: number,
  message: string,
  reason: string | null
): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.status(status);
  res.setHeader('Content-Type', 'application/json');
  res.end(JSON.stringify({ message, reason }));
}

/**
 * The one place where errors become responses. Typed errors keep their status; body-parser's
 * errors keep theirs (413 too large, 400 bad encoding); anything unexpected is a 500 whose body
 * says only "Unhandled error", never a stack trace.
 */
export function errorHandler(
  log: (message: string, error: unknown) => void = defaultLog
): ErrorRequestHandler {
  return (error, _req, res, _next) => {
    if (error instanceof HttpError) {
      sendError(res, error.status, error.message, error.reason);
      return;
    }
    const status = typeof error?.status === 'number' ? error.status : undefined;
    if (status !== undefined && status >= 400 && status < 500) {
      const reason = typeof error.type === 'string' ? error.type : 'bad request';
      sendError(res, status, publicMessage(status), reason);
      return;
    }
    log('unhandled error', error);
    sendError(res, 500, 'Unhandled error', null);
  };
}

function publicMessage(status: number): string {
  if (status === 413) return 'The request body is too large';
  if (status === 415) return 'Unsupported request body encoding';
  return 'Malformed request';
}

function defaultLog(message: string, error: unknown): void {
  const detail = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  process.stderr.write(`[jupyter-store] ${message}: ${detail}\n`);
}
