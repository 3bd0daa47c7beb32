import type * as http from 'node:http';
import type { ContentsChange, ContentsManager } from '../contents/manager';
import type { Logger } from './logger';
import { requestUpstream, type UpstreamAddress } from './upstream';

/** Who answers `{base}api/contents`: our contents manager, or Python's behind the proxy. */
export type ContentsBackend = 'node' | 'jupyter';

/** The `contents_backend` setting. */
export type ContentsBackendSetting = 'auto' | ContentsBackend;

/** What the upstream's `jupyter_store_upstream` extension says it loads. */
export interface IUpstreamDescription {
  readonly contents_manager_class: string;
  readonly contents_manager_is_stock: boolean;
  readonly pre_save_hook: boolean;
  readonly post_save_hook: boolean;
  /** Server extensions by name, and whether each is enabled. */
  readonly extensions: Readonly<Record<string, boolean>>;
}

/** The backend in force, the setting it came from, and why, as `GET api/store` reports it. */
export interface IContentsBackendChoice {
  readonly backend: ContentsBackend;
  readonly setting: ContentsBackendSetting;
  readonly reason: string;
}

/**
 * Server extensions that replace Python's contents manager or save through it: with any of them
 * enabled, Python's manager must stay authoritative for `api/contents`.
 */
export const CONTENTS_EXTENSIONS: Readonly<Record<string, string>> = {
  jupytext: 'jupytext',
  jupyterlab_jupytext: 'jupytext',
  jupyterfs: 'jupyter-fs',
  jupyter_collaboration: 'jupyter-collaboration',
  jupyter_server_ydoc: 'jupyter-collaboration (jupyter-server-ydoc)',
  jupyter_server_documents: 'jupyter-server-documents'
};

/**
 * Decide the backend from what the upstream really loads.
 *
 * #### Notes
 * `auto` picks `jupyter` when the upstream's contents manager is not one of Jupyter Server's
 * stock file managers, when a `pre_save_hook` or `post_save_hook` is set, or when an extension
 * that replaces or consumes the manager is enabled (see {@link CONTENTS_EXTENSIONS}); `node`
 * otherwise. When the upstream cannot say (it does not run `jupyter_store_upstream`, or did not
 * answer), `auto` picks `jupyter`: Python's manager is then authoritative and nothing the user
 * installed is bypassed, at the cost of speed.
 */
export function decideContentsBackend(
  setting: ContentsBackendSetting,
  description: IUpstreamDescription | string
): IContentsBackendChoice {
  if (setting !== 'auto') {
    return { backend: setting, setting, reason: `contents_backend is set to ${setting}` };
  }
  if (typeof description === 'string') {
    return {
      backend: 'jupyter',
      setting,
      reason: `the upstream does not say what it loads (${description}), so Python's contents manager stays authoritative`
    };
  }
  const causes: string[] = [];
  if (!description.contents_manager_is_stock) {
    causes.push(`its contents manager is ${description.contents_manager_class}`);
  }
  if (description.pre_save_hook) causes.push('a pre_save_hook is set');
  if (description.post_save_hook) causes.push('a post_save_hook is set');
  const extensions = Object.entries(description.extensions)
    .filter(([name, enabled]) => enabled && CONTENTS_EXTENSIONS[name] !== undefined)
    .map(([name]) => `${CONTENTS_EXTENSIONS[name]} (${name})`);
  if (extensions.length) causes.push(`it runs ${extensions.join(', ')}`);
  if (causes.length) {
    return { backend: 'jupyter', setting, reason: `the upstream needs it: ${causes.join('; ')}` };
  }
  return {
    backend: 'node',
    setting,
    reason:
      "the upstream runs Jupyter's stock file contents manager, with no save hooks and no extension that replaces or consumes it"
  };
}

/**
 * Ask the upstream what it loads: `GET {base}api/store-upstream`, served by the
 * `jupyter_store_upstream` server extension.
 *
 * @returns the description, or in words why there is none.
 */
export async function askUpstreamWhatItLoads(options: {
  upstream: UpstreamAddress;
  baseUrl: string;
  token: string | null;
  agent?: http.Agent;
}): Promise<IUpstreamDescription | string> {
  try {
    const answer = await requestUpstream(options.upstream, {
      path: `${options.baseUrl}api/store-upstream`,
      headers: {
        Host: 'localhost',
        ...(options.token ? { Authorization: `token ${options.token}` } : {})
      },
      agent: options.agent,
      timeoutMs: 10_000
    });
    if (answer.status !== 200) {
      return answer.status === 404
        ? 'GET api/store-upstream answered 404: the jupyter_store_upstream server extension is not enabled there'
        : `GET api/store-upstream answered ${answer.status}`;
    }
    const body = JSON.parse(answer.body.toString('utf8')) as IUpstreamDescription;
    if (typeof body?.contents_manager_class !== 'string' || typeof body.extensions !== 'object') {
      return 'GET api/store-upstream answered something else than a description';
    }
    return body;
  } catch (error) {
    return `GET api/store-upstream failed: ${(error as Error).message}`;
  }
}

/** The `contents_service` event schema of Jupyter Server's event bus. */
const CONTENTS_SERVICE_SCHEMA = 'https://events.jupyter.org/jupyter_server/contents_service/v1';

