/**
 * Real-time collaboration's saves become versions, driven in Chromium as a person would: the
 * real `jupyter-store lab` CLI runs the ecosystem venv's JupyterLab with jupyter-collaboration
 * (jupyter-server-ydoc), archiving to a real MinIO.
 *
 * With collaboration the browser never `PUT`s an open notebook to the contents API: Ctrl+S is a
 * `save` message on the document's room websocket, and the server also autosaves
 * `document_save_delay` (1 s) after edits, both through Python's contents manager, which the
 * gateway never sees. Those saves reach the archive only through Jupyter's `contents_service`
 * events or the file-system watcher; this spec checks that both kinds arrive, as the bytes on
 * disk, once each, and that collaboration's hidden files (`.jupyter_ystore.db`, `.jupyter/`,
 * `.ipynb_checkpoints/`) never do.
 *
 * The steps are sequential tests sharing one browser page: each needs the ones before it.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import type { StoreInfo } from '@jupyter-store/contract';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { useArchivingLab } from '../support/archivingLab';
import { ecosystemLabDefaults } from '../support/ecosystem';
import type { IGatewayProcess } from '../support/gateway';
import {
  cellEditor,
  describeHistory,
  dismissInterruptions,
  keyHistory,
  LabPage,
  listAllVersions,
  newestVersion,
  notebookPanel,
  poll,
  repeatedVersions,
  saveThroughRoom,
  storeInfo,
  typeIntoCell,
  waitForQuietArchive,
  waitUntilLeftAlone,
  withDiagnostics,
  writeLabSettings,
  type IHistoryEntry
} from '../support/lab';
import type { IObjectServer } from '../support/objectServers';

jest.setTimeout(180_000);

/** Lab's first load (webpack chunks, settings, the collaboration room, the kernel) is slow. */
const LAB_LOAD_MS = 90_000;
/** The page's default timeout for Playwright's actions and waits. */
const PAGE_TIMEOUT_MS = 30_000;
/** From Ctrl+S, or from the last keystroke before an autosave, to the version in MinIO. */
const VERSION_MS = 20_000;
/** From a version's arrival to the file on disk and the newest version being equal. */
const SETTLE_MS = 10_000;
/** The room's answer to a `save` message. */
const SAVE_REPLY_MS = 10_000;
/** From the last keystroke to the cell editor showing what was typed. */
const TYPED_MS = 5_000;
/** Collaboration to leave the notebook alone and the archive to catch up, once Lab is ready. */
const LEFT_ALONE_MS = 30_000;
/** How long the bucket must stay unchanged before it is checked for duplicates. */
const QUIET_MS = 3_000;
const QUIET_BOUND_MS = 30_000;

const BUCKET = 'collaboration';
const PREFIX = 'workspace';
const RUN = randomBytes(4).toString('hex');
const NAME = `collab-${RUN}.ipynb`;
const KEY = `${PREFIX}/${NAME}`;
/** Typed into the cell, then Ctrl+S. Plain Python without brackets or quotes: CodeMirror
 * closes those itself. */
const SAVE_MARKER = `ctrl_s_marker_${RUN} = 1`;
/** Typed on a new line, never saved by the browser: collaboration's autosave writes it. */
const AUTOSAVE_MARKER = `autosave_marker_${RUN} = 2`;

interface IContext {
  minio: IObjectServer;
  client: S3Client;
  rootDir: string;
  gateway: IGatewayProcess;
  browser: Browser;
  /** The one Lab page, with everything it did (its room, its requests). */
  lab: LabPage;
}

const started: Partial<IContext> = {};
/** Set by each step that passed; a step needs the ones before it. */
const passed = new Set<string>();
/** Timings and evidence, printed after the run. */
const figures: Record<string, unknown> = {};

/** A step that cannot run because one it needs failed (reported there, with diagnostics). */
class EarlierStepFailed extends Error {}

function requireSteps(...steps: string[]): IContext {
  const missing = steps.filter(step => !passed.has(step));
  if (missing.length) throw new EarlierStepFailed(`an earlier step failed: ${missing.join(', ')}`);
  return started as IContext;
}

