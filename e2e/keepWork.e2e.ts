// Never lose a user's work, one run in one place: driven as a user drives the lab (buttons by
// their names, what the page says, the files it downloads), on the lab page itself.
//   - Stop, then "Adapter (PEFT zip)" and "Merged model": both download (Stop saved the run's
//     last state), with autosave off so nothing else could have saved it;
//   - "Max steps 2, then stop", then the adapter: the file is the step-2 state;
//   - a Stop after the pause save of the same step still saves the stop's checkpoint (the order
//     in which "then stop" once left its run at "pause · step 2");
//   - a reload mid-run: Run setup shows the run paused at its checkpoint, Resume continues its
//     step count there, and there is one set of run controls on the page;
//   - Start while a run is live is disabled and says why; Start with an invalid field names it;
//     a run paused at its step limit does not resume past it until the limit is raised.
import { strFromU8, unzipSync } from 'fflate';
import type { Download, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { parseSafetensors } from '../src/model/safetensors';
import { sharedLabPage } from './browser';
import { fillSft, startNewRun, stateIs, stepAtLeast, waitFor } from './sftRun';

// wasm: this is about the run's life, not the kernels (a step on SwiftShader's WebGPU is far slower).
const lab = sharedLabPage('?backend=wasm');

const runState = (page: Page) => page.getByTestId('run-state');

/** One report of another run, as a replayed JSONL line. */
const REPLAYED = {
  runId: 'x',
  recipe: 'redteam',
  step: 0,
  time: 0,
  metrics: { 'reward/mean': 0.5 },
  samples: [],
  timings: { rollout_ms: 1, score_ms: 1, learn_ms: 1, total_ms: 3 },
};
const button = (page: Page, name: string) => page.getByRole('button', { name, exact: true });

const settled = `document.querySelector('[data-testid="run-state"]')?.getAttribute('data-stepping') === 'false'`;

async function bytesOf(d: Download): Promise<Uint8Array> {
  const parts: Buffer[] = [];
  for await (const c of await d.createReadStream()) parts.push(c as Buffer);
  return new Uint8Array(Buffer.concat(parts));
}

async function download(page: Page, name: string): Promise<{ name: string; bytes: Uint8Array }> {
  const [d] = await Promise.all([page.waitForEvent('download', { timeout: 90_000 }), button(page, name).click()]);
  return { name: d.suggestedFilename(), bytes: await bytesOf(d) };
}

const start = (page: Page): Promise<string> => startNewRun(page);

async function autosave(page: Page, every: string): Promise<void> {
  await page.getByTestId('autosave-every').fill(every);
}

/** A valid PEFT folder zip whose adapter was trained (some lora_B moved off its zero init). */
function checkPeftZip(bytes: Uint8Array): void {
  const files = unzipSync(bytes);
  expect(Object.keys(files).sort()).toEqual(['README.md', 'adapter_config.json', 'adapter_model.safetensors']);
  const cfg = JSON.parse(strFromU8(files['adapter_config.json'])) as Record<string, unknown>;
  expect(cfg).toMatchObject({ peft_type: 'LORA', base_model_name_or_path: './public/models/attacker', r: 2 });
  const st = parseSafetensors(files['adapter_model.safetensors'], 'adapter_model.safetensors');
  const bs = st.names().filter((n) => n.endsWith('lora_B.weight'));
  expect(bs.length).toBeGreaterThan(0);
  expect(bs.some((n) => st.getFloat32(n).some((x) => x !== 0))).toBe(true);
}

describe('a run keeps its work and lives in one place', () => {
  it('Stop saves the last state: the adapter and the merged model download after it', async () => {
    const { page } = lab;
    await autosave(page, '0'); // no autosave: only Stop's own save can make the export possible
    await fillSft(page, { seed: '3' });
    const runId = await start(page);
    await waitFor(page, stepAtLeast(3), 90_000);
    await button(page, 'Stop').click();
    await waitFor(page, stateIs('stopped'), 60_000);
    const step = Number(await runState(page).getAttribute('data-step'));
    expect(step).toBeGreaterThanOrEqual(3);
    // The final checkpoint is listed under its run, at the step the run stopped.
    await page.getByText(`stopped · step ${step}`, { exact: true }).waitFor({ timeout: 10_000 });

    const zip = await download(page, 'Adapter (PEFT zip)');
    expect(zip.name).toBe(`attacker-sft-attacker-step${step}-adapter.zip`);
    checkPeftZip(zip.bytes);
    const merged = await download(page, 'Merged model (safetensors)');
    expect(merged.name).toBe(`attacker-sft-attacker-step${step}-merged.safetensors`);
    const st = parseSafetensors(merged.bytes, merged.name);
    expect(st.names()).toContain('model.layers.0.self_attn.q_proj.weight');
    await expect(page.getByTestId('export-message').getAttribute('data-error')).resolves.toBe('false');
    // The checkpoint list heads the run's saves with its id, and says why it stopped.
    await expect(page.locator(`[data-testid="checkpoint-run"][data-run="${runId}"]`).textContent()).resolves.toMatch(
      new RegExp(`^Run ${runId} · \\d+ checkpoints? · stopped by the user$`),
    );

    // A replay loaded on the charts does not change which run "Run log (JSONL)" exports.
    const replay = { ...REPLAYED, runId: 'someone-elses-run' };
    await page.setInputFiles('[data-testid="replay-input"]', {
      name: 'other.jsonl',
      mimeType: 'application/x-ndjson',
      buffer: Buffer.from(JSON.stringify(replay) + '\n'),
    });
    await page.getByTestId('replay-loaded').waitFor();
    const log = await download(page, 'Run log (JSONL)');
    expect(log.name).toBe(`${runId}.jsonl`);
    const lines = strFromU8(log.bytes).trim().split('\n');
    expect(lines.length).toBe(step);
    expect(lines.every((l) => (JSON.parse(l) as { runId: string }).runId === runId)).toBe(true);
  });

  it('the Device dialog sits above the charts and the run buttons: a click inside it lands in it', async () => {
    const { page } = lab;
    await page.getByTestId('device-badge').click();
    const dialog = page.getByRole('dialog', { name: 'Device' });
    await dialog.waitFor();
    const box = (await dialog.boundingBox())!;
    // Every point of a chart canvas or of the Stop button that lies under the dialog belongs to the dialog.
    const covered = await page.evaluate((b) => {
      // Bring the charts under the dialog.
      document.querySelector('[data-testid="panel-charts"]')?.scrollIntoView();
      const targets = [
        ...document.querySelectorAll<HTMLElement>('.chart-plot canvas, .chart-plot .u-over'),
        document.querySelector<HTMLElement>('[data-testid="run-stop"]')!,
      ];
      const out: string[] = [];
      for (const t of targets) {
        const r = t.getBoundingClientRect();
        // 12 px inside the dialog's edge: clear of its rounded corners.
        const x = Math.min(Math.max(r.left + r.width / 2, b.x + 12), b.x + b.width - 12);
        const y = Math.min(Math.max(r.top + r.height / 2, b.y + 12), b.y + b.height - 12);
        const hit = document.elementFromPoint(x, y);
        if (!hit?.closest('[role="dialog"]')) out.push(`${t.tagName}.${t.className} at ${x},${y}: ${hit?.tagName}`);
      }
      return out;
    }, box);
    expect(covered).toEqual([]);
    await page.keyboard.press('Escape');
    await expect(dialog.count()).resolves.toBe(0);
  });

  it('"Max steps 2, then stop" leaves the step-2 adapter to export', async () => {
    const { page } = lab;
    await fillSft(page, { seed: '4', maxSteps: '2', then: 'stop' });
    const runId = await start(page);
    await waitFor(page, stateIs('stopped'), 90_000);
    await expect(runState(page).getAttribute('data-step')).resolves.toBe('2');
    // Its last checkpoint is the stop's, not the pause's the limit passes through ("pause · step 2").
    const names = page.locator(`[data-testid="checkpoint-row"][data-run="${runId}"] [data-testid="checkpoint-name"]`);
    await names.filter({ hasText: 'stopped · step 2' }).waitFor({ timeout: 10_000 });
    const zip = await download(page, 'Adapter (PEFT zip)');
    expect(zip.name).toBe('attacker-sft-attacker-step2-adapter.zip');
    checkPeftZip(zip.bytes);
  });

  it('a Stop after the pause save of the same step saves "stopped · step 2", not only "pause · step 2"', async () => {
    // "then stop" pauses at its limit, then stops. On wasm the stop reaches the worker before the
    // pause save, so the test above passes with the old worker too; where the pause save lands first
    // (a busy page), the old worker kept it as the run's last state. Here the user waits for that
    // save before pressing Stop, which makes the order certain (the old worker fails this).
    const { page } = lab;
    await autosave(page, '0'); // only the pause and the stop save
    await fillSft(page, { seed: '5', maxSteps: '2', then: 'pause' });
    const runId = await start(page);
    await waitFor(page, stateIs('paused'), 90_000);
    const names = page.locator(`[data-testid="checkpoint-row"][data-run="${runId}"] [data-testid="checkpoint-name"]`);
    await names.filter({ hasText: 'pause · step 2' }).waitFor({ timeout: 30_000 });
    await waitFor(page, settled);
    await button(page, 'Stop').click();
    await waitFor(page, stateIs('stopped'), 60_000);
    await expect(runState(page).textContent()).resolves.toContain('stopped by the user');
    await names.filter({ hasText: 'stopped · step 2' }).waitFor({ timeout: 10_000 });
  });

  it('"Stop and discard" keeps nothing of the run, and says so when asked to export it', async () => {
    const { page } = lab;
    await autosave(page, '0');
    await fillSft(page, { seed: '6' });
    const runId = await start(page);
    await waitFor(page, stepAtLeast(2), 90_000);
    await button(page, 'Stop and discard').click();
    // It asks first; "Keep running" keeps it running, "Discard" stops it.
    const ask = page.getByRole('alertdialog', { name: "Discard the run's unsaved steps?" });
    await expect(ask.textContent()).resolves.toContain('Stop and keep nothing of this run (it has no checkpoint yet)?');
    await ask.getByRole('button', { name: 'Keep running' }).click();
    await expect(runState(page).getAttribute('data-state')).resolves.toBe('running');
    await button(page, 'Stop and discard').click();
    await ask.getByRole('button', { name: 'Discard' }).click();
    await waitFor(page, stateIs('stopped'), 60_000);
    await expect(page.locator(`[data-testid="checkpoint-run"][data-run="${runId}"]`).count()).resolves.toBe(0);
    await button(page, 'Adapter (PEFT zip)').click();
    const msg = page.getByTestId('export-message');
    await waitFor(
      page,
      `document.querySelector('[data-testid="export-message"]')?.getAttribute('data-error') === 'true'`,
    );
    await expect(msg.textContent()).resolves.toContain(`run ${runId} has no checkpoint to export from`);
    // Import with no live run: nothing claims that a run "continues unchanged".
    await page.setInputFiles('[data-testid="import-adapter"]', {
      name: 'adapter.zip',
      mimeType: 'application/zip',
      buffer: Buffer.from([0x50, 0x4b, 5, 6]),
    });
    await waitFor(
      page,
      `/adapter\\.zip into/.test(document.querySelector('[data-testid="export-message"]')?.textContent ?? '')`,
    );
    await expect(msg.textContent()).resolves.toBe(
      'Adapter not imported: no run is live to load adapter.zip into. Start a run, or Restore a checkpoint, first.',
    );
  });

  it('a paused run at its step limit does not resume past it until the limit is raised', async () => {
    const { page } = lab;
    await fillSft(page, { seed: '4', maxSteps: '2', then: 'pause' });
    await start(page);
    await waitFor(page, `${stateIs('paused')} && ${stepAtLeast(2)} && ${settled}`, 90_000);
    await expect(runState(page).getAttribute('data-step')).resolves.toBe('2');
    await expect(button(page, 'Resume').isDisabled()).resolves.toBe(true);
    await expect(page.getByTestId('run-limit-note').textContent()).resolves.toContain(
      'Reached the step limit (2): raise Max steps to go on',
    );
    await page.getByTestId('run-max-steps').fill('3');
    await button(page, 'Resume').click();
    await waitFor(page, `${stateIs('paused')} && ${stepAtLeast(3)} && ${settled}`, 60_000);
    await page.waitForTimeout(500);
    await expect(runState(page).getAttribute('data-step')).resolves.toBe('3');
    await button(page, 'Stop').click();
    await waitFor(page, stateIs('stopped'), 60_000);
  });

  it('Start with an invalid field names it beside the button, and starts nothing', async () => {
    const { page } = lab;
    await fillSft(page, { seed: '4' });
    await page.fill('[data-testid="field-loraRank"]', 'two');
    await button(page, 'Start').click();
    const alert = page.getByTestId('run-start-error');
    await expect(alert.textContent()).resolves.toBe('Not started: this field is invalid: loraRank (marked below).');
    await expect(runState(page).getAttribute('data-state')).resolves.toBe('stopped');
    await page.fill('[data-testid="field-loraRank"]', '2');
    await expect(alert.count()).resolves.toBe(0);
  });

  it('after a reload mid-run, Run setup shows the run paused and Resume continues its steps there', async () => {
    const { page } = lab;
    await autosave(page, '1');
    await fillSft(page, { seed: '5' });
    const runId = await start(page);
    // Start while it is live: disabled, and the page says why.
    await expect(button(page, 'Start').isDisabled()).resolves.toBe(true);
    await expect(page.getByTestId('run-live-note').textContent()).resolves.toContain(
      'A run is live: Stop it (its last state is saved) before starting another.',
    );
    await waitFor(page, stepAtLeast(3), 90_000);
    // A second tab does not take the run for an interrupted one: it is live here.
    const [other] = await Promise.all([
      page.context().waitForEvent('page'),
      page.evaluate(() => void window.open(window.location.href, '_blank')),
    ]);
    await other.waitForSelector('[data-testid="recipe-select"] option[value="attacker-sft"]', {
      state: 'attached',
      timeout: 90_000,
    });
    await other.waitForTimeout(1500);
    await expect(runState(other).getAttribute('data-state')).resolves.toBe('idle');
    await other.close();
    await page.reload();
    await page.waitForFunction(
      () => document.querySelector('[data-testid="device-badge"]')?.getAttribute('data-backend') !== '',
      undefined,
      { timeout: 90_000 },
    );
    await waitFor(page, stateIs('paused'), 30_000);
    await expect(runState(page).getAttribute('data-run')).resolves.toBe(runId);
    const k = Number(await runState(page).getAttribute('data-step'));
    expect(k).toBeGreaterThanOrEqual(2);
    const shown = (await runState(page).textContent())!;
    expect(shown).toContain('attacker-sft · paused · step');
    expect(shown).toContain('the page was reloaded; Resume continues from its checkpoint');
    // One set of run controls on the page.
    for (const name of ['Pause', 'Resume', 'Step', 'Stop']) await expect(button(page, name).count()).resolves.toBe(1);
    await expect(button(page, 'Start').isDisabled()).resolves.toBe(true);

    await button(page, 'Resume').click();
    await waitFor(page, `${stateIs('running')} && ${stepAtLeast(k + 2)}`, 120_000);
    await expect(runState(page).getAttribute('data-run')).resolves.toBe(runId);
    await button(page, 'Stop').click();
    await waitFor(page, stateIs('stopped'), 60_000);
    // The charts hold the run's steps once each, from 0 (the log before the reload, then the resumed steps).
    const steps = await page.evaluate(async (id) => {
      const open = indexedDB.open('sparring-runs');
      const db = await new Promise<IDBDatabase>((res, rej) => {
        open.onsuccess = () => res(open.result);
        open.onerror = () => rej(open.error);
      });
      const req = db
        .transaction('kv', 'readonly')
        .objectStore('kv')
        .getAll(IDBKeyRange.bound(`l/${id}/`, `l/${id}/\uffff`));
      const batches = await new Promise<{ reports: { step: number }[] }[]>((res) => {
        req.onsuccess = () => res(req.result as { reports: { step: number }[] }[]);
      });
      db.close();
      return batches.flatMap((b) => b.reports.map((r) => r.step));
    }, runId);
    expect(steps).toEqual(Array.from({ length: steps.length }, (_, i) => i));
    expect(steps.length).toBeGreaterThanOrEqual(k + 2);
    // Its run ended: a second reload offers nothing to resume.
    await page.reload();
    await page.waitForFunction(
      () => document.querySelector('[data-testid="device-badge"]')?.getAttribute('data-backend') !== '',
      undefined,
      { timeout: 90_000 },
    );
    await page.waitForTimeout(1500);
    await expect(runState(page).getAttribute('data-state')).resolves.toBe('idle');
  });
});
