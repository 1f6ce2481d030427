/**
 * The headless browser the browser tests drive with playwright-core, with nothing installed by
 * hand: the Chromium build that ships inside the npm package @sparticuz/chromium (unpacked once
 * to the temp folder, about 3 s), or the browser at CHROMIUM_PATH when set (Debian's
 * `/usr/bin/chromium`, for example). Never a browser download.
 */
import sparticuz from '@sparticuz/chromium';
import { type Browser, chromium } from 'playwright-core';

/** Flags for a closed network: no background connections, no first-run work. */
const QUIET = ['--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync'];

export async function launchBrowser(): Promise<Browser> {
  const chosen = process.env.CHROMIUM_PATH;
  if (chosen) return chromium.launch({ executablePath: chosen, args: ['--no-sandbox', '--disable-dev-shm-usage', ...QUIET] });
  return chromium.launch({ executablePath: await sparticuz.executablePath(), args: [...sparticuz.args, ...QUIET], headless: true });
}
