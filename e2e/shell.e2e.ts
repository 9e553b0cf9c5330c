import { readdirSync, readFileSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launch, openHarness } from './browser';
import type { HarnessEngine } from '../dev/harness/harnessApi';

let browser: Browser;
beforeAll(async () => {
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
});

describe('lab shell on WebGPU', () => {
  it('probes a WebGPU adapter, runs tfjs on webgpu and shows the limits table', async () => {
    const { page, errors } = await openHarness(browser);
    await expect(page.getAttribute('[data-testid="device-badge"]', 'data-backend')).resolves.toBe('webgpu');
    const status = await page.evaluate(() => (window.sparring!.engine as HarnessEngine).status());
    expect(status.probe.available).toBe(true);
    expect(status.probe.limits!.maxStorageBufferBindingSize).toBeGreaterThanOrEqual(128 * 2 ** 20);
    expect(status.probe.limits!.maxComputeInvocationsPerWorkgroup).toBeGreaterThanOrEqual(256);
    expect(status.backend.fellBack).toBe(false);
    expect(await page.locator('[data-testid="fallback-banner"]').count()).toBe(0);
    for (const id of ['setup', 'arena', 'charts', 'checkpoints']) {
      await expect(page.locator(`[data-testid="panel-${id}"]`).isVisible()).resolves.toBe(true);
    }
    await page.click('[data-testid="device-badge"]');
    await page.waitForSelector('[data-testid="device-panel"]');
    const binding = await page.textContent('[data-testid="limit-maxStorageBufferBindingSize"]');
    expect(binding).toMatch(/\d+ (MiB|GiB)/);
    // SwiftShader's subgroups (4 lanes) pass the layout probe, so the row reductions use them.
    expect(status.subgroups).toEqual({ layout: { contiguous: true, sizes: [4], minSize: 4 }, active: true });
    expect(await page.textContent('[data-testid="device-subgroups"]')).toBe('yes, 4 lanes: row reductions use them');
    expect(errors).toEqual([]);
    await page.close();
  });

  it('gets an answer from the engine worker', async () => {
    const { page } = await openHarness(browser);
    const pong = await page.evaluate(() => (window.sparring!.engine as HarnessEngine).ping(4242));
    expect(pong.nonce).toBe(4242);
    expect(pong.inWorker).toBe(true);
    // The main thread holds no tfjs: the worker owns every tensor.
    expect(await page.evaluate(() => 'tf' in window)).toBe(false);
    await page.close();
  });
});

describe('fallback backends', () => {
  for (const backend of ['cpu', 'wasm'] as const) {
    it(`renders the lab on ?backend=${backend} and reports the fallback`, async () => {
      const { page, errors } = await openHarness(browser, `?backend=${backend}`);
      await expect(page.getAttribute('[data-testid="device-badge"]', 'data-backend')).resolves.toBe(backend);
      const banner = await page.textContent('[data-testid="fallback-banner"]');
      expect(banner).toContain(`Running on ${backend}, forced by the backend setting`);
      await expect(page.locator('[data-testid="panel-arena"]').isVisible()).resolves.toBe(true);
      const check = await page.evaluate(() => (window.sparring!.engine as HarnessEngine).tokenStatsCheck(2, 50, 7));
      expect(check.backend).toBe(backend);
      expect(check.path).toBe('stock');
      expect(errors).toEqual([]);
      await page.close();
    });
  }

  it('switches backend from the setting and keeps it across a reload', async () => {
    const { page } = await openHarness(browser);
    await page.click('[data-testid="device-badge"]');
    await page.selectOption('[data-testid="backend-setting"]', 'wasm');
    await page.waitForSelector('[data-testid="device-badge"][data-backend="wasm"]', { timeout: 60_000 });
    await page.reload();
    await page.waitForSelector('[data-testid="device-badge"][data-backend="wasm"]', { timeout: 60_000 });
    await page.evaluate(() => localStorage.clear());
    await page.close();
  });
});

describe('the lab build', () => {
  it('ships the checks only on the harness page: the lab worker serves the product API', () => {
    const dist = process.env.SPARRING_DIST ?? 'dist';
    const assets = readdirSync(`${dist}/assets`);
    const read = (re: RegExp) => {
      const f = assets.find((a) => re.test(a));
      if (!f) throw new Error(`no ${re} in ${dist}/assets`);
      return readFileSync(`${dist}/assets/${f}`, 'utf8');
    };
    // Method names survive minification as the API object's keys.
    expect(read(/^engine\.worker-.*\.js$/)).not.toContain('tokenStatsGradCheck');
    expect(read(/^engine\.worker-.*\.js$/)).toContain('exportVerl');
    expect(read(/^harness\.worker-.*\.js$/)).toContain('tokenStatsGradCheck');
    expect(readFileSync(`${dist}/index.html`, 'utf8')).not.toContain('harness');
  });
});
