import type { Logger } from '../gateway/logger';

/**
 * Tells JupyterHub when the user was last active on this server, for the requests the gateway
 * answers itself.
 *
 * #### Notes
 * A JupyterHub single-user server reports its own `last_activity` to the Hub, but only for the
 * requests it serves; saves and the store API never reach it behind the gateway, so without
 * this a user who only edits and saves would look idle to the Hub's idle culler. Activity is
 * posted in the Hub's format (`POST {hub api}/users/<name>/activity`, with the server's own
 * `$JUPYTERHUB_API_TOKEN`), at most once per `intervalMs`: the first request after a quiet
 * period is reported at once, later ones together at the end of the interval with the time of
 * the latest. A post that fails is tried again at the next interval while nothing newer came.
 */
export class HubActivityReporter {
  constructor(options: HubActivityReporter.IOptions) {
    this._url = options.activityUrl;
    this._token = options.apiToken;
    this._serverName = options.serverName;
    this._intervalMs = options.intervalMs;
    this._log = options.log;
    this._now = options.now ?? (() => new Date());
  }

  /** Record activity now; it reaches the Hub at once or at the end of the current interval. */
  touch(): void {
    if (this._closed) return;
    this._latest = this._now();
    if (this._timer || this._posting) return;
    const wait = this._lastPostAt + this._intervalMs - Date.now();
    if (wait <= 0) void this._post();
    else this._schedule(wait);
  }

  /**
   * Post what is still unreported, then stop: when the server stops, its last activity reaches
   * the Hub even inside an interval.
   */
  async close(): Promise<void> {
    this._closed = true;
    if (this._timer) clearTimeout(this._timer);
    this._timer = undefined;
    await this._posting;
    if (this._latest && this._latest !== this._sent) await this._send(this._latest);
  }

  private _schedule(waitMs: number): void {
    this._timer = setTimeout(() => {
      this._timer = undefined;
      void this._post();
    }, waitMs);
    this._timer.unref();
  }

  private async _post(): Promise<void> {
    const latest = this._latest;
    if (!latest || latest === this._sent) return;
    this._lastPostAt = Date.now();
    this._posting = this._send(latest);
    const ok = await this._posting;
    this._posting = undefined;
    if (ok) this._sent = latest;
    // Newer activity arrived while posting, or the post failed: the next interval reports it.
    if (!this._closed && this._latest !== this._sent) this._schedule(this._intervalMs);
  }

  /** One post; true when the Hub accepted it. Never throws. */
  private async _send(at: Date): Promise<boolean> {
    const timestamp = at.toISOString();
    try {
      const response = await fetch(this._url, {
        method: 'POST',
        headers: { authorization: `token ${this._token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          servers: { [this._serverName]: { last_activity: timestamp } },
          last_activity: timestamp
        }),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS)
      });
      await response.arrayBuffer();
      if (response.ok) {
        this._log.debug({ lastActivity: timestamp }, 'activity reported to the Hub');
        return true;
      }
      this._log.warn(
        { status: response.status, url: this._url },
        'the Hub refused the activity report'
      );
    } catch (error) {
      this._log.warn(
        { err: (error as Error).message, url: this._url },
        'cannot report activity to the Hub'
      );
    }
    return false;
  }

  private readonly _url: string;
  private readonly _token: string;
  private readonly _serverName: string;
  private readonly _intervalMs: number;
  private readonly _log: Logger;
  private readonly _now: () => Date;
  private _latest: Date | undefined;
  private _sent: Date | undefined;
  private _lastPostAt = -Infinity;
  private _timer: NodeJS.Timeout | undefined;
  private _posting: Promise<boolean> | undefined;
  private _closed = false;
}

export namespace HubActivityReporter {
  export interface IOptions {
    /** `$JUPYTERHUB_ACTIVITY_URL`: `{hub api}/users/<name>/activity`. */
    activityUrl: string;
    /** `$JUPYTERHUB_API_TOKEN`, whose `users:activity!user` scope allows the post. */
    apiToken: string;
    /** `$JUPYTERHUB_SERVER_NAME`: '' for the default server. */
    serverName: string;
    /** The shortest time between two posts. */
    intervalMs: number;
    log: Logger;
    /** The clock of activity timestamps; default the real one. */
    now?: () => Date;
  }
}

/** A Hub that does not answer within this is tried again at the next interval. */
const REQUEST_TIMEOUT_MS = 10_000;
