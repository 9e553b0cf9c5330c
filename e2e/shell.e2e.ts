import { readdirSync, readFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launch, openHarness, openLab } from './browser';
import type { HarnessEngine } from '../dev/harness/harnessApi';

let browser: Browser;
beforeAll(async () => {
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
});

describe('lab shell on WebGPU', () => {
  it('probes a WebGPU adapter, runs tfjs on webgpu when forced and shows the limits table', async () => {
    const { page, errors } = await openHarness(browser, '?backend=webgpu');
    await expect(page.getAttribute('[data-testid="device-badge"]', 'data-backend')).resolves.toBe('webgpu');
    const status = await page.evaluate(() => (window.sparring!.engine as HarnessEngine).status());
    expect(status.probe.available).toBe(true);
    expect(status.probe.limits!.maxStorageBufferBindingSize).toBeGreaterThanOrEqual(128 * 2 ** 20);
    expect(status.probe.limits!.maxComputeInvocationsPerWorkgroup).toBeGreaterThanOrEqual(256);
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

// Headless Chromium's only WebGPU adapter is SwiftShader, a software renderer: the lab must pick
// wasm there (3-7x faster per step), say so, and still let the user force webgpu.
describe('the backend on a software adapter, as the user sees it', () => {
  // The header badge: a button named by its text, the backend and the adapter.
  const badge = (page: Page) => page.getByRole('button', { name: /^(webgpu|webgl|wasm|cpu) · / });

  it('picks wasm, says why in the banner and the Device dialog, and never says "Full speed"', async () => {
    const { page, errors } = await openLab(browser);
    await expect(badge(page).textContent()).resolves.toBe('wasm · no hardware GPU');
    const banner = await page.getByRole('status').filter({ hasText: 'Running on' }).textContent();
    expect(banner).toMatch(
      /^Running on wasm, picked because the WebGPU adapter here is SwiftShader, a software renderer/,
    );
    expect(banner).toContain('47-52 s on webgpu against about 7 s on wasm');
    expect(banner).toContain('?backend=webgpu');
    await badge(page).click();
    const dialog = page.getByRole('dialog', { name: 'Device' });
    await dialog.waitFor();
    expect(await dialog.getByTestId('device-backend').textContent()).toBe('wasm');
    expect(await dialog.getByTestId('device-why').textContent()).toMatch(
      /SwiftShader, a software renderer that runs on the CPU, where wasm is faster/,
    );
    expect(await dialog.getByTestId('device-cost').textContent()).toMatch(/the fastest backend on this machine/);
    expect(await dialog.textContent()).toContain('(software: SwiftShader, runs on the CPU)');
    // The preview server sends COOP/COEP (vite.config.ts): isolated, so wasm may load its threaded
    // build, which it does from 4 logical cores (src/contract/wasmThreads.ts; 2 on CI: single-threaded).
    expect(await page.evaluate(() => window.crossOriginIsolated)).toBe(true);
    const threads = dialog.getByTestId('device-wasm-threads');
    const cores = await page.evaluate(() => navigator.hardwareConcurrency);
    expect(await threads.getAttribute('data-threaded')).toBe(String(cores >= 4));
    expect(await threads.textContent()).toMatch(
      cores >= 4
        ? /^\d+ threads: cross-origin isolated, so the threaded SIMD build runs/
        : /^1 thread: \d logical cores?: the single-threaded SIMD build/,
    );
    expect(await dialog.textContent()).not.toContain('Full speed');
    expect(errors).toEqual([]);
    await page.close();
  });

  it('forces webgpu from the Device dialog (kept across a reload) and calls it slow, not full speed', async () => {
    const { page } = await openLab(browser);
    await badge(page).click();
    const dialog = page.getByRole('dialog', { name: 'Device' });
    await dialog.getByLabel('Backend setting').selectOption('webgpu');
    await page.waitForSelector('[data-testid="device-badge"][data-backend="webgpu"]', { timeout: 60_000 });
    await page.reload();
    await page.waitForSelector('[data-testid="device-badge"][data-backend="webgpu"]', { timeout: 60_000 });
    await expect(badge(page).textContent()).resolves.toBe('webgpu · SwiftShader (software, slow)');
    const banner = await page.getByRole('status').filter({ hasText: 'Running on' }).textContent();
    expect(banner).toMatch(/^Running on webgpu, forced by the backend setting \(webgpu\)\. Slow here/);
    await badge(page).click();
    expect(await dialog.textContent()).not.toContain('Full speed');
    await page.evaluate(() => localStorage.clear());
    await page.close();
  });

  it('forces webgpu with ?backend=webgpu and names a bad ?backend= value with the allowed ones', async () => {
    const forced = await openLab(browser, '?backend=webgpu');
    await expect(badge(forced.page).textContent()).resolves.toBe('webgpu · SwiftShader (software, slow)');
    await forced.page.close();
    const bad = await openLab(browser, '?backend=quantum');
    expect(await bad.page.getByRole('alert').textContent()).toBe(
      "The link's backend=quantum is not a backend (allowed: auto, webgpu, webgl, wasm, cpu): running on the saved setting (auto) instead.",
    );
    await expect(badge(bad.page).textContent()).resolves.toBe('wasm · no hardware GPU');
    await bad.page.close();
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
