/**
 * Typed HTTP errors. Every error the gateway raises on purpose carries a status, a message and a
 * reason; one handler (see `http/errors.ts`) turns them into Jupyter's `{"message", "reason"}`.
 *
 * Raise them through the catalogue's named constructors (`httpErrors` in
 * `http/errorCatalogue.ts`), which give each reason its one status.
 */
export class HttpError extends Error {
  /**
   * @param status - the HTTP status to answer with.
   * @param message - a sentence for the user; never a stack trace or a credential.
   * @param reason - a short machine-readable reason, or null as Jupyter sends for plain errors.
   * @param options - the error's cause, kept for logs and never sent.
   */
  constructor(
    readonly status: number,
    message: string,
    readonly reason: string | null = null,
    options?: ErrorOptions
  ) {
    super(message, options);
    this.name = 'HttpError';
  }
}

/** Is this a Node system error with the given code? */
export function hasErrorCode(error: unknown, ...codes: string[]): boolean {
  return (
    typeof error === 'object' &&
    error !== null &&
    typeof (error as NodeJS.ErrnoException).code === 'string' &&
    codes.includes((error as NodeJS.ErrnoException).code as string)
  );
}
