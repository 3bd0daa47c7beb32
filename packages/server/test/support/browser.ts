/**
 * Launch the system's Chromium (Debian's `/usr/bin/chromium`, which the test command installs)
 * through playwright-core, for the tests that drive JupyterLab in a real browser. No browser is
 * downloaded: playwright-core only speaks the DevTools protocol to this executable.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium. */
export const CHROMIUM_PATH = '/usr/bin/chromium';

/** Headless, no sandbox (tests may run as root), and nothing that reaches out to the network. */
export const CHROMIUM_ARGS: readonly string[] = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync'
];

/**
 * Start a headless Chromium.
 *
 * @throws with a message that says how to install it when the executable is missing.
 */
export async function launchChromium(options: { timeoutMs?: number } = {}): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `${CHROMIUM_PATH} is missing: run the README test command (scripts/setup.sh installs ` +
        "Debian's chromium package) or 'apt-get install chromium'"
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: [...CHROMIUM_ARGS],
    timeout: options.timeoutMs ?? 60_000
  });
}
