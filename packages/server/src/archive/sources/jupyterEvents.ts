import * as net from 'node:net';
import WebSocket from 'ws';
import type { Logger } from '../../gateway/logger';
import { describeUpstream, type UpstreamAddress } from '../../gateway/upstream';
import type { IChangeSink } from './changes';

/**
 * The `$id` of the schema Jupyter Server's contents manager emits its events under
 * (`jupyter_server/event_schemas/contents_service/v1.yaml`).
 */
export const CONTENTS_SERVICE_SCHEMA =
  'https://events.jupyter.org/jupyter_server/contents_service/v1';

/** What one message of the event bus means for the archive. */
export type JupyterEventMeaning =
  | { readonly kind: 'changed'; readonly path: string }
  | { readonly kind: 'removed'; readonly path: string }
  | { readonly kind: 'renamed'; readonly from: string; readonly to: string }
  | { readonly kind: 'ignored'; readonly why: string }
  | { readonly kind: 'malformed'; readonly why: string };

/**
 * Read one message of `{base}api/events/subscribe`.
 *
 * #### Notes
 * - Jupyter Server 2 writes each event as one JSON text frame: the event's own fields next to
 *   `schema_id` (`{"schema_id": "…/contents_service/v1", "action": "save", "path": "a.ipynb"}`),
 *   with no version and no timestamp. The fields nested in a `data` object, the shape that
 *   `POST api/events` takes, are accepted too, so that a wrapper or a later release that nests
 *   them is still understood.
 * - Only the contents service's events matter; every other schema (kernel actions, the gateway
 *   client, extensions' own) is ignored, and so is `get`, which changes nothing.
 * - `upload` and `create` are in the schema's enum but stock Jupyter Server never emits them (an
 *   upload or a new file is a `save`); they are honoured for contents managers that do.
 * - Paths arrive as the contents manager was given them: `copy` reports `/a-Copy1.ipynb` with a
 *   leading slash and the client's `copy_from` unchanged. They are normalised to API paths. A
 *   path with `.` or `..` segments is refused, because any authenticated client can put an event
 *   on the bus (`POST api/events`) and the archive must not be pointed outside the root.
 */
export function interpretJupyterEvent(text: string): JupyterEventMeaning {
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return { kind: 'malformed', why: 'not JSON' };
  }
  if (!isRecord(message)) return { kind: 'malformed', why: 'not a JSON object' };
  if (typeof message.schema_id !== 'string') {
    return { kind: 'malformed', why: 'no schema_id' };
  }
  if (message.schema_id !== CONTENTS_SERVICE_SCHEMA) {
    return { kind: 'ignored', why: `schema ${message.schema_id}` };
  }
  const data = message.action === undefined && isRecord(message.data) ? message.data : message;
  const action = data.action;
  if (typeof action !== 'string') return { kind: 'malformed', why: 'no action' };
  const path = apiPath(data.path);
  if (path === null) return { kind: 'malformed', why: `a ${action} event without a valid path` };
  switch (action) {
    case 'save':
    case 'upload':
    case 'create':
    case 'copy':
      return { kind: 'changed', path };
    case 'delete':
      return { kind: 'removed', path };
    case 'rename': {
      const from = apiPath(data.source_path);
      if (from === null) return { kind: 'malformed', why: 'a rename without a valid source_path' };
      return { kind: 'renamed', from, to: path };
    }
    case 'get':
      return { kind: 'ignored', why: 'get' };
    default:
      // The schema's enum is closed; a new action means a newer schema, not a broken message.
      return { kind: 'ignored', why: `action ${action}` };
  }
}

/**
 * Feeds the archive intake from the upstream Jupyter Server's event bus, so that files changed
 * through Jupyter itself (not through the gateway's contents API) are seen at once rather than
 * at the next scan.
 *
 * #### Notes
 * - One websocket to `{base}api/events/subscribe`, authenticated like every gateway sub-request
 *   with `Authorization: token …` (nothing for a server without authentication; the token never
 *   goes into the URL, where logs would keep it). Jupyter refuses it with 403 for a missing or
 *   wrong token and for a `Host` that is not local; it applies its Origin check only to requests
 *   that carry an Origin and are not token-authenticated. So the source sends no Origin and a
 *   Host that Jupyter's `check_host` always accepts: the loopback address itself, or `localhost`
 *   (unix sockets, host names). Jupyter does not route by Host.
 * - The bus only reports what went through Jupyter's contents manager, and only when it
 *   succeeded; kernels and terminals write files behind its back (the watcher and the scan cover
 *   those). Events sent while no subscription was in place are lost, so every subscription after
 *   the first attempt (a reconnect, or a first success after failures) asks the intake to
 *   rescan; the start-up scan covers the time before {@link start}.
 * - Failures never throw: they are retried with capped exponential backoff and equal jitter
 *   (half the bound fixed, half random, so that a flapping upstream never causes a busy loop),
 *   and {@link status} says why the source is not connected. A refusal (401, 403, 404 or
 *   another 4xx instead of the upgrade) does not heal by itself soon, so it is logged once as a
 *   warning and retried at the cap; other failures are warned about once per outage.
 * - Timers are unref'd: a forgotten {@link close} does not keep the process alive by a timer.
 */