/**
 * Tells Python-side listeners (jupyter_server_fileid, collaboration rooms) about every change
 * our contents manager makes, as Python's manager would: one `contents_service` event per
 * save, copy, rename and delete, `POST {base}api/events` on the upstream.
 *
 * #### Notes
 * Events are sent in the order the changes happened, one at a time. A failed post is logged
 * (once per outage) and dropped: the event bus is not durable in Jupyter either.
 *
 * The emitter subscribes as an announcing listener: for each change it returns a promise that
 * resolves once Python has taken the event in, or gave up on it (never rejects). The manager
 * awaits it only to rename a file (see {@link ContentsManager.rename}), which keeps the old name
 * until then, so that a collaboration room polling the file by its id never meets a missing
 * path. "Taken in" means that jupyter_server_fileid's listener has moved the id, which the
 * answer to the post does not say by itself:
 *
 * - `POST api/events` answers 204 once `EventLogger.emit` returned, and `emit` only schedules
 *   each listener (`asyncio.create_task`); tornado writes the 204 before those tasks run.
 * - So after a rename's 204, one more request goes to the same server: `GET {base}api`, the
 *   version, which is not authenticated and not counted as activity. asyncio runs the callbacks
 *   scheduled before its next poll of the sockets ahead of what that poll finds, so the
 *   listener task, scheduled while the post was handled, has run (the file-id move is
 *   synchronous in it) before the server reads this request, let alone answers it.
 */
export class ContentsEventEmitter {
  constructor(options: ContentsEventEmitter.IOptions) {
    this._options = options;
    this._unsubscribe = options.manager.onChanged(change => this._emit(change), {
      announces: true
    });
  }

  /** Events posted and failed since start. */
  get counts(): { posted: number; failed: number } {
    return { posted: this._posted, failed: this._failed };
  }

  /** Wait for the events already queued to be posted. */
  async flush(): Promise<void> {
    await this._tail;
  }

  /** Stop listening, after posting what is queued. */
  async close(): Promise<void> {
    this._unsubscribe();
    await this._tail;
  }

  /** Queue the change's event; resolves once Python took it in or gave up (see the class). */
  private _emit(change: ContentsChange): Promise<void> {
    const data: Record<string, string> =
      change.action === 'save' || change.action === 'delete'
        ? { action: change.action, path: change.path }
        : { action: change.action, path: change.to, source_path: change.from };
    const posted = this._tail.then(() => this._post(data));
    this._tail = posted.then(() => undefined);
    // The next event need not wait for the round trip: it only has to come after this one.
    return change.action === 'rename'
      ? posted.then(accepted => (accepted ? this._roundTrip() : undefined))
      : this._tail;
  }

  /** Post one event; resolves to whether Python accepted it (204), never rejects. */
  private async _post(data: Record<string, string>): Promise<boolean> {
    const { upstream, baseUrl, token, agent, log } = this._options;
    const body = JSON.stringify({ schema_id: CONTENTS_SERVICE_SCHEMA, version: '1', data });
    const headers: http.OutgoingHttpHeaders = {
      Host: 'localhost',
      'Content-Type': 'application/json',
      'Content-Length': Buffer.byteLength(body)
    };
    if (token) headers.Authorization = `token ${token}`;
    else {
      // A server without a token checks XSRF on every POST: send a matching cookie and header.
      headers.Cookie = `_xsrf=${XSRF_TOKEN}`;
      headers['X-XSRFToken'] = XSRF_TOKEN;
    }
    try {
      const answer = await requestUpstream(upstream, {
        method: 'POST',
        path: `${baseUrl}api/events`,
        headers,
        body,
        agent,
        timeoutMs: 10_000
      });
      if (answer.status !== 204) throw new Error(`POST api/events answered ${answer.status}`);
      this._posted++;
      if (this._failing) log.info('contents events reach the upstream again');
      this._failing = false;
      return true;
    } catch (error) {
      this._failed++;
      if (!this._failing) {
        log.warn(
          { err: (error as Error).message, action: data.action },
          'a contents event could not be sent to the upstream; Python-side listeners may miss changes'
        );
      }
      this._failing = true;
      return false;
    }
  }

  /**
   * One request that Python answers only after running the listeners of the events it
   * accepted before (see the class); its answer does not matter, and a failure only ends the
   * wait.
   */
  private async _roundTrip(): Promise<void> {
    const { upstream, baseUrl, token, agent } = this._options;
    try {
      await requestUpstream(upstream, {
        path: `${baseUrl}api`,
        headers: { Host: 'localhost', ...(token ? { Authorization: `token ${token}` } : {}) },
        agent,
        timeoutMs: 10_000
      });
    } catch {
      // The manager's wait is bounded anyway; the post's own failures are logged.
    }
  }

  private readonly _options: ContentsEventEmitter.IOptions;
  private readonly _unsubscribe: () => void;
  private _tail: Promise<void> = Promise.resolve();
  private _posted = 0;
  private _failed = 0;
  private _failing = false;
}

export namespace ContentsEventEmitter {
  export interface IOptions {
    manager: ContentsManager;
    upstream: UpstreamAddress;
    baseUrl: string;
    token: string | null;
    agent?: http.Agent;
    log: Logger;
  }
}

/** A fixed XSRF value: the server compares the cookie with the header, nothing else. */
const XSRF_TOKEN = 'jupyter-store-contents-events';
