/**
 * What the OpenAPI document says to people: the description of the API, of each operation and
 * of each status it answers, and the parts that no zod schema describes (authentication, the
 * landing pages). The machine-readable parts (methods, paths, parameters, bodies, statuses) come
 * from the contract's endpoint descriptors; `document.ts` puts the two together and refuses a
 * status described here that an endpoint does not answer, or the reverse.
 */

/** A response written out, or a reference to one of {@link SHARED_RESPONSES}. */
export type ResponseProse = string | { readonly shared: keyof typeof SHARED_RESPONSES };

/** The words of one operation of the store API. */
export interface IOperationProse {
  readonly tag: string;
  readonly summary: string;
  readonly description: string;
  /** The path parameter's component, for a template with `{path}`. */
  readonly pathParameter?: 'NotebookPath' | 'PublishPath';
  /** The request body's description, when it needs one. */
  readonly requestBody?: string;
  /** The success status's description. */
  readonly success: string;
  /** Each error status the operation answers, by status. */
  readonly errors: Readonly<Record<number, ResponseProse>>;
}

/**
 * The failures of every route that uses object storage: the store out of reach (502), or it or
 * Jupyter unavailable (503).
 */
const STORE_FAILURES = {
  502: { shared: 'StoreUnreachable' },
  503: { shared: 'StoreOrUpstreamUnavailable' }
} as const satisfies Record<number, ResponseProse>;

export const INFO_DESCRIPTION = `The store API of jupyter-store, the Node gateway in front of Jupyter Server that archives every
notebook save as a new version in a versioned S3 bucket.

Every path below is relative to Jupyter's \`base_url\` (the server variable \`base_url\`). The
gateway answers these routes itself; everything else goes to Jupyter Server untouched.

- \`GET api/store\` tells a frontend which features are usable (feature detection).
- \`GET api/store/versions/{path}\` lists the archived and published versions of a notebook,
  a page at a time.
- \`POST api/store/named/{path}\` names an archived version of a notebook (a copy kept below
  \`named_prefix\`, which outlives the archive's retention); \`DELETE\` takes the name off.
- \`PUT api/store/publish/{path}\` publishes a notebook to \`<published_prefix>/<path>\`.
- \`POST api/store/clone\` and \`POST api/store/fs-clone\` copy a file from object storage or
  from the directory \`fs_cloning_basedir\` into the user's server.
- \`GET api/store/deleted\` lists the notebooks deleted from the server whose versions the
  archive keeps, and \`POST api/store/restore\` writes one back.
- \`GET api/store/diff/{path}\` diffs two versions of a notebook (archived, published, or the
  file on disk) in nbdime's format; \`POST api/store/diff\` also takes notebooks inline.
- \`GET api/store/retention\` reads the bucket lifecycle rule that expires old archived
  versions; \`PUT\` sets it and \`DELETE\` removes it.
- \`GET store/clone\` and \`GET store/fs-clone\` are HTML landing pages for clone links: they
  describe the file and ask for confirmation; the clone happens only when the user clicks
  **Clone**, which posts to the API.

**Errors.** Every error of the JSON API is \`{"message": string, "reason": string | null}\`,
as Jupyter Server answers errors: \`message\` is for people, \`reason\` is a short stable word
for programs (for object-storage failures it is the store's own error code, such as
\`NoSuchKey\`). Bad input is a 4xx, never a 500; an error body never holds a stack trace or a
credential. The landing pages answer errors with an HTML page that shows the message. The
schema \`ErrorBody\` lists every reason of the gateway, by status.

**Authentication** is Jupyter's own: the gateway asks Jupyter Server who the caller is, with
the caller's token or login cookie. An API call that is not authenticated gets 403, as in
Jupyter; a landing page sends the browser to Jupyter's login page instead. With a login
cookie, every request that changes something (PUT, POST, DELETE, PATCH) also needs the XSRF
token of the \`_xsrf\` cookie, and a request from another origin is refused with 404. Requests
authenticated by a token skip both checks. A Host that is not local is refused with 403
unless remote access is allowed. A server started with \`--no-auth\` lets every caller in, but
the Host, Origin and XSRF checks still apply, and a token never switches them off there.

**Authorization** is Jupyter's too: in the same question the gateway asks Jupyter's
\`Authorizer\` which actions the caller has on \`contents\`. Reading (store info, version
listings, diffs, the POST of a diff too, the recently deleted notebooks, the retention rule)
needs \`contents: read\`; naming versions, publish, clone and fs-clone, restore, setting or
removing the retention rule, and the landing pages that lead to a clone, need
\`contents: write\`. A refused action is 403 with reason \`not authorized\`.
`;

