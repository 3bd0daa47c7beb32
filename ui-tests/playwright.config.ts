/**
 * UI tests of the JupyterLab extension: Galata and Playwright drive Debian's Chromium against
 * real JupyterLab behind the real jupyter-store gateway, with a real MinIO (see
 * `support/globalSetup.ts`). Run by `bash scripts/test.sh`, or alone with `npm run test:ui`.
 */
// First: on a Node older than package.json's engines, stop with a message that says what to do.
import '../scripts/require-node.cjs';
import { defineConfig } from '@playwright/test';
import * as path from 'node:path';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const galataConfig = require('@jupyterlab/galata/lib/playwright-config');

import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../packages/server/test/support/browser';

/** Debian's Chromium: Playwright's own browser download is not used. */
const CHROMIUM = process.env.CHROMIUM_PATH || CHROMIUM_PATH;

export default defineConfig({
  ...galataConfig,
  testDir: path.join(__dirname, 'tests'),
  outputDir: path.join(__dirname, 'test-results'),
  globalSetup: path.join(__dirname, 'support', 'globalSetup.ts'),
  // One JupyterLab behind one gateway: the tests run one after the other.
  workers: 1,
  fullyParallel: false,
  retries: 0,
  forbidOnly: true,
  timeout: 180_000,
  expect: { timeout: 30_000 },
  reporter: [['list']],
  use: {
    ...galataConfig.use,
    viewport: { width: 1280, height: 800 },
    // Video needs Playwright's ffmpeg download; a trace needs nothing more.
    video: 'off',
    trace: 'retain-on-failure',
    actionTimeout: 30_000,
    navigationTimeout: 60_000,
    launchOptions: {
      executablePath: CHROMIUM,
      args: [...CHROMIUM_ARGS]
    }
  }
});
