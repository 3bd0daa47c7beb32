import { expect, test } from '@jupyterlab/galata';
import type { APIRequestContext, Page } from '@playwright/test';
import { uiTestEnvironment } from '../support/environment';
import { consoleErrors, readContents, recordConsole, screenshot } from '../support/helpers';
import { cellSources } from '../support/notebooks';

/** One archived version as the store lists it. */
interface IListed {
  object_version_id: string;
  path?: string;
  renamed_from?: string;
}

/** The archived history of `path`, once it holds a version archived under each of `paths`. */
async function history(
  request: APIRequestContext,
  path: string,
  paths: readonly string[]
): Promise<IListed[]> {
  let versions: IListed[] = [];
  await expect
    .poll(
      async () => {
        const response = await request.get(
          `${uiTestEnvironment().gatewayUrl}api/store/versions/${path}?limit=1000`
        );
        versions = (await response.json()).workspace.versions;
        return paths.every(earlier => versions.some(version => version.path === earlier));
      },
      { timeout: 30_000 }
    )
    .toBe(true);
  return versions;
}

/** Rename `from` to `to` in the file browser: context menu, Rename, type the name, Enter. */
async function renameInFileBrowser(page: Page, from: string, to: string): Promise<void> {
  await page.locator(`.jp-DirListing-item[title*="${from}"]`).click({ button: 'right' });
  await page.getByRole('menuitem', { name: /^Rename\b/ }).click();
  const editor = page.locator('.jp-DirListing-editor');
  await expect(editor).toBeVisible();
  await editor.fill(to);
  await editor.press('Enter');
  await expect(page.locator(`.jp-DirListing-item[title*="${to}"]`)).toBeVisible();
  await expect(page.getByRole('tab', { name: to })).toBeVisible();
}

test.describe('Archived versions across renames', () => {
  test('Rename a notebook three times in the file browser: the panel lists every version with its earlier names', async ({
    page,
    request,
    tmpPath
  }) => {
    const console = recordConsole(page);
    const names = ['draft.ipynb', 'analysis.ipynb', 'report.ipynb', 'final.ipynb'];
    await page.notebook.createNew(names[0]);
    await page.notebook.setCell(0, 'code', 'stage = "draft"');
    await page.notebook.save();
    await history(request, `${tmpPath}/${names[0]}`, [`${tmpPath}/${names[0]}`]);
    for (let index = 1; index < names.length; index++) {
      await renameInFileBrowser(page, names[index - 1], names[index]);
      await page.notebook.activate(names[index]);
      await page.notebook.setCell(0, 'code', `stage = "${names[index]}"`);
      await page.notebook.save();
      await history(request, `${tmpPath}/${names[index]}`, [`${tmpPath}/${names[index]}`]);
    }
    const finalPath = `${tmpPath}/final.ipynb`;
    const versions = await history(
      request,
      finalPath,
      names.map(name => `${tmpPath}/${name}`)
    );
    // Each rename in Lab reached the archive as a rename: the first version under each new
    // name says which name it came from.
    for (let index = 1; index < names.length; index++) {
      expect(versions.map(version => version.renamed_from)).toContain(
        `${tmpPath}/${names[index - 1]}`
      );
    }

    await page.notebook.activate('final.ipynb');
    await page.menu.clickMenuItem('File>Show Archived Versions');
    const panel = page.locator('#jp-store-versions');
    await expect(panel.locator('.jp-store-VersionsPanel-path')).toHaveText(finalPath);
    const archived = panel.locator('section[data-kind="workspace"] .jp-store-Version');
    await expect(archived).toHaveCount(versions.length);
    const shown = await archived.evaluateAll(items =>
      items.map(item => (item as HTMLElement).dataset.versionId)
    );
    expect(shown).toEqual(versions.map(version => version.object_version_id));
    // Versions of an earlier name say so; those of the current name do not.
    for (const [index, version] of versions.entries()) {
      const marker = archived.nth(index).locator('.jp-store-Version-path');
      if (version.path === finalPath) {
        await expect(marker).toHaveCount(0);
      } else {
        await expect(marker).toHaveText(`as ${version.path?.split('/').pop()}`);
      }
    }
    for (const earlier of names.slice(0, 3)) {
      await expect(
        panel.locator('.jp-store-Version-path', { hasText: `as ${earlier}` }).first()
      ).toBeVisible();
    }

    await screenshot(panel, 'history-across-renames');

    // The last version saved as draft.ipynb compares, opens and restores from its own key.
    const oldest = archived.nth(
      versions.findIndex(version => version.path === `${tmpPath}/draft.ipynb`)
    );
    await oldest.getByRole('button', { name: 'Compare with current', exact: true }).click();
    const diffTab = page.getByRole('tab', { name: /^final\.ipynb: version of .* ↔ current file$/ });
    await expect(diffTab).toBeVisible();
    await expect(page.locator('.jp-store-DiffView').last()).toContainText('stage = "draft"');
    await page.getByRole('tab', { name: 'final.ipynb', exact: true }).click();

    await oldest.getByRole('button', { name: 'Open', exact: true }).click();
    const opened = page.getByRole('tab', { name: /^final-\d{4}-\d{2}-\d{2}-\d{6}\.ipynb$/ });
    await expect(opened).toBeVisible();
    const copy = await readContents(request, `${tmpPath}/${(await opened.innerText()).trim()}`);
    expect(cellSources(copy.content)).toEqual(['stage = "draft"']);

    await page.getByRole('tab', { name: 'final.ipynb', exact: true }).click();
    await oldest.getByRole('button', { name: 'Restore', exact: true }).click();
    await page.locator('.jp-Dialog').getByRole('button', { name: 'Restore' }).click();
    await expect
      .poll(async () => cellSources((await readContents(request, finalPath)).content))
      .toEqual(['stage = "draft"']);
    expect(consoleErrors(console)).toEqual([]);
  });
});
