import { z } from 'zod';

/**
 * The records of the specification's experimental client: a live server, a kernel and a
 * session. Live server records are read from the Jupyter runtime directory; kernels and sessions
 * come from Jupyter's sessions API (`GET {base}api/sessions`), which the gateway passes through.
 */

/**
 * A running server, as its `jpserver-<pid>.json` (or classic `nbserver-<pid>.json`) record in
 * the Jupyter runtime directory describes it.
 *
 * The first nine fields are the specification's, in its order. The rest are what Jupyter
 * Server 2 and the jupyter-store gateway add; records without them are read with the defaults
 * given below.
 */
export interface ILiveServerRecord {
  readonly base_url: string;
  readonly hostname: string;
  /** The served directory. Jupyter Server 2 no longer writes it; `root_dir` stands in. */
  readonly notebook_dir: string;
  /** Whether the server has a password (never the password itself). */
  readonly password: boolean;
  readonly pid: number;
  readonly port: number;
  readonly secure: boolean;
  /** The token that authenticates API calls; empty for a server without one. */
  readonly token: string;
  /** The server's URL, base URL included. */
  readonly url: string;
  /** The served directory (Jupyter Server 2); `notebook_dir` when the record lacks it. */
  readonly root_dir: string;
  /** The unix socket the server listens on, or empty. */
  readonly sock: string;
  /** The server's version, or null when the record does not say. */
  readonly version: string | null;
  /**
   * Where the Jupyter Server behind a jupyter-store gateway listens (`http://…` or
   * `unix:/path`); null for any other server.
   */
  readonly upstream_url: string | null;
  /** The pid of the Jupyter Server a jupyter-store gateway started, or null. */
  readonly upstream_pid: number | null;
}

/** A record as found on disk: the specification's fields, and any others (tolerated). */
const LiveServerRecordFileSchema = z
  .object({
    base_url: z.string(),
    hostname: z.string(),
    notebook_dir: z.string().optional(),
    password: z.boolean(),
    pid: z.number().int().positive(),
    port: z.number().int().nonnegative(),
    secure: z.boolean(),
    token: z.string(),
    url: z.string(),
    root_dir: z.string().optional(),
    sock: z.string().optional(),
    version: z.string().optional(),
    upstream_url: z.string().nullable().optional(),
    upstream_pid: z.number().int().positive().nullable().optional()
  })
  .passthrough()
  .refine(record => record.notebook_dir !== undefined || record.root_dir !== undefined, {
    message: 'a record names its directory in notebook_dir or root_dir'
  });

/**
 * Read a runtime record's JSON, tolerating fields it does not know.
 *
 * @returns the record, or undefined when the value is not a server record.
 */
export function parseLiveServerRecord(value: unknown): ILiveServerRecord | undefined {
  const parsed = LiveServerRecordFileSchema.safeParse(value);
  if (!parsed.success) return undefined;
  const found = parsed.data;
  const directory = (found.notebook_dir ?? found.root_dir) as string;
  return {
    base_url: found.base_url,
    hostname: found.hostname,
    notebook_dir: directory,
    password: found.password,
    pid: found.pid,
    port: found.port,
    secure: found.secure,
    token: found.token,
    url: found.url,
    root_dir: found.root_dir ?? directory,
    sock: found.sock ?? '',
    version: found.version ?? null,
    upstream_url: found.upstream_url ? found.upstream_url : null,
    upstream_pid: found.upstream_pid ?? null
  };
}

/** A kernel, as the kernels and sessions APIs describe it. */
export interface IKernelInfo {
  readonly id: string;
  /** The kernel spec's name (`python3`, …). */
  readonly name: string;
  /** ISO 8601 time of the kernel's last message. */
  readonly last_activity: string;
  /** `idle`, `busy`, `starting`, … */
  readonly execution_state: string;
  /** How many websockets are connected to the kernel. */
  readonly connections: number;
}

/** A session: a document (notebook, console, file) attached to a kernel. */
export interface ISession {
  readonly id: string;
  /** The document's path below the server's root. */
  readonly path: string;
  readonly name: string;
  /** `notebook`, `console` or `file`. */
  readonly type: string;
  readonly kernel: IKernelInfo;
  /** The deprecated `notebook` field (path and name) of notebook sessions; null otherwise. */
  readonly notebook: { readonly path: string; readonly name: string } | null;
  /** The session as the server sent it. */
  readonly model: Readonly<Record<string, unknown>>;
}

const KernelInfoSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    last_activity: z.string(),
    execution_state: z.string(),
    connections: z.number().int().nonnegative()
  })
  .passthrough();

/** One entry of `GET {base}api/sessions`, with the fields the client relies on. */
export const SessionModelSchema = z
  .object({
    id: z.string(),
    path: z.string(),
    name: z.string(),
    type: z.string(),
    kernel: KernelInfoSchema,
    notebook: z.object({ path: z.string(), name: z.string() }).passthrough().optional()
  })
  .passthrough();

/** `GET {base}api/sessions`. */
export const SessionListSchema = z.array(SessionModelSchema);

/** The typed session of one parsed sessions-API entry. */
export function toSession(model: z.infer<typeof SessionModelSchema>): ISession {
  const { kernel } = model;
  return {
    id: model.id,
    path: model.path,
    name: model.name,
    type: model.type,
    kernel: {
      id: kernel.id,
      name: kernel.name,
      last_activity: kernel.last_activity,
      execution_state: kernel.execution_state,
      connections: kernel.connections
    },
    notebook: model.notebook ? { path: model.notebook.path, name: model.notebook.name } : null,
    model
  };
}
