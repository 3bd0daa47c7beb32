import express, { type RequestHandler } from 'express';

/**
 * The one body reader of the gateway's own routes: the raw bytes, of any content type, up to
 * `limitBytes` (413 beyond).
 *
 * #### Notes
 * Bodies are never inflated: a `Content-Encoding` other than `identity` is refused with 415.
 * Jupyter does not inflate request bodies either, and inflating would let a 200 KiB gzip body
 * grow to hundreds of MiB in memory before any limit applied.
 */
export function rawBody(limitBytes: number): RequestHandler {
  return express.raw({ type: () => true, limit: limitBytes, inflate: false });
}