export const TAGS = [
  { name: 'feature detection', description: 'What the server can do with its current settings.' },
  {
    name: 'versions',
    description: 'The archived (workspace) and published versions of a notebook.'
  },
  {
    name: 'named versions',
    description: 'Names and notes given to archived versions, kept apart from the archive.'
  },
  {
    name: 'publish',
    description: 'Put a validated notebook at a stable place that others can clone.'
  },
  {
    name: 'clone',
    description: 'Copy a file from object storage or from the shared file-system directory.'
  },
  { name: 'diff', description: "What changed between two notebooks, in nbdime's diff format." },
  {
    name: 'recently deleted',
    description: 'Deleted notebooks found again in the archive, and written back.'
  },
  {
    name: 'retention',
    description: 'The bucket lifecycle rule that bounds how many old versions the archive keeps.'
  },
  { name: 'landing pages', description: 'HTML pages behind clone links, for people in a browser.' }
];

/** What the three retention operations say alike. */
const RETENTION_PROSE = {
  description: `The bucket lifecycle rule that jupyter-store owns for the workspace prefix: its ID is
\`jupyter-store-retention:<workspace_prefix>\` and its filter the prefix \`<workspace_prefix>/\`,
so it covers the archived copies and nothing else (published copies and named versions live
under other prefixes). It keeps the newest \`keep_newest\` noncurrent versions of each notebook
and expires older noncurrent versions \`noncurrent_days\` after they stopped being current; the
current version and delete markers (how deleted notebooks are found again) are never expired.
The bucket's other lifecycle rules are read and written back unchanged. S3 and MinIO apply the
rule in their own background scan (AWS about once a day), so versions disappear some time after
they are due; the embedded store applies it to a notebook each time it archives a version of it.
`,
  errors: {
    403:
      "Refused by Jupyter's checks (reasons `host not allowed`, `not authenticated`, `not " +
      'authorized`, and for writes with a login cookie `xsrf`), or object storage denied ' +
      "access to the bucket's lifecycle configuration (the store's code, e.g. `AccessDenied`: " +
      'the credentials need `s3:GetLifecycleConfiguration` and `s3:PutLifecycleConfiguration`).',
    404:
      'A cookie-authenticated request from another origin (reason `cross-origin request ' +
      "blocked`), or the bucket does not exist (the store's code).",
    501:
      'The object store does not implement bucket lifecycle configuration (reason ' +
      '`NotImplemented`; versitygw answers so).',
    ...STORE_FAILURES
  }
} as const;

