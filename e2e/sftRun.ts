// The cheapest attacker-sft run and the run panel's state as the browser tests read it, shared by
// the tests of a run's life (keepWork, restoreHistory, watchdog, export).
import type { Page } from 'playwright-core';
import { CHEAPEST_SFT } from './browser';

/** attacker-sft (a loss that moves the adapter from step 1) at its cheapest (browser.ts). */
export const SFT = CHEAPEST_SFT;

export async function waitFor(page: Page, pred: string, timeout = 60_000): Promise<void> {
  await page.waitForFunction(pred, undefined, { timeout, polling: 100 });
}

/** Page predicates on the run panel's state and step. */
export const stateIs = (s: string) =>
  `document.querySelector('[data-testid="run-state"]')?.getAttribute('data-state') === '${s}'`;
export const stepAtLeast = (n: number) =>
  `Number(document.querySelector('[data-testid="run-state"]')?.getAttribute('data-step')) >= ${n}`;

/** Fills attacker-sft's cheapest setup (seed, max steps and "then" as given) in Run setup. */
export async function fillSft(
  page: Page,
  o: { seed: string; maxSteps?: string; then?: 'pause' | 'stop' },
): Promise<void> {
  await page.waitForSelector('[data-testid="recipe-select"] option[value="attacker-sft"]', {
    state: 'attached',
    timeout: 30_000,
  });
  await page.selectOption('[data-testid="recipe-select"]', 'attacker-sft');
  for (const [k, v] of Object.entries(SFT)) await page.fill(`[data-testid="field-${k}"]`, v);
  await page.getByTestId('run-seed').fill(o.seed);
  await page.getByTestId('run-max-steps').fill(o.maxSteps ?? '');
  await page.selectOption('[data-testid="run-at-max"]', o.then ?? 'pause');
}

/**
 * Presses Start and returns the new run's id once it is in one of `states`. The panel shows the
 * previous run ("stopped") until the new one starts, so it waits for a new id: a slow start read
 * the old run's id, and the test then read another run's checkpoints.
 */
export async function startNewRun(
  page: Page,
  states: readonly string[] = ['running', 'paused', 'stopped'],
): Promise<string> {
  const runState = page.getByTestId('run-state');
  const before = (await runState.getAttribute('data-run')) ?? '';
  await page.getByRole('button', { name: 'Start', exact: true }).click();
  const isNew = `(document.querySelector('[data-testid="run-state"]')?.getAttribute('data-run') ?? '') !== ${JSON.stringify(before)}`;
  await waitFor(page, `${isNew} && (${states.map(stateIs).join(' || ')})`, 30_000);
  return (await runState.getAttribute('data-run'))!;
}