export class JupyterEventSource {
  constructor(options: JupyterEventSource.IOptions) {
    this._upstream = options.upstream;
    this._path = `${normaliseBaseUrl(options.baseUrl)}api/events/subscribe`;
    this._token = options.token === null || options.token === '' ? null : options.token;
    this._sink = options.sink;
    this._log = options.log;
    this._backoff = { baseMs: 250, capMs: 10_000, ...options.backoff };
  }

  /** Start subscribing; returns at once. Calling it again, or after {@link close}, does nothing. */
  start(): void {
    if (this._started || this._closed) return;
    this._started = true;
    this._reason = 'connecting';
    this._connect();
  }

  /** Whether the subscription is in place, and if not, why. */
  status(): JupyterEventSource.IStatus {
    return {
      connected: this._connected,
      reason: this._connected ? null : this._reason,
      received: this._received,
      malformed: this._malformed
    };
  }

  /**
   * Stop for good: no reconnect, and the socket is closed (with a closing handshake when it is
   * open, cut after a second if the upstream does not answer).
   */
  async close(): Promise<void> {
    this._closed = true;
    this._clearTimers();
    const socket = this._socket;
    if (socket !== null) {
      await new Promise<void>(resolve => {
        socket.once('close', () => resolve());
        if (socket.readyState === WebSocket.OPEN) {
          socket.close(1000, 'closing');
          const timer = setTimeout(() => socket.terminate(), CLOSE_GRACE_MS);
          timer.unref();
          socket.once('close', () => clearTimeout(timer));
        } else {
          socket.terminate();
        }
      });
    }
    this._connected = false;
    this._reason = 'closed';
  }

  /** Open one websocket; its `close` event decides what comes next. */
  private _connect(): void {
    if (this._closed) return;
    this._retryTimer = null;
    const headers: Record<string, string> = { Host: hostHeader(this._upstream) };
    if (this._token !== null) headers.Authorization = `token ${this._token}`;
    const options: WebSocket.ClientOptions = {
      headers,
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
      followRedirects: false,
      perMessageDeflate: false,
      maxPayload: MAX_MESSAGE_BYTES
    };
    const upstream = this._upstream;
    if (upstream.kind === 'unix') {
      options.createConnection = () => net.connect({ path: upstream.socketPath });
    }
    let socket: WebSocket;
    try {
      socket = new WebSocket(`ws://${urlAuthority(upstream)}${this._path}`, options);
    } catch (error) {
      // Only a URL ws cannot parse gets here; retrying slowly keeps the contract of never throwing.
      this._failed({ kind: 'refused', reason: `cannot subscribe: ${(error as Error).message}` });
      return;
    }
    this._socket = socket;
    let failure: IFailure | null = null;
    socket.on('unexpected-response', (_request, response) => {
      response.resume();
      failure = refusal(response.statusCode ?? 0, this._path);
      socket.terminate();
    });
    socket.on('error', error => {
      failure ??= {
        kind: 'unavailable',
        reason: `cannot reach the upstream at ${describeUpstream(upstream)}: ${error.message}`
      };
    });
    socket.on('open', () => this._opened(socket));
    socket.on('message', (data, isBinary) => this._message(data, isBinary));
    socket.on('pong', () => {
      this._alive = true;
    });
    socket.once('close', code => {
      if (socket !== this._socket) return;
      this._socket = null;
      this._stopHeartbeat();
      const wasOpen = this._connected;
      this._connected = false;
      if (this._closed) return;
      if (wasOpen) this._dropped(code);
      else this._failed(failure ?? { kind: 'unavailable', reason: 'the subscription failed' });
    });
  }

