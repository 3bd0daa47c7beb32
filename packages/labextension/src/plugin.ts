import type { StoreInfo } from '@jupyter-store/contract';
import type { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { Dialog, ICommandPalette, showDialog } from '@jupyterlab/apputils';
import { IDefaultFileBrowser, type FileBrowser } from '@jupyterlab/filebrowser';
import { INotebookTracker } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStatusBar } from '@jupyterlab/statusbar';
import { ITranslator, nullTranslator, type TranslationBundle } from '@jupyterlab/translation';
import type { ReadonlyPartialJSONObject } from '@lumino/coreutils';
import { Widget } from '@lumino/widgets';
import {
  ArchiveStatusItem,
  ArchiveStatusModel,
  observationSection,
  summarize,
  usageText
} from './archiveStatus';
import { cloneFromFileSystem, cloneFromObjectStorage, type ICloneContext } from './clone';
import { VersionComparer } from './compare';
import { Dom } from './forms';
import { cloneFolderIcon, cloneIcon, publishIcon, versionsIcon } from './icons';
import { publishNotebook } from './publish';
import { saveVersion } from './saveVersion';
import { layoutOf, StoreClient } from './storeClient';
import { CommandIDs, PLUGIN_ID, TRANSLATION_DOMAIN } from './tokens';
import { RecentlyDeleted } from './recentlyDeleted';
import { VersionsPanel } from './versionsPanel';

/** How often the archive status is refreshed when the settings do not say. */
const DEFAULT_REFRESH_SECONDS = 10;

/**
 * The jupyter-store plugin: asks the gateway which features are valid (`GET {base}api/store`)
 * and registers the commands of those features only. Without a store API it adds nothing.
 */
export const storePlugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'Publish and clone notebooks, and see their archived versions (jupyter-store).',
  autoStart: true,
  optional: [
    ITranslator,
    ICommandPalette,
    INotebookTracker,
    IDefaultFileBrowser,
    IStatusBar,
    ISettingRegistry,
    IRenderMimeRegistry
  ],
  activate: async (
    app: JupyterFrontEnd,
    translator: ITranslator | null,
    palette: ICommandPalette | null,
    notebooks: INotebookTracker | null,
    browser: IDefaultFileBrowser | null,
    statusBar: IStatusBar | null,
    settingRegistry: ISettingRegistry | null,
    rendermime: IRenderMimeRegistry | null
  ): Promise<void> => {
    translator ??= nullTranslator;
    const trans = translator.load(TRANSLATION_DOMAIN);
    const client = new StoreClient(app.serviceManager.serverSettings, trans);
    let info: StoreInfo;
    try {
      info = await client.info();
    } catch (error) {
      // Plain Jupyter Server, or an older gateway: nothing of ours can work, so nothing is added.
      console.warn(
        `jupyter-store: no store API at ${app.serviceManager.serverSettings.baseUrl}api/store ` +
          `(${error instanceof Error ? error.message : String(error)}); the extension adds nothing.`
      );
      return;
    }
    activateFeatures({
      app,
      translator,
      trans,
      client,
      info,
      palette,
      notebooks,
      browser,
      statusBar,
      settingRegistry,
      rendermime
    });
  }
};

interface IFeatureContext {
  app: JupyterFrontEnd;
  translator: ITranslator;
  trans: TranslationBundle;
  client: StoreClient;
  info: StoreInfo;
  palette: ICommandPalette | null;
  notebooks: INotebookTracker | null;
  browser: IDefaultFileBrowser | null;
  statusBar: IStatusBar | null;
  settingRegistry: ISettingRegistry | null;
  rendermime: IRenderMimeRegistry | null;
}