/**
 * Run the step `name`, which needs the steps `needs` (a missing one fails it at once, without
 * diagnostics: those are in the step that failed); if it fails, rethrow with the diagnostics of
 * the page, the notebook's versions and the gateway's log.
 */
async function step(
  name: string,
  needs: string[],
  body: (context: IContext) => Promise<void>
): Promise<void> {
  const context = requireSteps(...needs);
  await withDiagnostics(
    started.gateway,
    () => [started.lab],
    () => body(context),
    async () => {
      if (!started.client) return 'versions: no S3 client';
      const history = await keyHistory(started.client, BUCKET, KEY);
      return `versions of ${KEY} (newest first):\n${describeHistory(history)}`;
    }
  );
  passed.add(name);
}

// ---------------------------------------------------------------------------------------------
// The bucket
// ---------------------------------------------------------------------------------------------

/** The newest version of the notebook, or undefined while there is none. */
function newestNotebookVersion(
  client: S3Client
): Promise<(IHistoryEntry & { body: Buffer }) | undefined> {
  return newestVersion(client, BUCKET, KEY);
}

function describeVersion(version: IHistoryEntry | undefined): string {
  return describeHistory(version ? [version] : [], 400);
}

/** Whether the newest version of the notebook is the file on disk. */
async function archivedAsOnDisk(client: S3Client, rootDir: string): Promise<boolean> {
  const disk = await readFile(join(rootDir, NAME));
  const newest = await newestNotebookVersion(client);
  return newest?.body.equals(disk) ?? false;
}

/** Whether the notebook on disk holds `marker` yet (to tell a missing save from a missing archive). */
async function diskState(rootDir: string, marker: string): Promise<string> {
  const disk = await readFile(join(rootDir, NAME)).catch(() => undefined);
  if (!disk) return 'the notebook is missing on disk';
  return disk.includes(marker) ? 'the marker is on disk' : 'the marker is NOT on disk';
}

/**
 * Wait until the newest version and the file on disk are the same bytes (a later autosave may
 * still be on its way when the first version with the marker arrives).
 */
async function newestEqualsDisk(
  client: S3Client,
  diskPath: string
): Promise<IHistoryEntry & { body: Buffer }> {
  const { value } = await poll(
    'the newest version to equal the file on disk',
    SETTLE_MS,
    async note => {
      const newest = await newestNotebookVersion(client);
      const disk = await readFile(diskPath);
      note(
        `disk ${JSON.stringify(disk.toString('utf8').slice(0, 400))}; newest ${describeVersion(newest)}`
      );
      return newest && newest.body.equals(disk) ? newest : undefined;
    },
    250
  );
  return value;
}

// ---------------------------------------------------------------------------------------------
// The gateway's status
// ---------------------------------------------------------------------------------------------

type Sources = NonNullable<NonNullable<StoreInfo['archive']>['sources']>;

async function sourceCounts(gateway: IGatewayProcess): Promise<Sources> {
  const info = await storeInfo(gateway);
  const sources = info.archive?.sources;
  if (!sources) throw new Error(`GET api/store has no archive sources: ${JSON.stringify(info)}`);
  return sources;
}

/** Versions made from changes seen by Jupyter's events or by the watcher. */
const otherWriters = (sources: Sources): number =>
  sources.events.archived + sources.watcher.archived;

/** A valid nbformat 4.5 notebook with one empty code cell, as Jupyter writes it. */
const INITIAL_NOTEBOOK =
  JSON.stringify(
    {
      cells: [
        {
          cell_type: 'code',
          execution_count: null,
          id: `cell-${RUN}`,
          metadata: {},
          outputs: [],
          source: []
        }
      ],
      metadata: {
        kernelspec: { display_name: 'Python 3 (ipykernel)', language: 'python', name: 'python3' },
        language_info: { name: 'python' }
      },
      nbformat: 4,
      nbformat_minor: 5
    },
    null,
    1
  ) + '\n';

// Declared before the gateway's teardown, so that the page closes first.
afterAll(async () => {
  await started.lab?.close();
});