/** The operations of the store API, by the descriptors' `operationId`. */
export const OPERATIONS: Readonly<Record<string, IOperationProse>> = {
  getStoreInfo: {
    tag: 'feature detection',
    summary: 'Feature detection',
    description:
      'The jupyter-store release, whether each feature is usable with the current settings, ' +
      'why each unusable one is off, and the state of the archive queue. Frontends call it to ' +
      'decide which commands to show. `api/store/` (with a trailing slash) answers the same.',
    success: 'The release, the features and the archive queue.',
    errors: {
      403: { shared: 'AuthForbidden' },
      404: { shared: 'CrossOrigin' },
      503: { shared: 'UpstreamUnavailable' }
    }
  },
  listVersions: {
    tag: 'versions',
    summary: 'List the versions of a notebook',
    pathParameter: 'NotebookPath',
    description: `The stored versions of the notebook's archived copy (\`<workspace_prefix>/<path>\`) and of
its published copy (\`<published_prefix>/<path>\`), newest first, one page at a time: at
most \`limit\` versions of each copy (100 by default, at most 1000). While \`next\` is not
null, more versions follow: ask again with the same path and \`next=<token>\` (and any
\`limit\`). The copies are paged side by side, so the first page has the newest versions
of both; a copy listed to its end has an empty list on the pages after. A page resumes
after the last version of the page before, so versions saved meanwhile (newer ones) do
not move later pages: every version that existed at the first page is listed exactly
once, in order; list again from the first page to see new ones. A token is opaque and
valid only for the same path, bucket and prefixes, and only until the gateway restarts.

The archived versions are the notebook's history across renames: after the versions of
its path come those of the paths it had before (a rename is archived as the new path's
first version, marked \`renamed_from\`), back through at most 32 renames, each version
with the \`path\` and \`object_key\` it was archived under (read or clone it there). Of an
earlier path, only the versions up to the rename are listed, not those of a notebook
saved under that name since. The published versions are those of the path asked for.

A path that was never saved or published has empty lists, not a 404. Any version can be
cloned with \`POST api/store/clone\` and its \`object_version_id\`. With \`object_version_id\`
in the query, the answer is instead that one version's notebook (\`VersionContent\`), for
restoring it (\`limit\` and \`next\` are then ignored).
`,
    success:
      'One page of the versions of both copies, or with `object_version_id` the content of ' +
      'that version.',
    errors: {
      400:
        'The path is refused: empty (reason `empty path`), absolute (`absolute path`), with ' +
        '`.`, `..` or empty segments, a NUL byte or percent-encoding that is not UTF-8 ' +
        '(`invalid path`), or a hidden component (`hidden path`); or the object store refused ' +
        'the key (its own code, e.g. `InvalidKey` for a key over 1024 bytes); or ' +
        '`object_version_id` is empty or too long, `copy` is neither `workspace` nor ' +
        '`published`, or `limit` is not a whole number from 1 to 1000 (reason `bad request`); ' +
        '`next` is not a token this gateway answered for this listing: edited, made up, of ' +
        'another path, or from before a restart (reason `invalid token`; list again from the ' +
        'first page); or the store refused the version id as malformed (its own code, e.g. ' +
        '`InvalidArgument`).',
      403:
        "Refused by Jupyter's checks (reasons `host not allowed`, `not authenticated`), or " +
        "object storage denied access to the bucket (the store's code, e.g. `AccessDenied`).",
      404:
        'A cookie-authenticated request from another origin (reason `cross-origin request ' +
        "blocked`), or the bucket no longer exists (the store's code, e.g. `NoSuchBucket`), or " +
        'the version asked for does not exist (e.g. `NoSuchVersion`, `NoSuchKey`).',
      413:
        'The version asked for is over 100 MiB (reason `too large`), whatever its announced ' +
        'size: the read stops as soon as more has arrived.',
      422: 'The version asked for is not an nbformat 4 notebook (reason `not a notebook`).',
      ...STORE_FAILURES
    }
  },
  publishNotebook: {
    tag: 'publish',
    summary: 'Publish a notebook',
    pathParameter: 'PublishPath',
    description: `Write the notebook in the body to \`<published_prefix>/<path>\` in the configured bucket, as
a new version, with exactly the bytes Jupyter would write for it on disk (content type
\`application/x-ipynb+json\`). The notebook is validated against the official nbformat 4
schema first; nothing is written when it fails.

Publishing is off until enabled with \`jupyter store enable --user\` (or \`--sys-prefix\`);
enabling takes effect at the next request. The checks run in this order: method,
publishing enabled (403) and object storage usable (503), path (400), body size (413),
body (400), type (415), content (422).
`,
    requestBody: 'The contents-API model of the notebook, as a contents `PUT` sends it.',
    success: 'Published; where the notebook now is, and its new version.',
    errors: {
      400:
        'The path is refused (reasons `empty path`, `absolute path`, `invalid path`, `hidden ' +
        'path`; `..` is refused plain and percent-encoded); the body is missing, blank or `{}` ' +
        '(`empty model`); the body is not UTF-8, not JSON, or not a JSON object (`bad ' +
        'request`); or the request body could not be read as declared (`bad request`, ' +
        '`request.size.invalid`).',
      403:
        'Publishing is not enabled, or `published_prefix` is empty (reason `publish ' +
        "disabled`; the message says how to enable it); refused by Jupyter's checks (`host " +
        'not allowed`, `not authenticated`, `xsrf`); or object storage denied access (the ' +
        "store's code).",
      404:
        'A cookie-authenticated request from another origin (reason `cross-origin request ' +
        "blocked`), or the bucket no longer exists (the store's code).",
      413: 'The body is larger than 100 MB (reason `entity.too.large`).',
      415:
        "The model's `type` is not `notebook`, or the path does not end in `.ipynb`; or the " +
        'body has a `Content-Encoding` the server cannot decode (`encoding.unsupported`; ' +
        '`gzip`, `deflate` and `br` are decoded).',
      422:
        '`content` is missing, null or `{}` (reason `empty content`); it is not an nbformat 4 ' +
        'notebook or fails the nbformat schema (`invalid notebook`; the message names the ' +
        'cell by position, id and type and says what is wrong where, then repeats nbformat’s ' +
        'message); or two cells share an id (`duplicate cell ids`).',
      ...STORE_FAILURES
    }
  },
  nameVersion: {
    tag: 'named versions',
    summary: 'Name a version of a notebook',
    pathParameter: 'NotebookPath',
    description: `Give an archived version of the notebook a name and an optional note: the version named by
\`object_version_id\`, or (left out) the newest one, once the path's pending save, if any,
is archived (at most 5 s are waited, so that a client can save and then name what it
saved). Version listings then show the label on that version.

The name is kept as a copy of the version's bytes, made inside the object store, at
\`<named_prefix>/<workspace_prefix>/<path>/<version id>\` with the label in its metadata:
a retention rule scoped to \`workspace_prefix\` does not touch it, and deleting the
archived version leaves it. Naming a version that has a name replaces its name and note
(a new version of the same key).
`,
    requestBody: 'The name, the note, and which version.',
    success: 'Named: the version, and its label.',
    errors: {
      400:
        'The path is refused (reasons `empty path`, `absolute path`, `invalid path`, `hidden ' +
        'path`); the body is not a JSON object, the name is empty, longer than 100 characters ' +
        'or has control characters, the note is longer than 500 characters, or ' +
        '`object_version_id` is empty or too long (reason `bad request`; the message names ' +
        'the field); the name and note together take more than the 2 KB of object metadata ' +
        'S3 allows once percent-encoded (`label too long`); or object storage refused the ' +
        "version id (the store's code, e.g. `InvalidArgument`).",
      403:
        "Refused by Jupyter's checks (reasons `not authorized`, `host not allowed`, `not " +
        "authenticated`, `xsrf`), or object storage denied access (the store's code).",
      404:
        'The notebook has no archived version (reason `no versions`); the version named does ' +
        "not exist or is a delete marker (the store's code, e.g. `NoSuchVersion`); or a " +
        'cookie-authenticated request from another origin (`cross-origin request blocked`).',
      413: 'The body is larger than 64 KiB (reason `entity.too.large`).',
      415:
        'The body has a `Content-Encoding` the server cannot decode (`encoding.unsupported`; ' +
        '`gzip`, `deflate` and `br` are decoded).',
      ...STORE_FAILURES
    }
  },
  unnameVersion: {
    tag: 'named versions',
    summary: 'Remove the name of a version',
    pathParameter: 'NotebookPath',
    description: `Take the name off an archived version: its named copy is hidden behind a delete marker
(the bucket's own rules decide when its bytes go). The archived version itself is not
touched.
`,
    success: 'The name is removed.',
    errors: {
      400:
        'The path is refused (reasons `empty path`, `absolute path`, `invalid path`, `hidden ' +
        'path`), or `object_version_id` is missing, empty or too long (reason `bad request`).',
      403:
        "Refused by Jupyter's checks (reasons `not authorized`, `host not allowed`, `not " +
        "authenticated`, `xsrf`), or object storage denied access (the store's code).",
      404:
        'The version has no name (reason `not named`), or a cookie-authenticated request from ' +
        'another origin (`cross-origin request blocked`).',
      ...STORE_FAILURES
    }
  },
  cloneFromObjectStorage: {
    tag: 'clone',
    summary: 'Clone from object storage',
    description: `Copy an object (the latest version, or the version named) from any bucket the
configured credentials can read (or, when the \`clone_buckets\` setting is set, from the
buckets it lists and the configured bucket) into the user's server, and answer with the
contents model of the created file. \`api/store/clone/\` (with a trailing slash) answers
the same.

Nothing is overwritten: when \`target_path\` is taken, the copy is named \`name-1.ext\`,
\`name-2.ext\`, … (before \`.ipynb\`, else before the first dot). A \`.ipynb\` target whose
bytes are a notebook is saved as a notebook, untrusted, and archived like any save; any
other file, binary included, is saved byte for byte. Objects over 100 MiB are refused,
whatever size object storage announced: the read stops as soon as more has arrived.
`,
    success:
      'Cloned: the contents model of the created file (without content) plus where it came ' +
      'from. Its `path` may differ from `target_path` when that name was taken.',
    errors: {
      400:
        'The body is not a JSON object, or a field is missing, not a string, empty or too ' +
        'long, or `object_bucket` is not a valid bucket name (reason `bad request`; the ' +
        'message names the field); `target_path` is absolute, has `.`, `..` or empty ' +
        'segments, is hidden or leads outside the root through a symlink (`absolute path`, ' +
        '`invalid path`, `hidden path`, `target outside root`); the key has no file name and ' +
        'no `target_path` is given (`bad request`); or object storage refused the request, ' +
        "e.g. a malformed `object_version_id` (the store's code, e.g. `InvalidArgument`).",
      403:
        'Cloning from object storage is off (`enable_object_cloning` is false; reason `object ' +
        'cloning disabled`); `clone_buckets` is set and does not list `object_bucket` (reason ' +
        "`bucket not allowed`; object storage is not asked); refused by Jupyter's checks " +
        '(`host not allowed`, `not authenticated`, `xsrf`); object storage denied access (the ' +
        "store's code, e.g. `AccessDenied`); or the target cannot be written (`permission " +
        'denied`).',
      404:
        "The bucket, the key or the version does not exist (the store's code: `NoSuchBucket`, " +
        '`NoSuchKey`, `NoSuchVersion`), or a cookie-authenticated request came from another ' +
        'origin (`cross-origin request blocked`).',
      409: { shared: 'CloneTargetConflict' },
      413:
        'The request body is over 64 KiB (reason `entity.too.large`), or the object is over ' +
        '100 MiB (`too large`; refused by its announced size, or as soon as more than that ' +
        'has been read, and nothing is written).',
      415: { shared: 'UnsupportedEncoding' },
      ...STORE_FAILURES,
      507: { shared: 'NoSpace' }
    }
  },
  cloneFromFileSystem: {
    tag: 'clone',
    summary: 'Clone from the file system',
    description: `Copy a file found below \`fs_cloning_basedir\` (a shared directory such as an NFS or EFS
mount) into the user's server, and answer with the contents model of the created file.
\`relpath\` is resolved against the base directory with symlinks followed on both sides;
nothing outside the base is read, and nothing is told about what lies outside.
\`api/store/fs-clone/\` (with a trailing slash) answers the same.

Naming, notebooks and size limits are as for \`POST api/store/clone\`.
`,
    success:
      'Cloned: the contents model of the created file (without content) plus the `relpath` ' +
      'it came from.',
    errors: {
      400:
        'The body is not a JSON object, or a field is missing, not a string, empty or too ' +
        'long (reason `bad request`); `relpath` is absolute (`absolute path`), has a NUL byte ' +
        '(`invalid path`) or a hidden component (`hidden path`), names a directory (`is a ' +
        'directory`) or something that is not a regular file (`not a file`), or is too long ' +
        '(`name too long`); or `target_path` is refused as for `POST api/store/clone`.',
      403:
        'Cloning from the file system is off: `fs_cloning_basedir` is not set or is not an ' +
        'existing absolute directory (reason `fs cloning disabled`); refused by Jupyter’s ' +
        'checks (`host not allowed`, `not authenticated`, `xsrf`); the file cannot be read ' +
        '(`permission denied`) or has more than one hard link (`hard link`); or the target ' +
        'cannot be written (`permission denied`).',
      404:
        '`relpath` leads outside the base directory, through `..` or symlinks (reason ' +
        '`outside base directory`); it does not exist, is a symlink loop, or changed while it ' +
        'was read (`not found`); or a cookie-authenticated request came from another origin ' +
        '(`cross-origin request blocked`).',
      409: { shared: 'CloneTargetConflict' },
      413:
        'The request body is over 64 KiB (reason `entity.too.large`), or the file is over 100 ' +
        'MiB (`too large`).',
      415: { shared: 'UnsupportedEncoding' },
      503: { shared: 'UpstreamUnavailable' },
      507: { shared: 'NoSpace' }
    }
  },
  diffVersions: {
    tag: 'diff',
    summary: 'Diff two versions of a notebook',
    pathParameter: 'NotebookPath',
    description: `What changed in the notebook at \`path\` from \`base\` to \`remote\`, in nbdime's diff
format: the answer's \`base\` and \`diff\` are what nbdime's \`NotebookDiffModel\` takes, and
applying \`diff\` to \`base\` gives the remote notebook exactly. A ref is:

- \`current\`: the file on disk, read as the contents API reads it (hidden files,
  permissions and missing files answer as there);
- an archived version id, as \`GET api/store/versions/{path}\` lists it;
- \`published:<version id>\`: a version of the published copy.

**Defaults.** \`remote\` is \`current\`; \`base\` is the newest archived version. As \`git
diff\` compares the last commit with the working tree, the default shows what is on disk
and not archived yet, which is nothing once the last save is archived; name a version
as \`base\` to see what changed since. Without an archived version, a left-out \`base\` is
404 (reason \`no versions\`).

Each side is read as nbformat reads a file (multiline strings joined, older formats
upgraded; a cell without an id gets one by its position), without the untrusted marks
of a version read for restoring. A notebook over 100 MiB is refused. A repeated
parameter counts by its last value.
`,
    success: 'The base notebook and the diff that turns it into the remote one.',
    errors: {
      400:
        'The path is refused (reasons `empty path`, `absolute path`, `invalid path`, `hidden ' +
        'path`, as for `GET api/store/versions/{path}`); a ref is empty, `published:` without ' +
        'a version id, or has a version id over 1024 characters (`bad request`); or the store ' +
        'refused the version id as malformed (its own code, e.g. `InvalidArgument`).',
      403: { shared: 'DiffForbidden' },
      404: { shared: 'DiffNotFound' },
      413: 'A notebook read is over 100 MiB (reason `too large`).',
      422: { shared: 'NotANotebook' },
      ...STORE_FAILURES
    }
  },
  getRetention: {
    tag: 'retention',
    summary: 'Read the retention rule',
    description: RETENTION_PROSE.description,
    success: 'The rule in force (null when none), its ID, and how many other rules the bucket has.',
    errors: RETENTION_PROSE.errors
  },
  setRetention: {
    tag: 'retention',
    summary: 'Set the retention rule',
    description: RETENTION_PROSE.description,
    requestBody: 'The rule: how many noncurrent versions to keep, and after how many days.',
    success: 'The rule now in force.',
    errors: {
      ...RETENTION_PROSE.errors,
      400:
        'The body is not a JSON object, a field is missing, not a whole number or out of range, ' +
        'or another field is given (reason `bad request`).',
      409:
        '`workspace_prefix` is empty: a rule would cover every key of the bucket, published ' +
        'and named copies too (reason `no workspace prefix`).',
      413: 'The body is larger than 64 KB (reason `entity.too.large`).',
      415: { shared: 'UnsupportedEncoding' }
    }
  },
  clearRetention: {
    tag: 'retention',
    summary: 'Remove the retention rule',
    description: RETENTION_PROSE.description,
    success: 'The rule is gone (`rule` is null); the other rules are as they were.',
    errors: RETENTION_PROSE.errors
  },
  listDeleted: {
    tag: 'recently deleted',
    summary: 'List the recently deleted notebooks',
    description: `The archived notebooks whose newest entry below \`<workspace_prefix>/\` is a delete marker,
newest deletion first, each with the time of its delete marker and its newest version
before it (what \`POST api/store/restore\` writes back by default). With \`prefix\`, only
those below that directory. A key that holds only delete markers is left out, and so is
the old path of a renamed notebook: a rename leaves a delete marker on the old key too,
written just after the new key's first version, whose \`renamed-from\` metadata names the
old path (the versions written within a few seconds before a marker are looked at, one
HEAD each). Only paths the archive covers (\`archive_include\`) are listed.

Cost: every call lists every version and delete marker below the workspace prefix once
(S3 ListObjectVersions, 1000 entries per request), whatever \`prefix\` and \`limit\` are:
one request per 1000 versions in the workspace, plus the HEADs above.
\`api/store/deleted/\` (with a trailing slash) answers the same.
`,
    success: 'The deleted notebooks, at most `limit` of them, and how many were left out.',
    errors: {
      400:
        '`limit` is not a whole number from 1 to 1000 (reason `bad request`), or `prefix` is ' +
        'refused as a path (`absolute path`, `invalid path`, `hidden path`).',
      403:
        "Refused by Jupyter's checks (reasons `host not allowed`, `not authenticated`, `not " +
        "authorized`), or object storage denied access (the store's code, e.g. `AccessDenied`).",
      404:
        'A cookie-authenticated request from another origin (reason `cross-origin request ' +
        "blocked`), or the bucket no longer exists (the store's code, e.g. `NoSuchBucket`).",
      ...STORE_FAILURES
    }
  },
  restoreNotebook: {
    tag: 'recently deleted',
    summary: 'Restore a deleted notebook',
    description: `Write an archived version of \`path\` back into the server: \`object_version_id\`, or by
default the newest version (for a deleted notebook, the newest before its delete marker).
It is written through the gateway's contents manager, so the restore is archived as a new
version; a notebook is trusted only if that exact notebook was signed, as a checkpoint
restore leaves it. Nothing is overwritten: when \`path\` exists again, the notebook is
written at \`name-1.ipynb\`, \`name-2.ipynb\`, … as \`POST api/store/clone\` names its copies;
the answer's \`path\` says where. The directory of \`path\` is not created: when it is gone,
the answer is 409. \`api/store/restore/\` (with a trailing slash) answers the same.
`,
    requestBody: 'The path to restore, and optionally the version.',
    success:
      'Restored: the contents model of the written file (without content) plus the version ' +
      'it came from. Its `path` differs from the one asked for when that name was taken.',
    errors: {
      400:
        'The body is not a JSON object, or a field is missing, not a string, empty or too ' +
        'long (reason `bad request`; the message names the field); `path` is absolute, has ' +
        '`.`, `..` or empty segments, or is hidden (`absolute path`, `invalid path`, `hidden ' +
        'path`); or `object_version_id` names a delete marker (`delete marker`).',
      403:
        "Refused by Jupyter's checks (`host not allowed`, `not authenticated`, `not " +
        'authorized` without `contents: write`, `xsrf`); object storage denied access (the ' +
        "store's code); or the file cannot be written (`permission denied`).",
      404:
        'The path has no archived version (reason `no versions`); `object_version_id` is not a ' +
        "version of it (`not found`, or the store's code); or a cookie-authenticated request " +
        'came from another origin (`cross-origin request blocked`).',
      409:
        'The directory of `path` does not exist (reason `missing parent directory`; create it ' +
        'first), or the path and its next 10000 numbered names are all taken (`conflict`).',
      413:
        'The request body is over 64 KiB (reason `entity.too.large`), or the version is over ' +
        '100 MiB (`too large`).',
      415: { shared: 'UnsupportedEncoding' },
      ...STORE_FAILURES,
      507: { shared: 'NoSpace' }
    }
  },
  diffNotebooks: {
    tag: 'diff',
    summary: 'Diff two notebooks, by ref or given inline',
    description: `The diff of two notebooks, each named by a ref (read at \`path\`) or given inline as a
notebook object, so that a browser can diff the state it has not saved. The answer is as
for \`GET api/store/diff/{path}\`. \`base\` and \`remote\` default as there (the newest
archived version, and \`current\`); a side given as a ref, or left out, needs \`path\`.
\`api/store/diff/\` (with a trailing slash) answers the same.

An inline notebook must be nbformat 4 (\`nbformat: 4\` and a \`cells\` list); it is read as
nbformat reads a file, so its sources may be strings or lists of lines. It reads nothing
from the server: only \`contents: read\` is needed, as for GET. The body is at most
100 MiB.
`,
    success: 'The base notebook and the diff that turns it into the remote one.',
    errors: {
      400:
        'The body is not a JSON object, or a field has the wrong type or is empty (reason `bad ' +
        'request`; the message names the field); a side is a ref, or left out, and there is ' +
        'no `path` (`bad request`); or the path or a ref is refused as for GET.',
      403: { shared: 'DiffForbidden' },
      404: { shared: 'DiffNotFound' },
      413:
        'The request body is over 100 MiB (reason `entity.too.large`), or a notebook read by ' +
        'ref is (`too large`).',
      415: { shared: 'UnsupportedEncoding' },
      422: { shared: 'NotANotebook' },
      ...STORE_FAILURES
    }
  }
};

