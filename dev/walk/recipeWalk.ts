// A walk through the nine recipes in Chromium, from the user's side (issue 41): each recipe opened
// in a fresh context of the built lab (served with the isolation headers, on wasm), Max steps N then
// stop, teaching mode on; then the status, the arena's filters and cards, the charts' legends, the
// lesson and the runs list are printed, and a screenshot is written per recipe.
//   npm run build:harness && npx tsx dev/walk/recipeWalk.ts [--steps N] [--only a,b] [--out dir]
import { mkdirSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { preview } from 'vite';
import { launchChromium } from '../browser/chromium';
import { ISOLATION_HEADERS } from '../../src/ui/offline/isolationHeaders';
import { RECIPE_WORLDS } from '../../src/recipes/vocabulary';

const { values: args } = parseArgs({
  options: {
    steps: { type: 'string', default: '1' },
    only: { type: 'string', default: '' },
    out: { type: 'string', default: 'walk-out' },
  },
});

async function main(): Promise<void> {
  mkdirSync(args.out!, { recursive: true });
  const server = await preview({
    build: { outDir: process.env.SPARRING_DIST ?? 'dist' },
    preview: { host: '127.0.0.1', port: 4191, strictPort: false, headers: ISOLATION_HEADERS },
    logLevel: 'warn',
  });
  const url = server.resolvedUrls!.local[0].replace('127.0.0.1', 'localhost');
  const browser = await launchChromium();
  const recipes = args.only ? args.only.split(',') : Object.keys(RECIPE_WORLDS);
  const all: Record<string, unknown> = {};
  try {
    for (const recipe of recipes) {
      const t0 = Date.now();
      const context = await browser.newContext({ viewport: { width: 1500, height: 1800 } });
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(`${url}?backend=wasm`);
      await page.waitForFunction(
        `document.querySelector('[data-testid="device-badge"]')?.getAttribute('data-backend') === 'wasm'`,
        undefined,
        { timeout: 120_000 },
      );
      await page.waitForSelector(`[data-testid="recipe-select"] option[value="${recipe}"]`, { state: 'attached' });
      await page.selectOption('[data-testid="recipe-select"]', recipe);
      if ((await page.locator('[data-testid="teaching"]').count()) === 0)
        await page.click('[data-testid="teaching-toggle"]');
      await page.getByTestId('run-max-steps').fill(args.steps!);
      await page.selectOption('[data-testid="run-at-max"]', 'stop');
      await page.getByRole('button', { name: 'Start', exact: true }).click();
      let outcome = 'stopped';
      try {
        await page.waitForFunction(
          `['stopped', 'error'].includes(document.querySelector('[data-testid="run-state"]')?.getAttribute('data-state') ?? '')`,
          undefined,
          { timeout: 600_000, polling: 500 },
        );
      } catch {
        outcome = 'timed out';
      }
      await page.waitForTimeout(1500);
      // A string, not a function: tsx names inner arrows with a helper the page does not have.
      const read = (await page.evaluate(`(() => {
        const t = (sel) => [...document.querySelectorAll(sel)].map((e) => e.innerText.trim());
        return {
          status: t('[data-testid="run-state"]'),
          filters: t('[data-testid="panel-arena"] [role="radio"]'),
          cards: t('[data-testid="panel-arena"] [data-testid="sample"]').slice(0, 3),
          arenaOther: t('[data-testid="panel-arena"] p, [data-testid="panel-arena"] .notice'),
          legends: t('[data-testid="panel-charts"] .chart-legend'),
          chartTitles: t('[data-testid="panel-charts"] .chart-title'),
          chartEmpty: t('[data-testid="panel-charts"] .chart-empty'),
          lesson: t('[data-testid="teaching"]'),
          runs: t('[data-testid="run-entry"]'),
          checkpoints: t('[data-testid="panel-checkpoints"] [data-testid="checkpoint-run"]'),
          exportPanel: t('[data-testid="panel-export"]'),
        };
      })()`)) as Record<string, string[]>;
      await page.screenshot({ path: `${args.out}/${recipe}.png`, fullPage: true });
      all[recipe] = { outcome, seconds: Math.round((Date.now() - t0) / 1000), errors, ...read };
      console.error(`${recipe}: ${outcome} in ${Math.round((Date.now() - t0) / 1000)} s`);
      writeFileSync(`${args.out}/walk.json`, JSON.stringify(all, null, 2));
      await context.close();
    }
  } finally {
    await browser.close();
    await server.close();
  }
}

main().catch((e: Error) => {
  console.error(e.message);
  process.exit(1);
});
