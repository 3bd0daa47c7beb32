/**
 * The Chromium benchmarks (`npm run bench:diff-ui`): the UI tests' set-up (JupyterLab behind the
 * gateway, with MinIO), but the specs of `bench/`, which measure rather than test and rewrite
 * their section of docs/benchmarks.md.
 */
import { defineConfig } from '@playwright/test';
import * as path from 'node:path';
import uiTestConfig from './playwright.config';

export default defineConfig({
  ...uiTestConfig,
  testDir: path.join(__dirname, 'bench'),
  testMatch: '**/*.bench.ts',
  timeout: 900_000
});