/**
 * The paths of the store API by their template, with the name their refused methods take in an
 * `operationId` and why those methods are refused.
 */
export const REFUSED_METHODS: Readonly<
  Record<string, { readonly name: string; readonly why: string; readonly whyDelete?: string }>
> = {
  '/api/store': { name: 'StoreInfo', why: 'feature detection is read with GET' },
  '/api/store/versions/{path}': {
    name: 'Versions',
    why: 'versions are only listed, with GET',
    whyDelete: 'stored versions are immutable'
  },
  '/api/store/publish/{path}': {
    name: 'Publish',
    why: 'publish with PUT',
    whyDelete: 'published versions are immutable'
  },
  '/api/store/named/{path}': {
    name: 'NamedVersion',
    why: 'a version is named with POST and its name removed with DELETE'
  },
  '/api/store/clone': { name: 'ObjectClone', why: 'clone with POST' },
  '/api/store/fs-clone': { name: 'FsClone', why: 'clone with POST' },
  '/api/store/diff': { name: 'Diff', why: 'diff with POST' },
  '/api/store/deleted': { name: 'Deleted', why: 'deleted notebooks are listed with GET' },
  '/api/store/restore': { name: 'Restore', why: 'restore with POST' },
  '/api/store/diff/{path}': { name: 'DiffVersions', why: 'diff with GET' },
  '/api/store/retention': {
    name: 'Retention',
    why: 'the rule is read with GET, set with PUT and removed with DELETE'
  }
};