const rig = useArchivingLab({
  bucket: BUCKET,
  browser: true,
  timeoutMs: 150_000,
  gateway: async () => {
    const rootDir = (started.rootDir = await mkdtemp(join(tmpdir(), 'collaboration-root-')));
    // In the root before the gateway starts: its first scan archives it.
    await writeFile(join(rootDir, NAME), INITIAL_NOTEBOOK);
    return {
      rootDir,
      defaults: ecosystemLabDefaults(),
      args: ['--StoreSettings.archive_retry_max_seconds=2']
    };
  }
});

beforeAll(async () => {
  Object.assign(started, {
    minio: rig.server,
    client: rig.s3,
    gateway: rig.gateway,
    browser: rig.browser
  });
  await writeLabSettings(rig.gateway);
});

afterAll(async () => {
  if (started.rootDir) await rm(started.rootDir, { recursive: true, force: true });
  console.log(
    `collaboration figures: ${JSON.stringify({ ...figures, gatewayExit: rig.exitCode }, null, 2)}`
  );
});

describe('real-time collaboration through the gateway, archived to MinIO', () => {
  test('the initial notebook is archived by the first scan', async () => {
    await step('initial', [], async ({ client, gateway, rootDir }) => {
      const { value: first, ms } = await poll('the first version', VERSION_MS, async note => {
        const newest = await newestNotebookVersion(client);
        note(describeVersion(newest));
        return newest;
      });
      expect(first.body.toString('utf8')).toBe(INITIAL_NOTEBOOK);
      expect(first.body.equals(await readFile(join(rootDir, NAME)))).toBe(true);
      figures.initialVersionMs = ms;
      figures.initialWriter = first.metadata.writer;
      const sources = await sourceCounts(gateway);
      expect(sources.gateway).toEqual({ seen: 0, archived: 0 });
    });
  });

  test('collaboration is active: RTC page config, collaborative session and room for the notebook', async () => {
    await step('collaboration', ['initial'], async ({ client, gateway, browser, rootDir }) => {
      // Fails unless the browser's GET of the page answered 200.
      const lab = (started.lab = await LabPage.open(
        browser,
        gateway,
        `lab/tree/${encodeURIComponent(NAME)}`,
        { label: 'collaboration', timeoutMs: LAB_LOAD_MS }
      ));
      const { page } = lab;
      page.setDefaultTimeout(PAGE_TIMEOUT_MS);

      // 1. The page Lab was served: jupyter_server_ydoc put `disableRTC: false` into the page
      // config, and the collaboration and docprovider federated extensions are loaded.
      const pageConfig = JSON.parse(
        (await page.locator('#jupyter-config-data').textContent()) ?? '{}'
      ) as { disableRTC?: boolean; federated_extensions?: { name: string }[] };
      const extensions = (pageConfig.federated_extensions ?? []).map(extension => extension.name);
      expect(pageConfig.disableRTC).toBe(false);
      expect(extensions).toEqual(
        expect.arrayContaining([
          '@jupyter/docprovider-extension',
          '@jupyter/collaboration-extension'
        ])
      );

      // 2. Jupyter Server itself: the extensions it loaded, as jupyter-store's upstream
      // extension (`GET {base}api/store-upstream`, proxied by the gateway) lists them, include
      // jupyter_server_ydoc (the rooms) and jupyter_server_fileid (their ids), enabled. And the
      // contents backend the gateway chose (recorded: another spec's subject).
      const upstream = await fetch(gateway.url('api/store-upstream'), {
        headers: { Authorization: `token ${gateway.token}` },
        signal: AbortSignal.timeout(10_000)
      });
      const described = (await upstream.json()) as { extensions?: Record<string, boolean> };
      expect(upstream.status).toBe(200);
      expect(described.extensions).toMatchObject({
        jupyter_server_ydoc: true,
        jupyter_server_fileid: true
      });
      figures.contentsBackend = (await storeInfo(gateway)).contents_backend ?? null;

      // 3. The notebook and its editor are there.
      const editor = cellEditor(page, 0);
      await editor.waitFor({ state: 'visible', timeout: LAB_LOAD_MS });
      figures.editorVisibleMs = Date.now() - lab.openedAt;

      // 4. Lab asked the collaboration API for the document's session, and opened its room.
      const room = await poll('the notebook room websocket', LAB_LOAD_MS, () =>
        Promise.resolve(lab.roomOf(NAME))
      );
      const session = lab.apiRequests.find(
        r => r.method === 'PUT' && r.path.endsWith(`/api/collaboration/session/${NAME}`)
      );
      expect(session?.status).toBeDefined();
      expect([200, 201]).toContain(session?.status);
      figures.room = room.value.room;

      // 5. The room's store exists in the root (the hidden files that must not be archived).
      await poll('.jupyter_ystore.db in the root', 10_000, async () =>
        existsSync(join(rootDir, '.jupyter_ystore.db')) ? true : undefined
      );

      // Ready to type: the kernel connected (its kernel_info_reply on the kernel websocket; the
      // room's autosave of its language_info then happens before the markers are typed),
      // interruptions dismissed, the editor editable, collaboration done saving.
      await poll('kernel_info_reply on the kernel websocket', LAB_LOAD_MS, () =>
        Promise.resolve(lab.kernelInfoAt)
      );
      await notebookPanel(page)
        .locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]')
        .first()
        .waitFor({ state: 'attached', timeout: LAB_LOAD_MS });
      figures.dismissed = await dismissInterruptions(page);
      await expect(editor.getAttribute('contenteditable')).resolves.toBe('true');
      figures.readyMs = Date.now() - lab.openedAt;
      figures.untouchedAfterReadyMs = await waitUntilLeftAlone(
        [lab],
        join(rootDir, NAME),
        () => archivedAsOnDisk(client, rootDir),
        LEFT_ALONE_MS
      );
    });
  });

  test('Ctrl+S saves through the room, and the saved bytes become a version seen by events or the watcher', async () => {
    await step(
      'ctrl-s',
      ['initial', 'collaboration'],
      async ({ client, gateway, rootDir, lab }) => {
        const traffic = lab.roomOf(NAME)!;
        await typeIntoCell(lab.page, 0, SAVE_MARKER, { timeoutMs: TYPED_MS });
        const before = await sourceCounts(gateway);
        const savesBefore = traffic.savesSent.length;

        // The save went over the room websocket, and the room answered it (a "File Changed"
        // dialog instead of a save fails at once).
        const reply = await saveThroughRoom(lab, NAME, SAVE_REPLY_MS);
        expect(traffic.savesSent.length).toBe(savesBefore + 1);
        expect(reply.status).not.toBe('failed');
        figures.saveReply = reply;

        const { value: version, ms } = await poll(
          `a version containing ${SAVE_MARKER}`,
          VERSION_MS,
          async note => {
            const newest = await newestNotebookVersion(client);
            note(`${describeVersion(newest)}; ${await diskState(rootDir, SAVE_MARKER)}`);
            return newest?.body.includes(SAVE_MARKER) ? newest : undefined;
          }
        );
        figures.saveToVersionMs = ms;
        figures.saveWriter = version.metadata.writer;
        // Not the gateway's save path: Jupyter's events or the watcher saw it first.
        expect(['events', 'watcher']).toContain(version.metadata.writer);

        const settled = await newestEqualsDisk(client, join(rootDir, NAME));
        expect(settled.body.includes(SAVE_MARKER)).toBe(true);
        // The notebook on disk is still valid nbformat 4 with the marker in its one cell.
        const notebook = JSON.parse(settled.body.toString('utf8')) as {
          nbformat: number;
          cells: { cell_type: string; source: string | string[] }[];
        };
        expect(notebook.nbformat).toBe(4);
        expect(notebook.cells).toHaveLength(1);
        const source = notebook.cells[0].source;
        expect(Array.isArray(source) ? source.join('') : source).toBe(SAVE_MARKER);

        // The product's own account agrees: events or watcher archived it, the gateway did not.
        const { value: after } = await poll('api/store to count the version', 5_000, async note => {
          const sources = await sourceCounts(gateway);
          note(JSON.stringify(sources));
          return otherWriters(sources) > otherWriters(before) ? sources : undefined;
        });
        expect(after.gateway).toEqual(before.gateway);
        expect(after.gateway.archived).toBe(0);
        figures.sourcesAfterSave = after;

        figures.screenshotAfterSave = await lab.screenshot('saved');
      }
    );
  });

  test('an edit left unsaved is autosaved by collaboration and becomes a newer version', async () => {
    await step('autosave', ['ctrl-s'], async ({ client, rootDir, lab }) => {
      const traffic = lab.roomOf(NAME)!;
      const previous = await newestNotebookVersion(client);
      const savesBefore = traffic.savesSent.length;

      await typeIntoCell(lab.page, 0, AUTOSAVE_MARKER, { newLine: true, timeoutMs: TYPED_MS });
      const typedAt = Date.now();
      const { value: version, ms } = await poll(
        `a newer version containing ${AUTOSAVE_MARKER}`,
        VERSION_MS,
        async note => {
          const newest = await newestNotebookVersion(client);
          note(`${describeVersion(newest)}; ${await diskState(rootDir, AUTOSAVE_MARKER)}`);
          return newest &&
            newest.versionId !== previous?.versionId &&
            newest.body.includes(AUTOSAVE_MARKER)
            ? newest
            : undefined;
        }
      );
      figures.autosaveToVersionMs = ms;
      figures.autosaveWriter = version.metadata.writer;
      expect(['events', 'watcher']).toContain(version.metadata.writer);
      expect(version.body.includes(SAVE_MARKER)).toBe(true);
      // Nobody asked: the browser sent no save message since the edit.
      expect(traffic.savesSent.length).toBe(savesBefore);
      expect(traffic.savesSent.filter(at => at >= typedAt)).toEqual([]);

      const settled = await newestEqualsDisk(client, join(rootDir, NAME));
      expect(settled.body.includes(AUTOSAVE_MARKER)).toBe(true);
    });
  });

  test('nothing was archived twice, nothing hidden was archived, the browser never PUT contents', async () => {
    await step('once', ['initial', 'autosave'], async ({ client, gateway, rootDir, lab }) => {
      // Quiet: nothing pending in the gateway, and the listing unchanged for QUIET_MS, so that a
      // late duplicate would be in the bucket before it is checked.
      await waitForQuietArchive(gateway, client, BUCKET, `${PREFIX}/`, {
        quietMs: QUIET_MS,
        timeoutMs: QUIET_BOUND_MS
      });

      const all = await listAllVersions(client, BUCKET, `${PREFIX}/`);
      const keys = [...new Set(all.versions.map(version => version.Key ?? ''))];
      // Only the notebook: not `.jupyter_ystore.db`, `.jupyter/collaboration_sessions.json`,
      // `.ipynb_checkpoints/…` or Jupyter's `.~name` copies, which are all in the root.
      expect(keys).toEqual([KEY]);
      expect(keys.filter(key => key.split('/').some(part => part.startsWith('.')))).toEqual([]);
      expect(all.deleteMarkers.map(marker => marker.Key)).toEqual([]);
      expect(existsSync(join(rootDir, '.jupyter_ystore.db'))).toBe(true);
      figures.hiddenInRoot = (await readdir(rootDir)).filter(name => name.startsWith('.')).sort();

      // Consecutive versions never have the same content (nor the same ETag).
      const history = await keyHistory(client, BUCKET, KEY);
      expect(repeatedVersions(history)).toEqual([]);
      // The initial notebook, the Ctrl+S and the autosave at least (collaboration also saves
      // the kernel's language_info, and may autosave while the markers are typed).
      expect(history.length).toBeGreaterThanOrEqual(3);
      expect(history.at(-1)!.body?.toString('utf8')).toBe(INITIAL_NOTEBOOK);
      expect(history[0].body?.equals(await readFile(join(rootDir, NAME)))).toBe(true);
      figures.versions = history
        .map(version => version.metadata.writer ?? '?')
        .reverse()
        .join(', ');

      // With collaboration, the browser saves through the room only.
      const puts = lab.apiRequests.filter(
        r => r.method === 'PUT' && r.path.includes('/api/contents/')
      );
      expect(puts).toEqual([]);
      const sources = await sourceCounts(gateway);
      expect(sources.gateway.archived).toBe(0);
      figures.sourcesAtEnd = sources;
      const room = lab.roomOf(NAME);
      figures.roomSaves = { sent: room?.savesSent.length, replies: room?.saveReplies };
    });
  });
});
