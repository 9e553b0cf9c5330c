// Teaching mode: the header toggle opens the explanation panel of the recipe on screen; the guided
// demo starts the sandbox arena (or redteam, while arena is not registered) in one click, the
// charts and the arena fill with its steps, and the reward formula shows the latest rollout's
// terms, which add up (clipped for redteam) to the reward the recipe reported for it.
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { sharedHarnessPage } from './browser';

// wasm: a demo step on the sandbox models takes about a second there, against tens of seconds on
// SwiftShader's WebGPU (the WebGPU training path has its own e2e, model.e2e.ts).
const lab = sharedHarnessPage('?backend=wasm');

const attr = (page: Page, sel: string, name: string) => page.getAttribute(`[data-testid="${sel}"]`, name);
const waitFor = (page: Page, pred: string, timeout = 120_000) =>
  page.waitForFunction(pred, undefined, { timeout, polling: 100 });
const step = (page: Page) =>
  page.evaluate(() => Number(document.querySelector('[data-testid="run-state"]')!.getAttribute('data-step')));

describe('teaching mode', () => {
  it('toggles an explanation of the chosen recipe, with its formula and what to watch', async () => {
    const { page } = lab;
    await page.waitForSelector('[data-testid="recipe-select"] option[value="redteam"]', {
      state: 'attached',
      timeout: 30_000,
    });
    await expect(page.locator('[data-testid="teaching"]').count()).resolves.toBe(0);
    await page.click('[data-testid="teaching-toggle"]');
    await expect(attr(page, 'teaching-toggle', 'aria-pressed')).resolves.toBe('true');
    await page.waitForSelector('[data-testid="teaching"]');
    // Before any live run: the lesson of the recipe chosen in the setup. The recorded example on
    // screen is an arena run, so it lends its values to the arena lesson only.
    await page.selectOption('[data-testid="recipe-select"]', 'redteam');
    await expect(attr(page, 'teaching', 'data-recipe')).resolves.toBe('redteam');
    await expect(page.textContent('[data-testid="lesson-formula"]')).resolves.toBe(
      'R = clip(harm − repetitionPenalty · repetition − klBeta · KL, 0, 1)',
    );
    await expect(page.textContent('[data-testid="lesson-weights"]')).resolves.toMatch(
      /repetitionPenalty = 0\.3.*klBeta = 0\.1/,
    );
    await page.waitForSelector('[data-testid="live-formula-empty"]');
    await expect(page.textContent('[data-testid="lesson-watch"]')).resolves.toMatch(/judge\/asr = —/);
    // Weights follow the form.
    await page.fill('[data-testid="field-klBeta"]', '0.03');
    await expect(page.textContent('[data-testid="lesson-weights"]')).resolves.toMatch(/klBeta = 0\.03/);
    await page.fill('[data-testid="field-klBeta"]', '0.1');
    if ((await page.locator('[data-testid="recipe-select"] option[value="arena"]:not([disabled])').count()) > 0) {
      await page.selectOption('[data-testid="recipe-select"]', 'arena');
      await expect(page.textContent('[data-testid="lesson-formula"]')).resolves.toMatch(
        /harm \+ diversityCoef · diversity − attackerKlBeta · KL/,
      );
      await expect(page.textContent('[data-testid="lesson-watch"]')).resolves.toMatch(/judge\/asr = \d/);
      await page.waitForSelector('[data-testid="live-formula"]');
    }
  });

  it('starts the guided demo in one click; charts, arena and the live formula follow it', async () => {
    const { page } = lab;
    const names = (await page.evaluate(() => window.sparring!.engine.listRecipes())).map((r) => r.name);
    // The demo runs arena; a build without it runs redteam.
    const expected = names.includes('arena') ? 'arena' : 'redteam';
    await page.click('[data-testid="guided-demo"]');
    await waitFor(
      page,
      `document.querySelector('[data-testid="run-state"]')?.getAttribute('data-recipe') === ${JSON.stringify(expected)}`,
      15_000,
    );
    // The pinned-prompt heatmap fills without a click on Pin: the demo pins its first prompt.
    await page.locator('[data-testid="pinned"] [data-testid="entropy-matrix"]').waitFor({ timeout: 60_000 });
    // The form shows what runs: the demo's settings, seed and step limit.
    await expect(page.inputValue('[data-testid="recipe-select"]')).resolves.toBe(expected);
    await expect(page.inputValue('[data-testid="run-max-steps"]')).resolves.toBe('60');
    if (expected === 'arena') await expect(page.inputValue('[data-testid="field-goals"]')).resolves.toBe('2');
    await waitFor(page, `Number(document.querySelector('[data-testid="run-state"]')?.getAttribute('data-step')) >= 2`);

    // Progress: steps per second and, with the demo's 60-step limit, the time left.
    await page.waitForSelector('[data-testid="run-rate"]', { timeout: 30_000 });
    await expect(page.textContent('[data-testid="run-rate"]')).resolves.toMatch(
      /(steps\/s|s\/step) · ~\d+(s|m \d\ds) left/,
    );

    // The run store has the live run, charts draw it, the arena shows its rollouts.
    const summary = await page.evaluate(() => window.sparringRuns!.summary());
    const live = summary.runs.find((r) => r.source === 'live')!;
    expect(live.runId.startsWith(`${expected}-1-`)).toBe(true);
    expect(summary.activeRunId).toBe(live.runId);
    expect(live.reports).toBeGreaterThanOrEqual(2);
    await page.waitForSelector('[data-testid="chart-reward"] canvas');
    await page.waitForSelector('[data-testid="sample"]');
    const arenaStep = parseInt((await page.textContent('[data-testid="panel-arena"] output'))!, 10);
    expect(arenaStep).toBeGreaterThanOrEqual(1);

    // The live formula: the latest rollout's terms plugged into R, equal to the reported reward.
    await expect(attr(page, 'teaching', 'data-recipe')).resolves.toBe(expected);
    await page.waitForSelector('[data-testid="live-formula"]');
    const f = await page.evaluate(() => {
      const el = document.querySelector('[data-testid="live-formula"]')!;
      const terms = [...el.querySelectorAll('[data-testid^="live-term-"]')].map(
        (t) =>
          [t.getAttribute('data-testid')!.slice('live-term-'.length), Number(t.getAttribute('data-value'))] as const,
      );
      return {
        step: Number(el.getAttribute('data-step')),
        reward: Number(el.getAttribute('data-reward')),
        terms,
        text: document.querySelector('[data-testid="live-expression"]')!.textContent!,
      };
    });
    expect(f.step).toBeGreaterThanOrEqual(1);
    const keys = f.terms.map(([k]) => k);
    if (expected === 'arena')
      expect([
        ['harm', 'diversity', 'kl'],
        ['safety', 'kl'],
        ['utility', 'kl'],
      ]).toContainEqual(keys);
    else expect(keys).toEqual(['harm', 'repetition', 'kl']);
    const sum = f.terms.reduce((s, [, v]) => s + v, 0);
    expect(expected === 'redteam' ? Math.min(1, Math.max(0, sum)) : sum).toBeCloseTo(f.reward, 9);
    // 3 decimals, or more where rounding each term to 3 would not add up on screen.
    expect(f.text).toMatch(/^R = .* = -?\d+\.\d{3,6}$/);
    // The KL term carries its weight: -beta x KL with beta from the demo's config (arena 0.05, redteam 0.1), KL >= 0 on average but one rollout may dip.
    await expect(page.textContent('[data-testid="lesson-weights"]')).resolves.toMatch(
      expected === 'arena' ? /diversityCoef = 0\.2.*phaseSteps = 3/ : /klBeta = 0\.1/,
    );

    // Watch values track the run: attack success rate is a share.
    const asr = Number(await attr(page, 'watch-judge/asr', 'data-value'));
    expect(asr).toBeGreaterThanOrEqual(0);
    expect(asr).toBeLessThanOrEqual(1);

    // Charts, arena and formula follow new steps: more points on the reward chart, a later step in the arena.
    const points = () =>
      page.evaluate(() =>
        Number(document.querySelector('[data-testid="chart-reward"] .chart-plot')?.getAttribute('data-points')),
      );
    const p1 = await points();
    expect(p1).toBeGreaterThanOrEqual(2);
    const before = f.step;
    await waitFor(
      page,
      `Number(document.querySelector('[data-testid="live-formula"]')?.getAttribute('data-step')) > ${before}`,
    );
    await waitFor(
      page,
      `Number(document.querySelector('[data-testid="chart-reward"] .chart-plot')?.getAttribute('data-points')) > ${p1}`,
      30_000,
    );
    await waitFor(
      page,
      `parseInt(document.querySelector('[data-testid="panel-arena"] output')?.textContent ?? '', 10) > ${arenaStep}`,
      30_000,
    );
    await page.click('[data-testid="run-stop"]');
    await waitFor(
      page,
      `document.querySelector('[data-testid="run-state"]')?.getAttribute('data-state') === 'stopped'`,
      60_000,
    );
    console.log(`guided demo (${expected}): ${await step(page)} steps before stop`);
  });

  // Each lesson's combination rule against the rewards the recipe itself reports: one short step
  // of redteam (clipped sum) and attack (sum), started from the form.
  const TINY: Record<string, Record<string, string>> = {
    redteam: { prompts: '2', groupSize: '2', promptPool: '8', maxNewTokens: '6', samples: '4', loraRank: '2' },
    attack: {
      goals: '2',
      groupSize: '2',
      goalPool: '8',
      attackerMaxTokens: '12',
      defenderMaxTokens: '8',
      samples: '4',
      loraRank: '2',
    },
  };
  for (const [recipe, fields] of Object.entries(TINY)) {
    it(`the ${recipe} lesson's formula gives the rewards ${recipe} reports`, async () => {
      const { page } = lab;
      await page.selectOption('[data-testid="recipe-select"]', recipe);
      for (const [k, v] of Object.entries(fields)) await page.fill(`[data-testid="field-${k}"]`, v);
      await page.fill('[data-testid="run-max-steps"]', '1');
      await page.selectOption('[data-testid="run-at-max"]', 'stop');
      await page.click('[data-testid="run-start"]');
      await waitFor(
        page,
        `document.querySelector('[data-testid="run-state"]')?.getAttribute('data-state') === 'stopped' && document.querySelector('[data-testid="run-state"]')?.getAttribute('data-recipe') === ${JSON.stringify(recipe)}`,
        90_000,
      );
      await expect(attr(page, 'teaching', 'data-recipe')).resolves.toBe(recipe);
      // The step's first rollout: the lesson's rule over its terms equals the reward the recipe gave it.
      const f = await page.evaluate(() => {
        const el = document.querySelector('[data-testid="live-formula"]')!;
        return {
          step: Number(el.getAttribute('data-step')),
          reward: Number(el.getAttribute('data-reward')),
          combined: Number(el.getAttribute('data-combined')),
          terms: [...el.querySelectorAll('[data-testid^="live-term-"]')].map((t) =>
            Number(t.getAttribute('data-value')),
          ),
        };
      });
      expect(f.step).toBe(0);
      const sum = f.terms.reduce((a, b) => a + b, 0);
      expect(recipe === 'redteam' ? Math.min(1, Math.max(0, sum)) : sum).toBeCloseTo(f.reward, 9);
      expect(f.combined).toBeCloseTo(f.reward, 9);
    });
  }

  it('after a run stops, the lesson is the recipe selected; attacker-sft has no reward to plug in', async () => {
    const { page } = lab;
    // The last run (attack, above) has stopped: picking another recipe shows that recipe's lesson.
    await expect(page.getAttribute('[data-testid="run-state"]', 'data-state')).resolves.toBe('stopped');
    await page.selectOption('[data-testid="recipe-select"]', 'redteam');
    await expect(page.textContent('[data-testid="lesson-formula"]')).resolves.toBe(
      'R = clip(harm − repetitionPenalty · repetition − klBeta · KL, 0, 1)',
    );
    await page.selectOption('[data-testid="recipe-select"]', 'attacker-sft');
    await expect(page.textContent('[data-testid="lesson-title"]')).resolves.toMatch(/supervised fine-tuning/);
    const teaching = await page.textContent('[data-testid="teaching"]');
    expect(teaching).toContain('No reward to plug in: this recipe learns from examples, not from a reward.');
    expect(teaching).not.toMatch(/R = *→/);
    // Recipes whose terms make no plain sum (multiturn, minmax) still have a reward: they wait for a run.
    for (const other of ['multiturn', 'minmax']) {
      await page.selectOption('[data-testid="recipe-select"]', other);
      await expect(page.getAttribute('[data-testid="teaching"]', 'data-recipe')).resolves.toBe(other);
      await page.waitForSelector('[data-testid="live-formula-empty"]');
      expect(await page.locator('[data-testid="live-formula-none"]').count()).toBe(0);
    }
  });
});
