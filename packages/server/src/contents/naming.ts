/**
 * Jupyter's naming rules for new and copied items.
 */

/** Base names of new untitled items, as Jupyter's `untitled_*` defaults. */
export const UNTITLED_NAMES = {
  notebook: 'Untitled',
  file: 'untitled',
  directory: 'Untitled Folder'
} as const;

/** A `-Copy<n>.` already in a name, which a new copy replaces instead of stacking. */
const COPY_MARKER = /-Copy\d*\./;

/**
 * Split a name where Jupyter inserts a counter: before the last dot for notebooks, before the
 * first dot for everything else (`a.tar.gz` becomes `a1.tar.gz`).
 */
export function splitForCounter(name: string): { stem: string; suffix: string } {
  const last = name.lastIndexOf('.');
  if (last >= 0 && name.slice(last + 1) === 'ipynb') {
    return { stem: name.slice(0, last), suffix: name.slice(last) };
  }
  const first = name.indexOf('.');
  return first < 0
    ? { stem: name, suffix: '' }
    : { stem: name.slice(0, first), suffix: name.slice(first) };
}

/**
 * The first free name in Jupyter's sequence: the name itself, then `<stem><insert>1<suffix>`,
 * `<stem><insert>2<suffix>`, and so on.
 *
 * @param exists - whether a name is taken in the target directory.
 */
export async function incrementName(
  name: string,
  exists: (candidate: string) => Promise<boolean>,
  insert = ''
): Promise<string> {
  const { stem, suffix } = splitForCounter(name);
  for (let counter = 0; ; counter++) {
    const candidate = counter === 0 ? name : `${stem}${insert}${counter}${suffix}`;
    if (!(await exists(candidate))) return candidate;
  }
}

/** The name a copy starts from: an existing `-Copy<n>` marker is dropped (`a-Copy2.ipynb` → `a.ipynb`). */
export function copySourceName(name: string): string {
  return name.replace(COPY_MARKER, '.');
}
