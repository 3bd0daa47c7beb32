/** The id of the extension's plugin, and of its settings (`schema/plugin.json`). */
export const PLUGIN_ID = '@jupyter-store/labextension:plugin';

/** The translation domain of every string the extension shows. */
export const TRANSLATION_DOMAIN = 'jupyter_store';

/**
 * The commands, registered only for the features that feature detection reports as valid; the
 * menus, context menus and toolbar buttons that `schema/plugin.json` declares for them stay hidden
 * until then.
 */
export namespace CommandIDs {
  /** Publish the current notebook (`publish_valid`). */
  export const publish = 'jupyter-store:publish';
  /** Clone a file from object storage into the file browser's folder (`object_clone_valid`). */
  export const cloneFromObjectStorage = 'jupyter-store:clone-from-object-storage';
  /** Clone a file from below the server's clone base directory (`fs_clone_valid`). */
  export const cloneFromFileSystem = 'jupyter-store:clone-from-file-system';
  /** Open the panel of archived and published versions of the current notebook (`store_valid`). */
  export const showVersions = 'jupyter-store:show-versions';
  /**
   * Open the diff of two versions of a notebook in a main-area tab (`store_valid`). Arguments:
   * `path` (default: the current notebook), `base` and `remote` refs (`current`, an archived
   * version id, `published:<version id>`, or `unsaved` for the open notebook as it is on screen)
   * with optional `baseLabel` and `remoteLabel`; without both refs a dialog asks for them.
   */
  export const compareVersions = 'jupyter-store:compare-versions';
  /**
   * Compare the current notebook as it is on screen, saved or not, with a version (`store_valid`):
   * the `base` ref, or one picked in a dialog.
   */
  export const compareUnsaved = 'jupyter-store:compare-unsaved';
  /**
   * Show a version read-only in a main-area tab, without creating a file (`store_valid`):
   * arguments `path`, `ref` and `label`, or a version picked in a dialog.
   */
  export const previewVersion = 'jupyter-store:preview-version';
  /**
   * Save the current notebook and name the version the save archives (`store_valid`): a dialog
   * asks for the name and a note.
   */
  export const saveVersion = 'jupyter-store:save-version';
  /** Show the archive status in a dialog (any store API). */
  export const showArchiveStatus = 'jupyter-store:show-archive-status';
}