/** Register what the valid features allow. */
function activateFeatures(context: IFeatureContext): void {
  const { app, trans, client, info, palette, notebooks, browser } = context;
  const { commands } = app;
  const { features } = info;
  const category = trans.__('Object Storage');
  const status = new ArchiveStatusModel(client, info, DEFAULT_REFRESH_SECONDS * 1000);
  void loadSettings(context, status);

  const open = async (path: string): Promise<void> => {
    await browser?.model.refresh();
    await commands.execute('docmanager:open', { path });
  };
  const layout = () => layoutOf(status.info);
  const cloneContext: ICloneContext = { client, trans, layout, open };
  const currentNotebook = () => notebooks?.currentWidget ?? null;
  const registered: string[] = [];

  if (features.publish_valid && notebooks) {
    commands.addCommand(CommandIDs.publish, {
      label: trans.__('Publish…'),
      caption: trans.__('Publish this notebook to object storage, where others can clone it'),
      icon: args => (args.toolbar ? publishIcon : undefined),
      isEnabled: () => currentNotebook() !== null,
      execute: async () => {
        const panel = currentNotebook();
        if (panel) await publishNotebook(panel, client, layout(), trans);
      }
    });
    registered.push(CommandIDs.publish);
  }

  if (features.object_clone_valid) {
    commands.addCommand(CommandIDs.cloneFromObjectStorage, {
      label: trans.__('Clone from object storage…'),
      caption: trans.__('Copy a file (or an old version of it) from object storage here'),
      icon: args => (args.toolbar ? cloneIcon : undefined),
      execute: args => cloneFromObjectStorage(cloneContext, targetFolder(app, browser, args))
    });
    registered.push(CommandIDs.cloneFromObjectStorage);
  }

  if (features.fs_clone_valid) {
    commands.addCommand(CommandIDs.cloneFromFileSystem, {
      label: trans.__('Clone from file system…'),
      caption: trans.__("Copy a file from the server's shared clone directory here"),
      icon: args => (args.toolbar ? cloneFolderIcon : undefined),
      execute: args => cloneFromFileSystem(cloneContext, targetFolder(app, browser, args))
    });
    registered.push(CommandIDs.cloneFromFileSystem);
  }

  const comparer =
    features.store_valid && notebooks && context.rendermime
      ? new VersionComparer({
          app,
          client,
          notebooks,
          rendermime: context.rendermime,
          translator: context.translator,
          trans
        })
      : null;
  if (comparer) registered.push(...addCompareCommands(context, comparer));

  if (features.store_valid && notebooks) {
    let panel: VersionsPanel | null = null;
    commands.addCommand(CommandIDs.showVersions, {
      label: trans.__('Show Archived Versions'),
      caption: trans.__('List the archived and published versions of this notebook'),
      icon: args => (args.toolbar ? versionsIcon : undefined),
      isEnabled: () => currentNotebook() !== null,
      execute: () => {
        if (!panel || panel.isDisposed) {
          panel = new VersionsPanel({
            client,
            trans,
            status,
            open,
            compare: async comparison => {
              await commands.execute(CommandIDs.compareVersions, { ...comparison });
            },
            preview: async preview => {
              await commands.execute(CommandIDs.previewVersion, { ...preview });
            },
            pickAndCompare: async path => {
              await commands.execute(CommandIDs.compareVersions, { path });
            },
            saveVersion: async () => {
              await commands.execute(CommandIDs.saveVersion);
            },
            recentlyDeleted: new RecentlyDeleted({
              client,
              trans,
              status,
              open,
              contents: app.serviceManager.contents
            })
          });
          panel.title.icon = versionsIcon;
          const created = panel;
          notebooks.currentChanged.connect((_, current) => {
            if (!created.isDisposed && current) created.setNotebook(current);
          });
        }
        if (!panel.isAttached) app.shell.add(panel, 'right', { rank: 900 });
        panel.setNotebook(currentNotebook());
        app.shell.activateById(panel.id);
      }
    });
    registered.push(CommandIDs.showVersions);
    commands.addCommand(CommandIDs.saveVersion, {
      label: trans.__('Save Version…'),
      caption: trans.__('Save this notebook and give the version saved a name and a note'),
      isEnabled: () => currentNotebook() !== null,
      execute: async () => {
        const notebook = currentNotebook();
        if (notebook && (await saveVersion(notebook, client, trans))) await panel?.refresh();
      }
    });
    registered.push(CommandIDs.saveVersion);
  }

  commands.addCommand(CommandIDs.showArchiveStatus, {
    label: trans.__('Show Archive Status'),
    caption: trans.__('How archiving to object storage is doing'),
    execute: () => showArchiveStatus(status, trans)
  });
  registered.push(CommandIDs.showArchiveStatus);

  if (notebooks) {
    const notify = () => {
      for (const id of [
        CommandIDs.publish,
        CommandIDs.showVersions,
        CommandIDs.saveVersion,
        CommandIDs.compareVersions,
        CommandIDs.compareUnsaved,
        CommandIDs.previewVersion
      ]) {
        if (commands.hasCommand(id)) commands.notifyCommandChanged(id);
      }
    };
    notebooks.currentChanged.connect(notify);
    // Every save is archived: follow it in the status bar.
    notebooks.widgetAdded.connect((_, panel) => {
      panel.context.saveState.connect((__, state) => {
        if (state === 'completed') status.watchSave();
      });
    });
  }

  if (palette) {
    for (const command of registered) palette.addItem({ command, category });
  }

  if (context.statusBar) {
    const item = new ArchiveStatusItem(status, trans, () => {
      void commands.execute(CommandIDs.showArchiveStatus);
    });
    context.statusBar.registerStatusItem(`${PLUGIN_ID}-archive-status`, {
      item,
      align: 'left',
      rank: 100
    });
  }
}