  private _opened(socket: WebSocket): void {
    if (socket !== this._socket || this._closed) return;
    this._connected = true;
    this._reason = null;
    this._openedAt = Date.now();
    const hadTrouble = this._warned.size > 0 || this._needsRescan;
    this._warned.clear();
    this._startHeartbeat(socket);
    if (hadTrouble) {
      this._log.info(
        { upstream: describeUpstream(this._upstream) },
        "subscribed to Jupyter's event bus again"
      );
    } else {
      this._log.debug(
        { upstream: describeUpstream(this._upstream) },
        "subscribed to Jupyter's event bus"
      );
    }
    if (this._needsRescan) {
      this._needsRescan = false;
      this._report(() => this._sink.rescan('the event subscription was interrupted', 'events'));
    }
  }

  /** An open subscription ended: reconnect, from the first backoff step if it had been stable. */
  private _dropped(code: number): void {
    this._needsRescan = true;
    if (Date.now() - this._openedAt >= this._backoff.capMs) this._attempt = 0;
    this._reason = `the subscription was interrupted (websocket close ${code}); reconnecting`;
    this._log.warn(
      { upstream: describeUpstream(this._upstream), code },
      "the subscription to Jupyter's event bus was interrupted; reconnecting"
    );
    this._scheduleRetry(this._delay(this._attempt++));
  }

  /** An attempt failed before the subscription opened. */
  private _failed(failure: IFailure): void {
    this._needsRescan = true;
    this._reason = failure.reason;
    const context = { upstream: describeUpstream(this._upstream), reason: failure.reason };
    if (!this._warned.has(failure.kind)) {
      this._warned.add(failure.kind);
      if (failure.kind === 'refused') {
        this._log.warn(
          context,
          `${failure.reason}: changes made through Jupyter are seen only by the watcher and the ` +
            'scan until it accepts; check the token, and that the upstream accepts a local Host. ' +
            'Retrying slowly'
        );
      } else {
        this._log.warn(context, "cannot subscribe to Jupyter's event bus; retrying");
      }
    } else {
      this._log.debug(context, "subscribing to Jupyter's event bus failed again");
    }
    const delay =
      failure.kind === 'refused' ? this._jitter(this._backoff.capMs) : this._delay(this._attempt++);
    this._scheduleRetry(delay);
  }

  private _message(data: WebSocket.RawData, isBinary: boolean): void {
    this._received++;
    const meaning = isBinary
      ? ({ kind: 'malformed', why: 'a binary frame' } as const)
      : interpretJupyterEvent(rawText(data));
    switch (meaning.kind) {
      case 'changed':
        this._report(() => this._sink.changed(meaning.path, 'events'));
        break;
      case 'removed':
        this._report(() => this._sink.removed(meaning.path, 'events'));
        break;
      case 'renamed':
        this._report(() => this._sink.renamed(meaning.from, meaning.to, 'events'));
        break;
      case 'malformed':
        this._malformed++;
        this._log.debug(
          { why: meaning.why, excerpt: isBinary ? undefined : rawText(data).slice(0, 200) },
          "ignored a malformed message from Jupyter's event bus"
        );
        break;
      case 'ignored':
        break;
    }
  }

  /** Sinks do not throw; if one does anyway, the subscription must survive it. */
  private _report(call: () => void): void {
    try {
      call();
    } catch (error) {
      this._log.error({ err: error }, 'the archive intake threw on a change from the event bus');
    }
  }

  private _scheduleRetry(delayMs: number): void {
    if (this._closed) return;
    this._retryTimer = setTimeout(() => this._connect(), delayMs);
    this._retryTimer.unref();
  }

  /**
   * Ping now and then and cut a subscription whose peer stopped answering (a hung or vanished
   * upstream leaves a TCP connection that never closes by itself).
   */
  private _startHeartbeat(socket: WebSocket): void {
    this._alive = true;
    this._heartbeat = setInterval(() => {
      if (socket.readyState !== WebSocket.OPEN) return;
      if (!this._alive) {
        this._log.warn("Jupyter's event bus stopped answering pings; reconnecting");
        socket.terminate();
        return;
      }
      this._alive = false;
      socket.ping();
    }, HEARTBEAT_MS);
    this._heartbeat.unref();
  }

  private _stopHeartbeat(): void {
    if (this._heartbeat !== null) clearInterval(this._heartbeat);
    this._heartbeat = null;
  }

  private _clearTimers(): void {
    if (this._retryTimer !== null) clearTimeout(this._retryTimer);
    this._retryTimer = null;
    this._stopHeartbeat();
  }

  /** The capped exponential bound of attempt `attempt`, jittered. */
  private _delay(attempt: number): number {
    const bound = Math.min(this._backoff.capMs, this._backoff.baseMs * 2 ** Math.min(attempt, 30));
    return this._jitter(bound);
  }

  /** Equal jitter: half of `bound` fixed, half random. */
  private _jitter(bound: number): number {
    return bound / 2 + (Math.random() * bound) / 2;
  }

