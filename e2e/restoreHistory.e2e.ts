// Restore keeps history (issue 40): Stop at step 6, Restore the step-2 autosave. It used to cut the
// run's log after step 1 at once (steps 2-5 gone while the checkpoints at 3-6 stayed), a reload then
// offered the run at step 6, and Resume left a hole in the log, the charts and the JSONL. Now the
// restore is a branch: a new run id whose log starts with the parent's steps 0-1, the parent's log
// keeps all six steps, and a reload offers the branch at its own newest checkpoint.
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { sharedHarnessPage } from './browser';
import { fillSft, stateIs, stepAtLeast, waitFor } from './sftRun';

// The harness page: the lab itself, with the run store's handle (window.sparringRuns) for the charts.
const lab = sharedHarnessPage('?backend=wasm');

const runState = (page: Page) => page.getByTestId('run-state');
const button = (page: Page, name: string) => page.getByRole('button', { name, exact: true });

/** The steps of a run's log in IndexedDB, in stored order, and its record. */
const logOf = (page: Page, id: string) =>
  page.evaluate(async (runId) => {
    const open = indexedDB.open('sparring-runs');
    const db = await new Promise<IDBDatabase>((res, rej) => {
      open.onsuccess = () => res(open.result);
      open.onerror = () => rej(open.error);
    });
    const store = db.transaction('kv', 'readonly').objectStore('kv');
    const get = <T>(req: IDBRequest) => new Promise<T>((res) => (req.onsuccess = () => res(req.result as T)));
    const batches = await get<{ reports: { step: number; runId: string }[] }[]>(
      store.getAll(IDBKeyRange.bound(`l/${runId}/`, `l/${runId}/\uffff`)),
    );
    const record = await get<{ status: string; branchOf?: { runId: string; step: number } } | undefined>(
      store.get(`r/${runId}`),
    );
    db.close();
    const reports = batches.flatMap((b) => b.reports);
    return { steps: reports.map((r) => r.step), ids: [...new Set(reports.map((r) => r.runId))], record };
  }, id);

const seq = (n: number) => Array.from({ length: n }, (_, i) => i);

async function reloadLab(page: Page): Promise<void> {
  await page.reload();
  await page.waitForFunction(
    () => document.querySelector('[data-testid="device-badge"]')?.getAttribute('data-backend') !== '',
    undefined,
    { timeout: 90_000 },
  );
}

describe('Restore keeps history', () => {
  it('Stop at 6, Restore step 2, Resume, reload: both logs whole, the branch offered at its step', async () => {
    const { page } = lab;
    await page.getByTestId('autosave-every').fill('1');
    await fillSft(page, { seed: '3', maxSteps: '6', then: 'stop' });
    await button(page, 'Start').click();
    await waitFor(page, `${stateIs('stopped')} && ${stepAtLeast(6)}`, 120_000);
    const parent = (await runState(page).getAttribute('data-run'))!;
    expect((await logOf(page, parent)).steps).toEqual(seq(6));

    const row = page.locator(`[data-testid="checkpoint-row"][data-run="${parent}"][data-step="2"]`).first();
    await row.waitFor({ timeout: 30_000 });
    await row.getByTestId('checkpoint-restore').click();
    await waitFor(
      page,
      `${stateIs('paused')} && document.querySelector('[data-testid="run-state"]')?.getAttribute('data-step') === '2'`,
    );
    const branch = (await runState(page).getAttribute('data-run'))!;
    expect(branch).not.toBe(parent);
    // The parent's log is whole: nothing was cut at the restore.
    expect((await logOf(page, parent)).steps).toEqual(seq(6));

    await page.getByTestId('run-max-steps').fill('');
    await button(page, 'Resume').click();
    await waitFor(page, `${stateIs('running')} && ${stepAtLeast(4)}`, 120_000);
    await reloadLab(page);
    await waitFor(page, stateIs('paused'), 30_000);
    // The reload offers the branch (the run the user restored), at its own newest checkpoint.
    await expect(runState(page).getAttribute('data-run')).resolves.toBe(branch);
    const k = Number(await runState(page).getAttribute('data-step'));
    expect(k).toBeGreaterThanOrEqual(3);
    await button(page, 'Resume').click();
    await waitFor(page, `${stateIs('running')} && ${stepAtLeast(k + 1)}`, 120_000);
    await button(page, 'Stop').click();
    await waitFor(page, stateIs('stopped'), 60_000);

    // No hole: the branch's log runs 0, 1, 2, ... under its own id; the parent still holds 0-5.
    const b = await logOf(page, branch);
    expect(b.steps).toEqual(seq(b.steps.length));
    expect(b.steps.length).toBeGreaterThanOrEqual(k + 1);
    expect(b.ids).toEqual([branch]);
    expect(b.record?.branchOf).toEqual({ runId: parent, step: 2 });
    expect((await logOf(page, parent)).steps).toEqual(seq(6));
    // The charts show the branch from step 0 (its copied history, then its own steps).
    const chartSteps = await page.evaluate((id) => window.sparringRuns?.metrics(id).map((m) => m.step) ?? null, branch);
    if (chartSteps) expect(chartSteps).toEqual(seq(chartSteps.length));
  });
});
