// Browser-test helpers over the shared Chromium launcher (dev/browser/chromium.ts).
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, inject } from 'vitest';
import { launchChromium } from '../dev/browser/chromium';

export const launch = launchChromium;

export function appURL(query = ''): string {
  return inject('baseURL') + query;
}

/** The test harness page: the lab on the harness worker, its client on window.sparring (dev/harness/). */
export const HARNESS_PAGE = 'dev/harness/index.html';

/** Opens the lab and waits until the engine worker reports a backend. */
export async function openLab(browser: Browser, query = ''): Promise<{ page: Page; errors: string[] }> {
  return openPage(browser, appURL(query));
}

/** Opens the harness page (the lab with the checks and benchmarks on window.sparring) and waits as openLab does. */
export async function openHarness(browser: Browser, query = ''): Promise<{ page: Page; errors: string[] }> {
  return openPage(browser, appURL(HARNESS_PAGE + query));
}

async function openPage(browser: Browser, url: string): Promise<{ page: Page; errors: string[] }> {
  const page = await browser.newPage();
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(url);
  await page.waitForFunction(
    () => {
      const el = document.querySelector('[data-testid="device-badge"]');
      return el !== null && el.getAttribute('data-backend') !== '';
    },
    undefined,
    { timeout: 90_000 },
  );
  return { page, errors };
}

/**
 * One browser and one lab page for a whole test file, opened before its tests and closed after.
 * Read `.page` inside tests (it is set by beforeAll).
 */
export function sharedLabPage(query = ''): { readonly page: Page } {
  return sharedPage(openLab, query);
}

/** sharedLabPage on the harness page. */
export function sharedHarnessPage(query = ''): { readonly page: Page } {
  return sharedPage(openHarness, query);
}

function sharedPage(open: typeof openLab, query: string): { readonly page: Page } {
  const holder: { browser?: Browser; page?: Page } = {};
  beforeAll(async () => {
    holder.browser = await launch();
    holder.page = (await open(holder.browser, query)).page;
  });
  afterAll(async () => {
    await holder.browser?.close();
  });
  return {
    get page(): Page {
      if (!holder.page) throw new Error('the lab page is not open yet (use it inside a test)');
      return holder.page;
    },
  };
}

/** attacker-sft at its cheapest (a loss that moves the adapter from step 1): 2 pairs a step, 16-token targets, rank 2. */
export const CHEAPEST_SFT: Readonly<Record<string, string>> = {
  dataset: 'sandbox',
  dataSize: '64',
  batchSize: '2',
  loraRank: '2',
  maxTargetTokens: '16',
  sampleEvery: '0',
};