/**
 * The commands that compare and preview versions. Each takes its notebook from `path`, else the
 * current notebook; with the refs in its arguments it opens its tab at once (the versions panel
 * calls them so), else a dialog asks which versions (the palette).
 *
 * @returns the ids registered.
 */
function addCompareCommands(context: IFeatureContext, comparer: VersionComparer): string[] {
  const { app, trans, notebooks } = context;
  const pathOf = (args: ReadonlyPartialJSONObject): string | null =>
    typeof args.path === 'string' ? args.path : (notebooks?.currentWidget?.context.path ?? null);
  const text = (args: ReadonlyPartialJSONObject, name: string): string | undefined =>
    typeof args[name] === 'string' ? args[name] : undefined;

  app.commands.addCommand(CommandIDs.compareVersions, {
    label: trans.__('Compare Two Versions…'),
    caption: trans.__('See what changed between two versions of this notebook'),
    isEnabled: args => pathOf(args) !== null,
    execute: async args => {
      const path = pathOf(args);
      if (path === null) return null;
      const base = text(args, 'base');
      const remote = text(args, 'remote');
      if (base === undefined && remote === undefined) return comparer.pickAndCompare(path);
      return comparer.compare({
        path,
        base,
        remote,
        baseLabel: text(args, 'baseLabel'),
        remoteLabel: text(args, 'remoteLabel'),
        // Versions of the notebook's earlier path (before a rename) are read there.
        basePath: text(args, 'basePath'),
        remotePath: text(args, 'remotePath')
      });
    }
  });
  app.commands.addCommand(CommandIDs.compareUnsaved, {
    label: trans.__('Compare Unsaved Changes with Version…'),
    caption: trans.__('See what changed from a version to the notebook on screen, saved or not'),
    isEnabled: args => pathOf(args) !== null,
    execute: async args => {
      const path = pathOf(args);
      if (path === null) return null;
      return comparer.compareUnsaved(path, text(args, 'base'), text(args, 'baseLabel'));
    }
  });
  app.commands.addCommand(CommandIDs.previewVersion, {
    label: trans.__('Preview Version…'),
    caption: trans.__('Show a version of this notebook read-only, without creating a file'),
    isEnabled: args => pathOf(args) !== null,
    execute: async args => {
      const path = pathOf(args);
      if (path === null) return null;
      const ref = text(args, 'ref');
      if (ref === undefined) return comparer.pickAndPreview(path);
      return comparer.preview({ path, ref, label: text(args, 'label') });
    }
  });
  return [CommandIDs.compareVersions, CommandIDs.compareUnsaved, CommandIDs.previewVersion];
}

