/**
 * Helpers shared by the UI tests: the browser console, MinIO, the contents API, the store CLI
 * and screenshots for the README.
 */
import {
  GetObjectCommand,
  ListObjectVersionsCommand,
  PutObjectCommand,
  S3Client
} from '@aws-sdk/client-s3';
import { expect, type APIRequestContext, type Locator, type Page } from '@playwright/test';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { CLI } from '../../packages/server/test/support/gateway';
import { REPO_ROOT } from '../../packages/server/test/support/jupyterServer';
import { uiTestEnvironment } from './environment';

/** Where the screenshots for the README's user guide go. */
export const SCREENSHOT_DIR = join(REPO_ROOT, 'docs', 'screenshots');

/** One console message, or an uncaught page error (type `pageerror`). */
export interface IConsoleEntry {
  type: string;
  text: string;
  url: string;
}

/** Record what the page writes to its console from now on. */
export function recordConsole(page: Page): IConsoleEntry[] {
  const entries: IConsoleEntry[] = [];
  page.on('console', message =>
    entries.push({ type: message.type(), text: message.text(), url: message.location().url })
  );
  page.on('pageerror', error => entries.push({ type: 'pageerror', text: error.message, url: '' }));
  return entries;
}

/**
 * The errors among them. Chromium reports every HTTP error answer to `fetch` as a console error
 * of its own ("Failed to load resource"); `expectedFailures` lists the URL parts of answers a
 * test provokes on purpose (a 422 for an invalid notebook, say), which are not the page's errors.
 */
export function consoleErrors(
  entries: readonly IConsoleEntry[],
  expectedFailures: readonly string[] = []
): IConsoleEntry[] {
  return entries.filter(entry => {
    if (entry.type !== 'error' && entry.type !== 'pageerror') return false;
    const failedLoad = entry.text.startsWith('Failed to load resource');
    return !(failedLoad && expectedFailures.some(part => entry.url.includes(part)));
  });
}

/** An S3 client for the tests' MinIO. */
export function objectClient(): S3Client {
  const env = uiTestEnvironment();
  return new S3Client({
    endpoint: env.objectEndpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: {
      accessKeyId: env.objectAccessKeyId,
      secretAccessKey: env.objectSecretAccessKey
    }
  });
}

/** The text of an object (a version of it) in the tests' bucket. */
export async function readObject(key: string, versionId?: string): Promise<string> {
  const client = objectClient();
  try {
    const answer = await client.send(
      new GetObjectCommand({
        Bucket: uiTestEnvironment().objectBucket,
        Key: key,
        VersionId: versionId
      }),
      { abortSignal: AbortSignal.timeout(15_000) }
    );
    return await answer.Body!.transformToString('utf8');
  } finally {
    client.destroy();
  }
}

/** Write an object straight into the bucket (not through the gateway). */
export async function writeObject(key: string, body: string): Promise<string | undefined> {
  const client = objectClient();
  try {
    const answer = await client.send(
      new PutObjectCommand({ Bucket: uiTestEnvironment().objectBucket, Key: key, Body: body }),
      { abortSignal: AbortSignal.timeout(15_000) }
    );
    return answer.VersionId;
  } finally {
    client.destroy();
  }
}

/** The version ids of a key, newest first. */
export async function objectVersions(key: string): Promise<string[]> {
  const client = objectClient();
  try {
    const answer = await client.send(
      new ListObjectVersionsCommand({ Bucket: uiTestEnvironment().objectBucket, Prefix: key }),
      { abortSignal: AbortSignal.timeout(15_000) }
    );
    return (answer.Versions ?? [])
      .filter(version => version.Key === key)
      .sort((a, b) => (b.LastModified?.getTime() ?? 0) - (a.LastModified?.getTime() ?? 0))
      .map(version => version.VersionId ?? '');
  } finally {
    client.destroy();
  }
}

/** A contents model with content, through the gateway's contents API. */
export async function readContents(
  request: APIRequestContext,
  path: string
): Promise<{ path: string; content: unknown; type: string }> {
  const response = await request.get(
    `${uiTestEnvironment().gatewayUrl}api/contents/${path.split('/').map(encodeURIComponent).join('/')}?content=1`
  );
  if (!response.ok()) throw new Error(`GET ${path}: ${response.status()} ${await response.text()}`);
  return response.json();
}

/** Write a file through the gateway's contents API (so a notebook is archived like any save). */
export async function writeContents(
  request: APIRequestContext,
  path: string,
  model: { type: 'notebook' | 'file'; format: 'json' | 'text'; content: unknown }
): Promise<void> {
  const response = await request.put(
    `${uiTestEnvironment().gatewayUrl}api/contents/${path.split('/').map(encodeURIComponent).join('/')}`,
    { data: model }
  );
  if (!response.ok()) throw new Error(`PUT ${path}: ${response.status()} ${await response.text()}`);
}

/** The archived version ids of `path`, newest first, once there are at least `atLeast`. */
export async function archivedVersionIds(
  request: APIRequestContext,
  path: string,
  atLeast: number
): Promise<string[]> {
  let ids: string[] = [];
  await expect
    .poll(
      async () => {
        const response = await request.get(
          `${uiTestEnvironment().gatewayUrl}api/store/versions/${path}`
        );
        const listing = await response.json();
        ids = listing.workspace.versions.map(
          (version: { object_version_id: string }) => version.object_version_id
        );
        return ids.length;
      },
      { timeout: 30_000 }
    )
    .toBeGreaterThanOrEqual(atLeast);
  return ids;
}

/** Run `jupyter-store <args>` with the gateway's Jupyter config directory. */
export function runStoreCli(args: string[]): string {
  const env = uiTestEnvironment();
  const result = spawnSync(process.execPath, [CLI, ...args], {
    env: { ...process.env, JUPYTER_CONFIG_DIR: env.configDir },
    encoding: 'utf8',
    timeout: 30_000
  });
  if (result.status !== 0) {
    throw new Error(`jupyter-store ${args.join(' ')}: ${result.stderr}${result.stdout}`);
  }
  return result.stdout;
}

/** Save a screenshot of `target` for the README. */
export async function screenshot(target: Locator, name: string): Promise<void> {
  await target.screenshot({ path: join(SCREENSHOT_DIR, `${name}.png`), animations: 'disabled' });
}

/** The dialog on top. */
export function topDialog(page: Page): Locator {
  return page.locator('.jp-Dialog').last();
}
