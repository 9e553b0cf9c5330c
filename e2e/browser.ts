// Launches Debian's Chromium with WebGPU on (SwiftShader when there is no GPU) and no traffic
// to Google's services, which this machine's closed network would refuse anyway.
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { inject } from 'vitest';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--enable-unsafe-webgpu',
  '--no-sandbox',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

export async function launch(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)`);
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
}

export function appURL(query = ''): string {
  return inject('baseURL') + query;
}

/** Opens the lab and waits until the engine worker reports a backend. */
export async function openLab(browser: Browser, query = ''): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(appURL(query));
  await page.waitForFunction(() => {
    const el = document.querySelector('[data-testid="device-badge"]');
    return el !== null && el.getAttribute('data-backend') !== '';
  }, undefined, { timeout: 90_000 });
  return { page, errors };
}
