// A recipe run live in the browser, driven through the Run setup controls: the form is generated
// from the schema the worker lists, an invalid field is marked and nothing starts, a recipe error
// (a model that does not exist) leaves the worker usable, and `redteam` on the built-in defender
// streams StepReports into the run store (charts and arena) with pause / step / resume / stop
// taking effect at step boundaries.
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { sharedHarnessPage } from './browser';

// The wasm backend: this test is about the controls and the run loop, and a redteam step on the
// tiny defender takes ~0.5 s there, against ~60 s for the first step (shader compiles) and ~25 s
// for each later one on SwiftShader's WebGPU. The WebGPU training path has its own e2e (model.e2e.ts).
const lab = sharedHarnessPage('?backend=wasm');

const runState = (page: Page) => page.getAttribute('[data-testid="run-state"]', 'data-state');
const runStep = async (page: Page) => Number(await page.getAttribute('[data-testid="run-state"]', 'data-step'));

async function waitFor(page: Page, pred: string, timeout = 60_000): Promise<void> {
  await page.waitForFunction(pred, undefined, { timeout, polling: 100 });
}
const stateIs = (s: string) =>
  `document.querySelector('[data-testid="run-state"]')?.getAttribute('data-state') === ${JSON.stringify(s)}`;
const stepAtLeast = (n: number) =>
  `Number(document.querySelector('[data-testid="run-state"]')?.getAttribute('data-step')) >= ${n}`;
const idleAtBoundary = `document.querySelector('[data-testid="run-state"]')?.getAttribute('data-stepping') === 'false'`;

/** Tiny: 2 prompts x G=2, 6-token answers, rank-2 LoRA (early stop is switched off in the test). */
const TINY: Record<string, string> = {
  groupSize: '2',
  prompts: '2',
  promptPool: '8',
  maxNewTokens: '6',
  samples: '2',
  loraRank: '2',
};

async function fill(page: Page, values: Record<string, string>): Promise<void> {
  for (const [k, v] of Object.entries(values)) await page.fill(`[data-testid="field-${k}"]`, v);
}

