// Screenshots of the lab's main views for the README, taken from a real run: serves a production
// build (default dist/, or the folder given), opens it in Debian's Chromium on the wasm backend,
// starts the guided demo (sandbox arena) with teaching mode on, lets it run a few steps, pauses,
// and writes docs/screenshots/{setup,arena,charts,heatmap,teaching}.png; then stops the run (Stop
// saves its last state) and writes checkpoints.png.
//
//   npm run build && npx tsx dev/browser/screenshots.ts [dist] [steps]
import { existsSync, mkdirSync } from 'node:fs';
import { preview } from 'vite';
import { launchChromium } from './chromium';

const OUT = 'docs/screenshots';

async function main(): Promise<void> {
  const dist = process.argv[2] ?? 'dist';
  const steps = Number(process.argv[3] ?? 24);
  if (!existsSync(`${dist}/index.html`)) throw new Error(`${dist}/index.html is missing: run \`npm run build\` first`);
  if (!Number.isInteger(steps) || steps < 1)
    throw new Error(`steps must be a positive integer, got ${process.argv[3]}`);
  mkdirSync(OUT, { recursive: true });
  const server = await preview({
    build: { outDir: dist },
    preview: { host: '127.0.0.1', port: 4183, strictPort: false },
    logLevel: 'warn',
  });
  const url = server.resolvedUrls?.local[0]?.replace('127.0.0.1', 'localhost');
  if (!url) throw new Error('vite preview did not report a local URL');
  const browser = await launchChromium();
  try {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 }, deviceScaleFactor: 1 });
    await page.goto(`${url}?backend=wasm`);
    await page.waitForSelector('[data-testid="guided-demo"], [data-testid="teaching-toggle"]', { timeout: 90_000 });
    if ((await page.getAttribute('[data-testid="teaching-toggle"]', 'aria-pressed')) !== 'true')
      await page.click('[data-testid="teaching-toggle"]');
    await page.waitForSelector('[data-testid="guided-demo"]:not([disabled])', { timeout: 90_000 });
    await page.click('[data-testid="guided-demo"]');
    const atStep = (n: number) =>
      page.waitForFunction(
        (k) => Number(document.querySelector('[data-testid="run-state"]')?.getAttribute('data-step')) >= k,
        n,
        { timeout: 300_000, polling: 200 },
      );
    // The demo pins its first rollout's prompt, which comes back every few steps (its goal pool is
    // small), so the entropy matrix fills with its history.
    await atStep(steps);
    await page.waitForSelector('[data-testid="pinned"] [data-testid="entropy-matrix"]', { timeout: 60_000 });
    await page.click('[data-testid="run-pause"]');
    await page.waitForFunction(
      () => document.querySelector('[data-testid="run-state"]')?.getAttribute('data-stepping') === 'false',
      undefined,
      { timeout: 120_000 },
    );
    await page.locator('[data-testid="panel-teaching"]').screenshot({ path: `${OUT}/teaching.png` });
    await page.locator('[data-testid="panel-setup"]').screenshot({ path: `${OUT}/setup.png` });
    await page.locator('[data-testid="panel-charts"]').screenshot({ path: `${OUT}/charts.png` });
    await page.locator('[data-testid="panel-arena"]').screenshot({ path: `${OUT}/arena.png` });
    const matrix = page.locator('[data-testid="entropy-matrix"]');
    const box = await matrix.boundingBox();
    if (box) await page.mouse.move(box.x + box.width * 0.15, box.y + box.height * 0.5);
    await page.locator('[data-testid="pinned"]').screenshot({ path: `${OUT}/heatmap.png` });
    await page.click('[data-testid="run-stop"]');
    await page.waitForFunction(
      () => document.querySelector('[data-testid="run-state"]')?.getAttribute('data-state') === 'stopped',
      undefined,
      { timeout: 120_000 },
    );
    await page.waitForSelector('[data-testid="checkpoint-row"]');
    await page.locator('[data-testid="panel-checkpoints"]').screenshot({ path: `${OUT}/checkpoints.png` });
    console.log(`wrote ${OUT}/{teaching,setup,charts,arena,heatmap,checkpoints}.png after ${steps} steps`);
  } finally {
    await browser.close();
    await server.close();
  }
}

main().catch((e: Error) => {
  console.error(e.message);
  process.exit(1);
});
