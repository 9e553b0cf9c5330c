// The threaded wasm build in the production bundle: where the worker reports 4 logical cores (the
// harness's ?cores=4, since CI has 2), the isolated page runs tfjs-wasm's threaded SIMD build on 2
// threads, its pthread workers start from the minified bundle (dev/build/wasmThreadGuard.ts), our
// own kernels run on its shared memory (gemm-shared.wasm) with the stock kernels' numbers, and a
// run trains on them. On 2 cores the lab runs the single-threaded build (site.e2e.ts), with our
// kernels on its plain memory (the same A/B here, on a second harness page).
import { describe, expect, it } from 'vitest';
import { sharedHarnessPage } from './browser';
import { fillSft, stateIs, stepAtLeast, waitFor } from './sftRun';
import { expectOurKernels, expectSameStepWithoutOurKernels } from './wasmKernels';

const lab = sharedHarnessPage('?backend=wasm&cores=4');

describe('wasm threads at 4 logical cores', () => {
  it('runs the threaded build on 2 threads with our kernels, and a run trains on them', async () => {
    const { page } = lab;
    expect(await page.evaluate(() => window.crossOriginIsolated)).toBe(true);
    await page.getByRole('button', { name: /^wasm · / }).click();
    const cell = page.getByRole('dialog', { name: 'Device' }).getByTestId('device-wasm-threads');
    await expect.poll(() => cell.getAttribute('data-threads'), { timeout: 60_000 }).toBe('2');
    expect(await cell.getAttribute('data-threaded')).toBe('true');
    expect(await cell.textContent()).toContain(
      '2 threads: cross-origin isolated, so the threaded SIMD build runs on 2 of the 4',
    );
    const kernels = page.getByRole('dialog', { name: 'Device' }).getByTestId('device-wasm-kernels');
    expect(await kernels.getAttribute('data-memory')).toBe('shared');
    expect(await kernels.textContent()).toContain("tfjs-wasm + Sparring's SIMD kernels");
    await page.getByRole('dialog', { name: 'Device' }).getByRole('button', { name: 'Close' }).click();
    await expectSameStepWithoutOurKernels(page, 'shared');
    const before = (await expectOurKernels(page, 'shared')).products;
    await fillSft(page, { seed: '3' });
    await page.getByRole('button', { name: 'Start', exact: true }).click();
    await waitFor(page, `${stateIs('running')} && ${stepAtLeast(1)}`, 120_000);
    expect((await expectOurKernels(page, 'shared')).products).toBeGreaterThan(before);
  });
});

describe('our kernels on the single-threaded build (2 logical cores)', () => {
  const plain = sharedHarnessPage('?backend=wasm');
  it('serve on its memory, and a learning step matches the stock kernels', async () => {
    await expectOurKernels(plain.page, 'plain');
    await expectSameStepWithoutOurKernels(plain.page, 'plain');
  });
});
