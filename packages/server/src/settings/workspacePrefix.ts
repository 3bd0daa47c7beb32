/**
 * The `{username}` placeholder of `workspace_prefix`, and the user names it may be filled with.
 *
 * #### Notes
 * On a JupyterHub many single-user servers share one bucket, each under its own prefix, and the
 * credential service grants each user's credentials exactly that prefix. A user name therefore
 * ends up both in object keys and in IAM resource patterns, where `*`, `?` and `${…}` are
 * wildcards and variables: a name that could widen a pattern, or climb out of its prefix, is
 * refused rather than escaped, on both sides alike.
 */

/** The placeholder a JupyterHub user's name replaces in `workspace_prefix`. */
export const USERNAME_PLACEHOLDER = '{username}';

/** Why a `workspace_prefix` is refused as a template (see {@link isWorkspaceTemplate}). */
export const WORKSPACE_TEMPLATE_ERROR =
  `may hold no braces besides the ${USERNAME_PLACEHOLDER} placeholder, ` +
  'and no "." or ".." segment';

/** The longest user name accepted (JupyterHub sets no limit; S3 keys end at 1,024 bytes). */
export const MAX_USERNAME_LENGTH = 128;

/**
 * Whether `template` is a valid `workspace_prefix`: `{username}` is the only use of braces, and
 * no segment is `.` or `..` (a filled prefix must never lead out of itself).
 */
export function isWorkspaceTemplate(template: string): boolean {
  if (/[{}]/.test(template.split(USERNAME_PLACEHOLDER).join(''))) return false;
  return !template.split('/').some(segment => segment === '.' || segment === '..');
}

/** Whether `template` holds the `{username}` placeholder. */
export function isPerUserTemplate(template: string): boolean {
  return template.includes(USERNAME_PLACEHOLDER);
}

/**
 * Why `name` cannot be a user's prefix (or part of an IAM resource), or undefined when it can.
 *
 * #### Notes
 * Letters and digits of any script, and `.`, `_`, `-`, `@`, `+`, `=`, `,`, `~` (JupyterHub names
 * are often e-mail addresses); not `.` or `..` alone. Everything else is refused: `/` (another
 * prefix), `*`, `?`, `$`, braces and brackets (IAM wildcards and policy variables), quotes,
 * backslashes, white space and control characters.
 */
export function userNameProblem(name: string): string | undefined {
  if (name === '') return 'is empty';
  if (name.length > MAX_USERNAME_LENGTH) {
    return `is longer than ${MAX_USERNAME_LENGTH} characters`;
  }
  if (/^\.+$/.test(name)) return 'is only dots';
  const refused = [...name].find(character => !Private.USERNAME_CHARACTER.test(character));
  if (refused !== undefined) {
    return `holds ${JSON.stringify(refused)}, which could widen an object key or policy pattern`;
  }
  return undefined;
}

/**
 * `template` with `{username}` replaced by `username`; a template without the placeholder
 * unchanged.
 *
 * @throws Error saying why, when the template needs a user name and none (or an unusable one)
 * is given.
 */
export function fillWorkspacePrefix(template: string, username: string | undefined): string {
  if (!isPerUserTemplate(template)) return template;
  if (username === undefined || username === '') {
    throw new Error(
      `uses ${USERNAME_PLACEHOLDER}, which needs JUPYTERHUB_USER (a JupyterHub single-user ` +
        'server has it)'
    );
  }
  const problem = userNameProblem(username);
  if (problem !== undefined) {
    throw new Error(
      `cannot hold the JupyterHub user name ${JSON.stringify(username)}: it ${problem}`
    );
  }
  return template.split(USERNAME_PLACEHOLDER).join(username);
}

namespace Private {
  /** One character a user name may hold. */
  export const USERNAME_CHARACTER = /^[\p{L}\p{M}\p{N}._\-@+=,~]$/u;
}
