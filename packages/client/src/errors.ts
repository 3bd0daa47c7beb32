/**
 * The errors the client throws on purpose. Each says in its message what went wrong and, where
 * the user can do something about it, what to do.
 */

/** The base of every error the client throws on purpose. */
export class StoreClientError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreClientError';
  }
}

/**
 * The server answered, but not with the status the call expects (or with a body that does not
 * match the contract).
 *
 * #### Notes
 * `message` and `reason` are the server's own (`{"message", "reason"}`, as Jupyter answers
 * errors) when the body has them.
 */
export class StoreError extends StoreClientError {
  /**
   * @param status - the HTTP status of the answer.
   * @param message - the server's message, or a sentence describing the answer.
   * @param reason - the server's machine-readable reason, or null.
   * @param url - the URL that was requested (never with a token in it).
   */
  constructor(
    readonly status: number,
    message: string,
    readonly reason: string | null,
    readonly url: string
  ) {
    super(message);
    this.name = 'StoreError';
  }
}

/** The server did not answer: nothing listens there, the connection broke, or it timed out. */
export class NetworkError extends StoreClientError {
  constructor(
    message: string,
    readonly url: string,
    options?: { cause?: unknown }
  ) {
    super(message, options);
    this.name = 'NetworkError';
  }
}

/** No running server could be chosen: none is running, or several are and none was named. */
export class ServerNotFoundError extends StoreClientError {
  /**
   * @param message - what was looked for, and where.
   * @param runtimeDir - the Jupyter runtime directory that was searched.
   * @param candidates - the URLs of the running servers, when several could be meant.
   */
  constructor(
    message: string,
    readonly runtimeDir: string,
    readonly candidates: readonly string[] = []
  ) {
    super(message);
    this.name = 'ServerNotFoundError';
  }
}

/**
 * The notebook of the calling kernel cannot be told: the code does not run in a kernel, the
 * kernel has no notebook session, or several notebooks share the kernel.
 */
export class CurrentNotebookError extends StoreClientError {
  /**
   * @param message - why, and that a path must be given instead.
   * @param paths - the notebooks sharing the kernel, when there are several.
   */
  constructor(
    message: string,
    readonly paths: readonly string[] = []
  ) {
    super(message);
    this.name = 'CurrentNotebookError';
  }
}
