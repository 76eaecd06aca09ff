/**
 * Headless Chromium for the end-to-end tests: Debian's `chromium` package (or CHROMIUM_PATH) driven by
 * playwright-core, which downloads no browser of its own. The flags keep Chromium off the network
 * (this machine's network is closed, and a test must not depend on Google's services).
 */
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { type Browser, chromium } from 'playwright-core';

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const ARTIFACTS_DIR = path.resolve(__dirname, '../../test-artifacts');

const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Launches the browser in a fresh profile, or fails saying how to install one. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `No Chromium at ${CHROMIUM_PATH}. The browser tests need one: on Debian/Ubuntu run ` +
        '`apt-get update && apt-get install -y chromium` (.ci/run does), or set CHROMIUM_PATH to a Chrome or Chromium binary.',
    );
  }
  // playwright-core gives every launch a new, empty profile directory of its own.
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: FLAGS });
}

export function artifactPath(...parts: string[]): string {
  const file = path.join(ARTIFACTS_DIR, ...parts);
  mkdirSync(path.dirname(file), { recursive: true });
  return file;
}

/** Polls until a page shows what is expected (test/helpers/waiting.ts). */
export { eventuallyIs } from './waiting';
