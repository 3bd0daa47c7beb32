import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { HttpError } from '../errors';

/**
 * Let only `allowed` methods through (HEAD with GET); any other gets Jupyter's JSON 405 with an
 * `Allow` header, as tornado answers a method its handler does not define.
 */
export function onlyMethods(...allowed: string[]): RequestHandler {
  const methods = allowed.includes('GET') ? [...allowed, 'HEAD'] : allowed;
  return (request: Request, response: Response, next: NextFunction) => {
    if (methods.includes(request.method)) {
      next();
      return;
    }
    response.setHeader('Allow', methods.join(', '));
    next(new HttpError(405, `${request.method} is not allowed here`, 'method not allowed'));
  };
}
