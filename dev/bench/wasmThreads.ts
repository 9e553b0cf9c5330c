// tfjs-wasm with threads on vs off, in Chromium, on one build in one run: the guided demo's step
// and a redteam step, each on the harness page served twice from the same folder, once with the
// cross-origin isolation headers (threaded SIMD build) and once by a plain static server without
// them (single-threaded SIMD build). Rounds alternate on / off so load drift hits both.
//   npm run build:harness && npx tsx dev/bench/wasmThreads.ts [--cores N] [--steps N] [--rounds N]
// Threads on: the threaded build's pool. Below 4 logical cores the lab runs the single-threaded
// build even when isolated (src/contract/wasmThreads.ts), so on a 2-core machine pass --cores 4:
// the engine worker then reports 4 logical cores (dev/harness/harness.worker.ts) and runs 2 threads.
// --stock: also threads on with tfjs-wasm's stock kernels instead of ours (src/engine/kernels/wasmGemm.ts),
// a third column in the same rounds.
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { Browser } from 'playwright-core';
import { preview } from 'vite';
import type { HarnessEngine } from '../harness/harnessApi';
import { launchChromium } from '../browser/chromium';
import { serveSite } from '../servers/staticServer';
import { ISOLATION_HEADERS } from '../../src/ui/offline/isolationHeaders';

const { values: args } = parseArgs({
  options: {
    cores: { type: 'string', default: '' },
    steps: { type: 'string', default: '6' },
    rounds: { type: 'string', default: '3' },
    stock: { type: 'boolean', default: false },
  },
});
const STEPS = Number(args.steps);
const ROUNDS = Number(args.rounds);

type Workload = 'guided demo' | 'redteam';
/** Threads on (ours), off (single-threaded build, ours), on with tfjs-wasm's stock kernels (--stock). */
type Mode = 'on' | 'off' | 'stock';

/** ms per step over STEPS steps after two warm-up steps, and the threads wasm reported. */
async function measure(
  browser: Browser,
  origin: string,
  work: Workload,
  stock = false,
): Promise<{ ms: number; threads: string }> {
  const context = await browser.newContext({ serviceWorkers: 'block' });
  try {
    const page = await context.newPage();
    const q = `?backend=wasm${args.cores ? `&cores=${args.cores}` : ''}${work === 'redteam' ? '&recipe=redteam' : ''}`;
    await page.goto(`${origin}dev/harness/index.html${q}`);
    await page.waitForFunction(
      () => document.querySelector('[data-testid="device-badge"]')?.getAttribute('data-backend') === 'wasm',
      undefined,
      { timeout: 120_000 },
    );
    if (stock) await page.evaluate(() => (window.sparring!.engine as HarnessEngine).setWasmKernels(false));
    const status = await page.evaluate(() => window.sparring!.engine.status());
    const t = status.backend.wasmThreads;
    const kernels = status.wasmKernels?.ours ? '' : ', stock kernels';
    const threads = t ? `${t.threads}${t.threaded ? ' (threaded build)' : ''}${kernels}` : '?';
    if (work === 'guided demo') {
      if ((await page.locator('[data-testid="guided-demo"]').count()) === 0)
        await page.click('[data-testid="teaching-toggle"]');
      await page.click('[data-testid="guided-demo"]:not([disabled])', { timeout: 60_000 });
    } else {
      await page.fill('[data-testid="run-max-steps"]', '');
      await page.click('[data-testid="run-start"]');
    }
    const at = async (k: number) => {
      await page.waitForFunction(
        (n) => Number(document.querySelector('[data-testid="run-state"]')?.getAttribute('data-step')) >= n,
        k,
        { timeout: 600_000, polling: 20 },
      );
      return performance.now();
    };
    const t0 = await at(2);
    const t1 = await at(2 + STEPS);
    return { ms: (t1 - t0) / STEPS, threads };
  } finally {
    await context.close();
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  const dist = process.env.SPARRING_DIST ?? 'dist';
  if (!existsSync(`${dist}/dev/harness/index.html`))
    throw new Error(`${dist}/dev/harness/index.html is missing: run \`npm run build:harness\` first`);
  const on = await preview({
    build: { outDir: dist },
    preview: { host: '127.0.0.1', port: 4190, strictPort: false, headers: ISOLATION_HEADERS },
    logLevel: 'warn',
  });
  const off = await serveSite(dist, '/');
  const onUrl = on.resolvedUrls!.local[0].replace('127.0.0.1', 'localhost');
  const browser = await launchChromium();
  const rows: string[] = [];
  try {
    for (const work of ['guided demo', 'redteam'] as Workload[]) {
      const ms: Record<Mode, number[]> = { on: [], off: [], stock: [] };
      const threads: Record<Mode, string> = { on: '', off: '', stock: '' };
      const modes: Mode[] = args.stock ? ['on', 'off', 'stock'] : ['on', 'off'];
      for (let r = 0; r < ROUNDS; r++)
        for (const mode of r % 2 === 0 ? modes : [...modes].reverse()) {
          const m = await measure(browser, mode === 'off' ? off.url : onUrl, work, mode === 'stock');
          ms[mode].push(m.ms);
          threads[mode] = m.threads;
          console.error(`${work}, threads ${mode} (${m.threads}): ${m.ms.toFixed(0)} ms/step`);
        }
      const f = (xs: number[]) => xs.map((x) => x.toFixed(0)).join(', ');
      const stockCell = args.stock ? ` ${threads.stock}: ${f(ms.stock)} |` : '';
      rows.push(
        `| ${work} | ${threads.on}: ${f(ms.on)} | ${threads.off}: ${f(ms.off)} | ${(median(ms.off) / median(ms.on)).toFixed(2)}x |${stockCell}`,
      );
    }
  } finally {
    await browser.close();
    await on.close();
    await off.close();
  }
  console.log(`wasm threads on vs off, ${STEPS} steps after 2 warm-up steps, ${ROUNDS} rounds each, ms/step`);
  const stockHead = args.stock ? ' threads on, stock kernels: ms/step per round |' : '';
  console.log(
    `| workload | threads on: ms/step per round | threads off: ms/step per round | off / on (medians) |${stockHead}`,
  );
  console.log(`| --- | --- | --- | --- |${args.stock ? ' --- |' : ''}`);
  for (const r of rows) console.log(r);
}

main().catch((e: Error) => {
  console.error(e.message);
  process.exit(1);
});