describe('running a recipe from the controls', () => {
  it('lists the registered recipes and generates the form from the schema', async () => {
    const { page } = lab;
    await page.waitForSelector('[data-testid="recipe-select"] option[value="redteam"]', {
      state: 'attached',
      timeout: 30_000,
    });
    const options = await page
      .locator('[data-testid="recipe-select"] option:not([disabled])')
      .evaluateAll((els) => els.map((e) => (e as HTMLOptionElement).value));
    expect(options).toEqual(expect.arrayContaining(['redteam', 'attacker-sft']));
    await page.selectOption('[data-testid="recipe-select"]', 'redteam');
    await expect(page.inputValue('[data-testid="field-groupSize"]')).resolves.toBe('8');
    await expect(page.textContent('[data-testid="field-row-groupSize"]')).resolves.toMatch(
      /an integer in \[2, 64\].*answers sampled per prompt/s,
    );
    await expect(page.isChecked('[data-testid="field-earlyStop"]')).resolves.toBe(true);
    await expect(page.locator('[data-testid="field-advantage"] option').count()).resolves.toBe(4); // grpo, rloo, reinforce_plus_plus_baseline, remax
    await expect(runState(page)).resolves.toBe('idle');
  });

  it('marks an invalid field and does not start', async () => {
    const { page } = lab;
    await page.fill('[data-testid="field-groupSize"]', '1');
    await expect(page.textContent('[data-testid="field-error-groupSize"]')).resolves.toMatch(
      /groupSize.*an integer in \[2, 64\].*"1"/,
    );
    await expect(page.getAttribute('[data-testid="field-row-groupSize"]', 'data-invalid')).resolves.toBe('true');
    await page.click('[data-testid="run-start"]');
    await page.waitForTimeout(500);
    await expect(runState(page)).resolves.toBe('idle');
    await expect(page.isVisible('[data-testid="field-error-groupSize"]')).resolves.toBe(true);
    // The worker validates too (the same rules): it refuses without starting.
    const status = await page.evaluate(() => window.sparring!.engine.runStatus());
    expect(status.state).toBe('idle');
    await page.fill('[data-testid="field-groupSize"]', '2');
    await expect(page.locator('[data-testid="field-error-groupSize"]').count()).resolves.toBe(0);
  });

  it('reports a recipe error and stays usable', async () => {
    const { page } = lab;
    // A site path passes the field's check (it names a folder) and fails in the worker's load.
    await fill(page, { ...TINY, defender: '/models/no-such-model/' });
    await page.click('[data-testid="run-start"]');
    await waitFor(page, stateIs('error'), 30_000);
    await expect(page.textContent('[data-testid="run-error"]')).resolves.toMatch(/no-such-model/);
    await page.fill('[data-testid="field-defender"]', 'defender');
  });

  it('runs redteam live: reports stream in, pause holds, step adds one, resume continues, stop ends', async () => {
    const { page } = lab;
    const t0 = Date.now();
    const before = (await page.evaluate(() => window.sparring!.engine.runStatus())).numTensors;
    await fill(page, TINY);
    await page.uncheck('[data-testid="field-earlyStop"]');
    await page.fill('[data-testid="run-seed"]', '3');
    await page.click('[data-testid="run-start"]');
    await waitFor(page, stateIs('running'), 10_000);
    await waitFor(page, stepAtLeast(2), 90_000);
    const tTwo = Date.now() - t0;

    // The reports reached the run store: a live run with the steps, charts and arena drawn from it.
    const summary = await page.evaluate(() => window.sparringRuns!.summary());
    const live = summary.runs.find((r) => r.source === 'live');
    expect(live?.reports).toBeGreaterThanOrEqual(2);
    expect(summary.activeRunId).toBe(live?.runId);
    expect(live?.runId).toMatch(/^redteam-3-/);
    await page.waitForSelector('[data-testid="chart-reward"] canvas');
    await page.waitForSelector('[data-testid="sample"]');

    // Pause: after the step in flight, the count holds.
    await page.click('[data-testid="run-pause"]');
    await waitFor(page, `${stateIs('paused')} && ${idleAtBoundary}`, 60_000);
    const held = await runStep(page);
    const paused = await page.evaluate(() => window.sparring!.engine.runStatus());
    expect(paused).toMatchObject({ state: 'paused', step: held, stepping: false });
    await page.waitForTimeout(2500);
    await expect(runStep(page)).resolves.toBe(held);

    // Step: exactly one more, still paused.
    await page.click('[data-testid="run-step"]');
    await waitFor(page, `${stepAtLeast(held + 1)} && ${idleAtBoundary}`, 60_000);
    await page.waitForTimeout(300);
    await expect(runStep(page)).resolves.toBe(held + 1);
    await expect(runState(page)).resolves.toBe('paused');

    // Resume: it goes on.
    await page.click('[data-testid="run-resume"]');
    await waitFor(page, stepAtLeast(held + 2), 60_000);

    // Stop: ends at a step boundary, frees the run's tensors, and the count no longer moves.
    await page.click('[data-testid="run-stop"]');
    await waitFor(page, stateIs('stopped'), 60_000);
    const final = await runStep(page);
    await page.waitForTimeout(1000);
    await expect(runStep(page)).resolves.toBe(final);
    const after = await page.evaluate(() => window.sparring!.engine.runStatus());
    expect(after.state).toBe('stopped');
    // Stop disposed the run (model, adapters, optimiser): nothing is left behind.
    expect(after.numTensors).toBeLessThan(paused.numTensors);
    expect(after.numTensors).toBe(before);
    const reports = (await page.evaluate(() => window.sparringRuns!.summary())).runs.find(
      (r) => r.source === 'live',
    )!.reports;
    expect(reports).toBe(final);
    console.log(`redteam in the browser: 2 steps after ${tTwo} ms, ${final} steps in ${Date.now() - t0} ms`);
  });
});