/** Responses that several operations share. */
export const SHARED_RESPONSES = {
  AuthForbidden:
    "Refused by Jupyter's checks: the Host is not local while remote access is off (reason " +
    '`host not allowed`), or the caller is not authenticated (`not authenticated`).',
  AuthOrXsrfForbidden:
    "Refused by Jupyter's checks: `host not allowed`, `not authenticated`, or a " +
    "cookie-authenticated write without a matching XSRF token (`xsrf`, with tornado's " +
    'message).',
  CrossOrigin:
    'A cookie-authenticated request from an origin that is not allowed (reason `cross-origin ' +
    'request blocked`), answered as Jupyter answers it.',
  MethodNotAllowed: 'Only the documented method is served here (reason `method not allowed`).',
  UpstreamUnavailable:
    'Jupyter Server could not be asked who the caller is (reason `upstream unavailable`).',
  StoreOrUpstreamUnavailable:
    'Object storage is not usable: no bucket is configured, or the bucket check failed ' +
    '(missing bucket, versioning off, credentials refused); reason `store unavailable`, and ' +
    'the message says why, as `GET api/store` does in `reasons`. Or Jupyter Server could not ' +
    'be asked who the caller is (`upstream unavailable`).',
  StoreUnreachable:
    'Object storage could not be reached or failed (connection refused, time-out, a 5xx); the ' +
    "reason is the store's or the network's code (e.g. `ECONNREFUSED`). Trying again later " +
    'may succeed.',
  CloneTargetConflict:
    'The directory of `target_path` does not exist (reason `missing parent directory`; ' +
    'create it first), or the target and its next 10000 numbered names are all taken ' +
    '(`conflict`).',
  UnsupportedEncoding:
    'The request body has a `Content-Encoding` the server cannot decode (reason ' +
    '`encoding.unsupported`; `gzip`, `deflate` and `br` are decoded).',
  NoSpace: "No space is left on the server's disk for the copy (reason `no space`).",
  DiffForbidden:
    "Refused by Jupyter's checks (reasons `host not allowed`, `not authenticated`, `not " +
    'authorized` without `contents: read`, and for POST with a login cookie `xsrf`); the file ' +
    'on disk cannot be read (`permission denied`); or object storage denied access (the ' +
    "store's code, e.g. `AccessDenied`).",
  DiffNotFound:
    'The file (`current`) does not exist or is hidden (reason `not found`); the version does ' +
    "not exist (the store's code, e.g. `NoSuchVersion`, `NoSuchKey`); `base` was left out and " +
    'the path has no archived version (`no versions`); or a cookie-authenticated request came ' +
    'from another origin (`cross-origin request blocked`).',
  NotANotebook:
    'A side is not an nbformat 4 notebook: a version or a file that nbformat cannot read, a ' +
    'directory, a file that is not UTF-8 text, or an inline value without `nbformat: 4` and a ' +
    '`cells` list (reason `not a notebook`).'
} as const;

/** The description of the `reason` field of every error body. */
export const REASON_DESCRIPTION =
  'A short, stable word for programs (`bad request`, `not a notebook`, `store unavailable`, ' +
  "…): one of the gateway's reasons below, each always answered with the same status; or the " +
  "object store's own error code (`NoSuchKey`, `AccessDenied`, …), or the network's " +
  '(`ECONNREFUSED`, …).';