/** Apply the user's settings, and follow their changes. */
async function loadSettings(context: IFeatureContext, status: ArchiveStatusModel): Promise<void> {
  if (!context.settingRegistry) return;
  try {
    const settings = await context.settingRegistry.load(PLUGIN_ID);
    const apply = () => {
      const seconds = settings.get('archiveStatusRefreshSeconds').composite;
      status.intervalMs =
        (typeof seconds === 'number' && seconds >= 1 ? seconds : DEFAULT_REFRESH_SECONDS) * 1000;
    };
    apply();
    settings.changed.connect(apply);
  } catch (error) {
    console.warn('jupyter-store: the settings could not be loaded; defaults apply', error);
  }
}

/**
 * The folder a clone goes into: the folder right-clicked in the file browser (its context menu
 * items pass `fromContextMenu`), else the folder the browser shows.
 */
function targetFolder(
  app: JupyterFrontEnd,
  browser: FileBrowser | null,
  args: ReadonlyPartialJSONObject
): string {
  if (!browser) return '';
  const contents = app.serviceManager.contents;
  if (args.fromContextMenu) {
    const folder = app.contextMenuHitTest(
      node => node.classList.contains('jp-DirListing-item') && node.dataset.isdir === 'true'
    );
    if (folder) {
      // Right-clicking an item selects it.
      for (const item of browser.selectedItems()) {
        if (item.type === 'directory') return contents.localPath(item.path);
      }
    }
  }
  return contents.localPath(browser.model.path);
}

/** The status bar item's dialog: the archive state and every feature with its reason. */
async function showArchiveStatus(
  status: ArchiveStatusModel,
  trans: TranslationBundle
): Promise<void> {
  await status.refresh();
  const { info } = status;
  const summary = summarize(info, status.error, trans);
  const body = new Widget();
  body.addClass('jp-store-StatusDialog');
  body.node.appendChild(
    Dom.element('p', summary.warning ? 'jp-store-Warning' : undefined, summary.detail)
  );
  const names: [keyof StoreInfo['features'], string][] = [
    ['store_valid', trans.__('Object storage')],
    ['archive_valid', trans.__('Archiving of saves')],
    ['publish_valid', trans.__('Publishing')],
    ['object_clone_valid', trans.__('Cloning from object storage')],
    ['fs_clone_valid', trans.__('Cloning from the file system')]
  ];
  const list = Dom.element('dl', 'jp-store-Facts');
  for (const [feature, label] of names) {
    list.appendChild(Dom.element('dt', undefined, label));
    const on = info.features[feature];
    const reason = info.reasons[feature];
    list.appendChild(
      Dom.element(
        'dd',
        on ? undefined : 'jp-store-Off',
        on ? trans.__('on') : trans.__('off: %1', reason ?? '')
      )
    );
  }
  body.node.appendChild(list);
  if (info.archive) {
    body.node.appendChild(
      Dom.element(
        'p',
        undefined,
        trans.__(
          'Archived since the server started: %1. Pending: %2.',
          info.archive.archived,
          info.archive.pending
        )
      )
    );
  }
  const usage = usageText(info, trans);
  if (usage) body.node.appendChild(Dom.element('p', 'jp-store-Usage', usage));
  const observation = observationSection(info, trans);
  if (observation) body.node.appendChild(observation);
  body.node.appendChild(
    Dom.element('p', 'jp-store-Form-note', trans.__('jupyter-store %1', info.release))
  );
  await showDialog({
    title: trans.__('Archive status'),
    body,
    buttons: [Dialog.okButton({ label: trans.__('Close') })]
  });
}