  private readonly _upstream: UpstreamAddress;
  private readonly _path: string;
  private readonly _token: string | null;
  private readonly _sink: IChangeSink;
  private readonly _log: Logger;
  private readonly _backoff: { baseMs: number; capMs: number };
  private _started = false;
  private _closed = false;
  private _socket: WebSocket | null = null;
  private _connected = false;
  private _reason: string | null = 'not started';
  private _received = 0;
  private _malformed = 0;
  /** Consecutive failed attempts: the exponent of the next backoff. */
  private _attempt = 0;
  /** Set by any failure or drop: the next subscription must ask for a rescan. */
  private _needsRescan = false;
  /** The failure kinds already warned about since the last successful subscription. */
  private readonly _warned = new Set<IFailure['kind']>();
  private _openedAt = 0;
  private _alive = true;
  private _retryTimer: NodeJS.Timeout | null = null;
  private _heartbeat: NodeJS.Timeout | null = null;
}

export namespace JupyterEventSource {
  export interface IOptions {
    /** Where the upstream Jupyter Server listens. */
    upstream: UpstreamAddress;
    /** Its `base_url` (`/` or `/x/`; a missing slash is added). */
    baseUrl: string;
    /** Its token, or null for a server without authentication. */
    token: string | null;
    sink: IChangeSink;
    log: Logger;
    /** Reconnect delays: the first bound and the cap (ms); default 250 ms and 10 s. */
    backoff?: { baseMs?: number; capMs?: number };
  }

  export interface IStatus {
    /** Whether the subscription is open now. */
    readonly connected: boolean;
    /** Why it is not: `connecting`, a refusal, the last error; null when connected. */
    readonly reason: string | null;
    /** Messages received since start, of every schema. */
    readonly received: number;
    /** Of those, the ones that could not be understood (ignored). */
    readonly malformed: number;
  }
}

/** Why an attempt failed: a refusal is retried slowly, the rest with backoff. */
interface IFailure {
  readonly kind: 'refused' | 'unavailable';
  readonly reason: string;
}

/** The longest an opening handshake may take before the attempt counts as failed. */
const HANDSHAKE_TIMEOUT_MS = 10_000;

/** How often an open subscription is pinged; two silent intervals cut it. */
const HEARTBEAT_MS = 30_000;

/** How long {@link JupyterEventSource.close} waits for the closing handshake. */
const CLOSE_GRACE_MS = 1_000;

/** Events are a few hundred bytes; anything near this is not an event. */
const MAX_MESSAGE_BYTES = 1024 * 1024;

function refusal(status: number, path: string): IFailure {
  if (status === 401 || status === 403) {
    return { kind: 'refused', reason: `the upstream refused the subscription (${status})` };
  }
  if (status === 404) {
    return { kind: 'refused', reason: `the upstream has no event bus at ${path} (404)` };
  }
  return {
    kind: status >= 500 ? 'unavailable' : 'refused',
    reason: `the upstream answered ${status} instead of opening the subscription`
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A path as an API path (no leading, trailing or doubled slashes), or null if it is unusable. */
function apiPath(value: unknown): string | null {
  if (typeof value !== 'string' || value.includes('\0')) return null;
  const parts = value.split('/').filter(part => part !== '');
  if (parts.some(part => part === '.' || part === '..')) return null;
  return parts.join('/');
}

function rawText(data: WebSocket.RawData): string {
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  if (data instanceof ArrayBuffer) return Buffer.from(data).toString('utf8');
  return data.toString('utf8');
}

function normaliseBaseUrl(baseUrl: string): string {
  const trimmed = baseUrl.replace(/^\/+|\/+$/g, '');
  return trimmed === '' ? '/' : `/${trimmed}/`;
}

/** Host and port for the ws:// URL (a unix socket still needs a syntactically valid one). */
function urlAuthority(address: UpstreamAddress): string {
  if (address.kind === 'unix') return 'localhost';
  const host = address.host.includes(':') ? `[${address.host}]` : address.host;
  return `${host}:${address.port}`;
}

/**
 * A Host header Jupyter's `check_host` accepts without `allow_remote_access`: a loopback
 * address, or `localhost` (in the default `local_hostnames`).
 */
function hostHeader(address: UpstreamAddress): string {
  if (address.kind === 'unix') return 'localhost';
  const loopback =
    (net.isIPv4(address.host) && address.host.startsWith('127.')) || address.host === '::1';
  if (!loopback) return `localhost:${address.port}`;
  return `${net.isIPv6(address.host) ? `[${address.host}]` : address.host}:${address.port}`;
}
