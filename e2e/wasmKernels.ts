// Sparring's own wasm kernels in the page (src/engine/kernels/wasmGemm.ts): which ones the worker
// reports, and one learning step with them against the same step on tfjs-wasm's stock kernels.
import type { Page } from 'playwright-core';
import { expect, inject } from 'vitest';
import type { HarnessEngine } from '../dev/harness/harnessApi';
import type { WasmKernelStatus } from '../src/contract/workerApi';

const engine = (page: Page) => page.evaluate(() => (window.sparring!.engine as HarnessEngine).status());

/** The worker's report on a wasm page: our kernels serve, on a `memory` memory. */
export async function expectOurKernels(page: Page, memory: 'plain' | 'shared'): Promise<WasmKernelStatus> {
  const k = (await engine(page)).wasmKernels;
  expect(k).toMatchObject({ ours: true, memory });
  return k!;
}

/**
 * One learnStep (dev/bench/learnBench.ts learnCheck: a fixed batch from seeded adapters, an update
 * linear in the gradient) on the tiny fixture with our kernels, then with tfjs-wasm's stock ones:
 * ours run the first (their product count grows) and not the second, and the loss, grad norm and
 * every adapter change agree within 1e-4.
 */
export async function expectSameStepWithoutOurKernels(page: Page, memory: 'plain' | 'shared'): Promise<void> {
  const name = 'wasm-kernels-ab';
  await page.evaluate(
    ([n, u]) => (window.sparring!.engine as HarnessEngine).loadModel(n, { kind: 'url', baseUrl: u }),
    [name, `${inject('fixturesURL')}tiny-llama-f32/`] as const,
  );
  const c = { prompts: 2, groupSize: 2, promptLen: 6, newTokens: 4, rank: 4 };
  const step = (ours: boolean) =>
    page.evaluate(
      async ([n, on, cs]) => {
        const e = window.sparring!.engine as HarnessEngine;
        await e.setWasmKernels(on);
        const before = (await e.status()).wasmKernels!.products;
        const r = await e.learnCheck(n, 'tfjs', cs);
        return { r, products: (await e.status()).wasmKernels!.products - before };
      },
      [name, ours, c] as const,
    );
  const ours = await step(true);
  const stock = await step(false);
  expect((await page.evaluate(() => (window.sparring!.engine as HarnessEngine).setWasmKernels(true)))?.memory).toBe(
    memory,
  );
  await page.evaluate((n) => (window.sparring!.engine as HarnessEngine).unloadModel(n), name);
  expect(ours.products).toBeGreaterThan(0);
  expect(stock.products).toBe(0);
  const relErr = (got: number, want: number) => Math.abs(got - want) / Math.max(Math.abs(want), 1e-12);
  for (const m of ['loss/total', 'grad/norm'])
    expect(relErr(ours.r.metrics[m], stock.r.metrics[m]), m).toBeLessThan(1e-4);
  expect(ours.r.deltas.length).toBe(stock.r.deltas.length);
  const scale = Math.max(...stock.r.deltas.map(Math.abs));
  expect(scale).toBeGreaterThan(0);
  const worst = Math.max(...ours.r.deltas.map((d, i) => Math.abs(d - stock.r.deltas[i])));
  console.log(
    `wasm kernels (${memory} memory), ours vs stock: loss ${ours.r.metrics['loss/total']} vs ${stock.r.metrics['loss/total']}, worst adapter change ${(worst / scale).toExponential(1)} of the largest`,
  );
  expect(worst / scale).toBeLessThan(1e-4);
}
