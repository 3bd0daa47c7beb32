import type { ErrorRequestHandler, Response } from 'express';
import { HttpError } from '../errors';
import { ObjectStoreError, type ObjectStoreErrorKind } from '../storage/objectStore';
import {
  errorCatalogue,
  httpErrors,
  passedOnError,
  unhandledError,
  type ErrorName
} from './errorCatalogue';

/**
 * How a Node system error is answered: the catalogue entry, and the message naming the path
 * (an API path, never an OS path) and the action, or a plain sentence when neither is known.
 */
export interface IErrnoEntry {
  readonly error: ErrorName;
  readonly message: (subject?: string, action?: string) => string;
}

// Defined before the tables, which are built from it when the module loads.
namespace Private {
  export const permissionDenied: IErrnoEntry = {
    error: 'permissionDenied',
    message: subject => (subject ? `Permission denied: ${subject}` : 'Permission denied')
  };

  export const noSuchFile: IErrnoEntry = {
    error: 'notFound',
    message: subject =>
      subject ? `No such file or directory: ${subject}` : 'No such file or directory'
  };

  export const noSpace: IErrnoEntry = {
    error: 'noSpace',
    message: (subject, action) =>
      subject
        ? `No space left on the device while ${action ?? 'writing'} ${subject}`
        : 'No space left on the device'
  };

  /** Body-parser's types, by catalogue entry; another type keeps its own status and reason. */
  const bodyErrors: readonly ErrorName[] = [
    'badRequest',
    'bodyTooLarge',
    'unsupportedEncoding',
    'requestAborted',
    'requestSizeInvalid'
  ];

  /**
   * A 4xx error of body-parser (or another `http-errors` user). Its message may quote the
   * request, so a fixed sentence replaces it.
   */
  export function clientError(error: unknown, status: number): HttpError {
    const type = (error as { type?: unknown }).type;
    const reason = typeof type === 'string' ? type : errorCatalogue.badRequest.reason;
    const name = bodyErrors.find(
      candidate =>
        errorCatalogue[candidate].reason === reason && errorCatalogue[candidate].status === status
    );
    const message = publicMessage(status);
    return name
      ? httpErrors[name](message, { cause: error })
      : passedOnError(status, message, reason, { cause: error });
  }

  function publicMessage(status: number): string {
    if (status === 413) return 'The request body is too large';
    if (status === 415) return 'Unsupported request body encoding';
    return 'Malformed request';
  }
}

/**
 * The one errno table. Besides Node's codes it holds the root file system's own
 * (`EOUTSIDEROOT`, `EDANGLINGLINK`, `ENOTREGULAR`, see `contents/rootFs.ts`). Statuses are
 * Jupyter's for the same failures; a code missing here is a 500.
 */
export const errnoTable: Readonly<Record<string, IErrnoEntry>> = Object.freeze({
  EOUTSIDEROOT: {
    error: 'outsideRoot',
    message: subject => `${subject ?? 'The path'} is outside root contents directory`
  },
  EDANGLINGLINK: {
    error: 'danglingSymlink',
    message: subject =>
      `${subject ?? 'The path'} is a symlink to a file that does not exist; ` +
      'nothing is written through it'
  },
  ELOOP: { error: 'badPath', message: subject => `${subject ?? 'The path'} is a symlink loop` },
  ENOTREGULAR: {
    error: 'badType',
    message: subject => `${subject ?? 'The path'} is not a regular file`
  },
  EACCES: Private.permissionDenied,
  EPERM: Private.permissionDenied,
  EROFS: Private.permissionDenied,
  ENOENT: Private.noSuchFile,
  ENOTDIR: Private.noSuchFile,
  EISDIR: { error: 'badType', message: subject => `${subject ?? 'The path'} is a directory` },
  EEXIST: {
    error: 'conflict',
    message: subject => (subject ? `File already exists: ${subject}` : 'The file already exists')
  },
  ENAMETOOLONG: {
    error: 'nameTooLong',
    message: subject => (subject ? `The name ${subject} is too long` : 'The name is too long')
  },
  ENOSPC: Private.noSpace,
  EDQUOT: Private.noSpace
} satisfies Record<string, IErrnoEntry>);

/**
 * The one object-store mapping: the status of each kind of `ObjectStoreError`. The reason is
 * the store's own code (`NoSuchKey`, `AccessDenied`, …) and the message the error's, which the
 * storage layer writes fit for users.
 */
export const objectStoreStatus: Readonly<Record<ObjectStoreErrorKind, number>> = Object.freeze({
  'not-found': 404,
  'access-denied': 403,
  'bad-request': 400,
  'too-large': 413,
  unavailable: 502,
  'not-supported': 501
});

/**
 * A Node system error as the catalogue answers it, or undefined for anything else.
 *
 * @param subject - the API path the operation was on, for the message.
 * @param action - what was being done (`saving`, `reading`, …), for the message.
 */
export function errnoError(
  error: unknown,
  subject?: string,
  action?: string
): HttpError | undefined {
  const code = (error as NodeJS.ErrnoException | null | undefined)?.code;
  if (typeof code !== 'string' || !Object.hasOwn(errnoTable, code)) return undefined;
  const entry = errnoTable[code];
  return httpErrors[entry.error](entry.message(subject, action), { cause: error });
}

/**
 * The answer to any error the handler knows: an `HttpError` itself, an `ObjectStoreError`, a
 * Node system error (by the errno table, with a message naming no path) or a body-parser
 * error; undefined for anything else, which is a 500. Routers that render errors themselves
 * (the landing pages) use it to answer as the handler would.
 */
export function toHttpError(error: unknown): HttpError | undefined {
  if (error instanceof HttpError) return error;
  if (error instanceof ObjectStoreError) {
    return passedOnError(objectStoreStatus[error.kind], error.message, error.code, {
      cause: error
    });
  }
  const status = (error as { status?: unknown } | null)?.status;
  if (typeof status === 'number') {
    return status >= 400 && status < 500 ? Private.clientError(error, status) : undefined;
  }
  return errnoError(error);
}

/** Send Jupyter's error body `{"message", "reason"}` with the error's status. */
export function sendError(res: Response, error: HttpError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.status(error.status);
  res.setHeader('Content-Type', 'application/json');
  res.end(errorBody(error));
}

/** Jupyter's error body `{"message", "reason"}` of an error, as JSON. */
export function errorBody(error: HttpError): string {
  return JSON.stringify({ message: error.message, reason: error.reason });
}

/**
 * The one place where errors become responses. Typed errors keep their status; object-store
 * and file-system errors are mapped by the tables above; body-parser's errors keep theirs (413
 * too large, 400 bad encoding); anything unexpected is a 500 whose body says only "Unhandled
 * error", never a stack trace.
 */
export function errorHandler(
  log: (message: string, error: unknown) => void = defaultLog
): ErrorRequestHandler {
  return (error, _req, res, _next) => {
    const answer = toHttpError(error);
    if (answer) {
      sendError(res, answer);
      return;
    }
    log('unhandled error', error);
    sendError(res, unhandledError());
  };
}

function defaultLog(message: string, error: unknown): void {
  const detail = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  process.stderr.write(`[jupyter-store] ${message}: ${detail}\n`);
}
