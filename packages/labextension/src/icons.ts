import { LabIcon } from '@jupyterlab/ui-components';

/*
 * Icons drawn for jupyter-store on JupyterLab's 16×16 grid. `jp-icon3` fills follow the theme's
 * icon colour, so they work in light and dark themes alike.
 */

/** Declared before the icons, which it makes when this module loads. */
namespace Private {
  /**
   * The icon `jupyter-store:<name>`: `paths` drawn on a 24×24 view box shown at 16×16, each
   * filled with the theme's icon colour.
   */
  export function icon(name: string, ...paths: string[]): LabIcon {
    const drawn = paths.map(d => `  <path class="jp-icon3" fill="#616161" d="${d}"/>\n`).join('');
    return new LabIcon({
      name: `jupyter-store:${name}`,
      svgstr:
        '<svg xmlns="http://www.w3.org/2000/svg" width="16" height="16" viewBox="0 0 24 24">\n' +
        `${drawn}</svg>`
    });
  }
}

/** A cloud with an arrow going up: publish. */
export const publishIcon = Private.icon(
  'publish',
  'M19.3 10.1A7 7 0 0 0 6.2 8.2 5.5 5.5 0 0 0 6.5 19H11v-2H6.5a3.5 3.5 0 0 1-.2-7l1.2-.1.5-1.1a5 5 0 0 1 9.4 1.3l.3 1.6 1.6.1a3 3 0 0 1-.3 6.2H13v2h6a5 5 0 0 0 .3-9.9z',
  'M12 11.2 8.6 14.6l1.4 1.4 1-1V22h2v-7l1 1 1.4-1.4z'
);

/** A cloud with an arrow going down: clone from object storage. */
export const cloneIcon = Private.icon(
  'clone',
  'M19.3 10.1A7 7 0 0 0 6.2 8.2 5.5 5.5 0 0 0 6.5 19H9v-2H6.5a3.5 3.5 0 0 1-.2-7l1.2-.1.5-1.1a5 5 0 0 1 9.4 1.3l.3 1.6 1.6.1a3 3 0 0 1-.3 6.2H15v2h4a5 5 0 0 0 .3-9.9z',
  'M13 11h-2v7l-1-1-1.4 1.4 3.4 3.4 3.4-3.4L14 17l-1 1z'
);

/** A folder with an arrow going down: clone from the file system. */
export const cloneFolderIcon = Private.icon(
  'clone-folder',
  'M20 6h-8l-2-2H4a2 2 0 0 0-2 2v12a2 2 0 0 0 2 2h16a2 2 0 0 0 2-2V8a2 2 0 0 0-2-2zm0 12H4V8h16z',
  'M13 9.5h-2v4.3l-1.3-1.3-1.4 1.4 3.7 3.7 3.7-3.7-1.4-1.4-1.3 1.3z'
);

/** A clock with an arrow going back: archived versions. */
export const versionsIcon = Private.icon(
  'versions',
  'M13 3a9 9 0 0 0-9 9H1l3.9 3.9L9 12H6a7 7 0 1 1 2.1 5l-1.4 1.4A9 9 0 1 0 13 3zm-1 5v5l4.3 2.5.7-1.2-3.5-2.1V8z'
);
