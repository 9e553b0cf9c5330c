// Checkpoints in the browser: the worker autosaves a live run into IndexedDB, the tab reloads
// (the worker and the run die with it), Run setup shows that run paused at its newest checkpoint,
// and the run resumed there produces the same steps as a run of the same seed that was never
// interrupted. Then the list: rename, delete, storage use.
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { sharedHarnessPage } from './browser';

// wasm: this is about checkpoints and the run loop (a redteam step on SwiftShader's WebGPU takes
// ~25 s); the WebGPU training path has its own e2e (model.e2e.ts).
const lab = sharedHarnessPage('?backend=wasm');

/** Tiny redteam: 2 prompts x G=2, 6-token answers, rank-2 LoRA, no early stop. */
const TINY: Record<string, string> = {
  groupSize: '2',
  prompts: '2',
  promptPool: '8',
  maxNewTokens: '6',
  samples: '2',
  loraRank: '2',
};
const SEED = '5';

async function waitFor(page: Page, pred: string, timeout = 60_000): Promise<void> {
  await page.waitForFunction(pred, undefined, { timeout, polling: 100 });
}
const attr = (sel: string, a: string) => `document.querySelector('${sel}')?.getAttribute('${a}')`;

/** Values (or keys) under a key prefix of one of the app's idb-keyval databases (empty if it does not exist yet). */
async function idbValues<T>(
  page: Page,
  db: string,
  prefix: string,
  read: 'getAll' | 'getAllKeys' = 'getAll',
): Promise<T[]> {
  return page.evaluate(
    async ({ db, prefix, read }) => {
      // Never open a database the app has not created: an empty one would lack its object store.
      if (!(await indexedDB.databases()).some((d) => d.name === db)) return [];
      const open = indexedDB.open(db);
      const d = await new Promise<IDBDatabase>((res, rej) => {
        open.onsuccess = () => res(open.result);
        open.onerror = () => rej(open.error);
      });
      try {
        if (!d.objectStoreNames.contains('kv')) return [];
        const req = d
          .transaction('kv', 'readonly')
          .objectStore('kv')
          [read](IDBKeyRange.bound(prefix, `${prefix}\uffff`, false, true));
        return await new Promise<unknown[]>((res, rej) => {
          req.onsuccess = () => res(req.result);
          req.onerror = () => rej(req.error);
        });
      } finally {
        d.close();
      }
    },
    { db, prefix, read },
  ) as Promise<T[]>;
}

type Manifest = {
  id: string;
  runId: string;
  step: number;
  name: string;
  sizeBytes: number;
  chunks: { key: string }[];
  tensors: { name: string }[];
};
type Logged = { step: number; time: number; metrics: Record<string, number | null> };

const manifests = (page: Page) => idbValues<Manifest>(page, 'sparring-checkpoints', 'm/');
async function runLog(page: Page, runId: string): Promise<Logged[]> {
  const batches = await idbValues<{ reports: Logged[] }>(page, 'sparring-runs', `l/${runId}/`);
  return batches.flatMap((b) => b.reports.map((r) => ({ step: r.step, time: r.time, metrics: r.metrics })));
}

/** The metrics a resumed step must reproduce: everything but wall-clock timings. */
const learned = (m: Record<string, number | null>) =>
  Object.fromEntries(Object.entries(m).filter(([k]) => !k.startsWith('perf/')));

async function startTinyRun(page: Page): Promise<string> {
  await page.waitForSelector('[data-testid="recipe-select"] option[value="redteam"]', {
    state: 'attached',
    timeout: 30_000,
  });
  await page.selectOption('[data-testid="recipe-select"]', 'redteam');
  for (const [k, v] of Object.entries(TINY)) await page.fill(`[data-testid="field-${k}"]`, v);
  await page.uncheck('[data-testid="field-earlyStop"]');
  await page.fill('[data-testid="run-seed"]', SEED);
  await page.click('[data-testid="run-start"]');
  await waitFor(page, `${attr('[data-testid="run-state"]', 'data-state')} === 'running'`, 20_000);
  return (await page.evaluate(() => window.sparring!.engine.runStatus())).runId!;
}

async function stopRun(page: Page): Promise<void> {
  await page.click('[data-testid="run-stop"]');
  await waitFor(page, `${attr('[data-testid="run-state"]', 'data-state')} === 'stopped'`);
}

describe('checkpoints', () => {
  let reference: Logged[] = [];

  it('autosaves every N steps into IndexedDB (chunks, then the manifest)', async () => {
    const { page } = lab;
    await page.waitForSelector('[data-testid="autosave-every"]');
    await page.fill('[data-testid="autosave-every"]', '2');
    await page.fill('[data-testid="autosave-keep"]', '0');
    const runA = await startTinyRun(page);
    await waitFor(page, `Number(${attr('[data-testid="run-state"]', 'data-step')}) >= 6`, 120_000);
    await stopRun(page);

    const mine = (await manifests(page)).filter((m) => m.runId === runA);
    const steps = mine.map((m) => m.step).sort((a, b) => a - b);
    // Every second step, and the stop landed at or after step 6.
    expect(steps.slice(0, 3)).toEqual([2, 4, 6]);
    for (const m of mine) {
      expect(m.sizeBytes).toBeGreaterThan(0);
      expect(
        m.tensors.some((t) => /^base_model\.model\.model\.layers\.0\.self_attn\.q_proj\.lora_A\.weight$/.test(t.name)),
      ).toBe(true);
      const chunks = await idbValues<ArrayBuffer>(page, 'sparring-checkpoints', `c/${m.id}/`);
      expect(chunks.length).toBe(m.chunks.length);
    }
    // The panel lists them with their step; the storage line shows use and quota.
    await waitFor(
      page,
      `document.querySelectorAll('[data-testid="checkpoint-row"][data-run="${runA}"]').length === ${mine.length}`,
      10_000,
    );
    await expect(page.textContent('[data-testid="storage-usage"]')).resolves.toMatch(
      /\d+ checkpoints?, [\d.]+ (KiB|MiB|B); \d+ run logs?, [\d.]+ (KiB|MiB|B); this site uses .* of .*/,
    );

    reference = await runLog(page, runA);
    expect(reference.map((r) => r.step).slice(0, 6)).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('resumes the newest checkpoint after a reload and reproduces the uninterrupted steps', async () => {
    const { page } = lab;
    const runB = await startTinyRun(page);
    // The first autosave of run B, then the tab goes away mid-run.
    await waitFor(
      page,
      `document.querySelector('[data-testid="checkpoint-row"][data-run="${runB}"]') !== null`,
      60_000,
    );
    await page.reload();
    await page.waitForFunction(
      () => document.querySelector('[data-testid="device-badge"]')?.getAttribute('data-backend') !== '',
      undefined,
      { timeout: 90_000 },
    );

    const all = await manifests(page);
    const saved = all.filter((m) => m.runId === runB);
    expect(
      saved.length,
      `checkpoints of ${runB} among ${all.map((m) => `${m.runId}@${m.step}`).join(', ')}`,
    ).toBeGreaterThan(0);
    const k = Math.max(...saved.map((m) => m.step));
    // Run setup shows the run that was live, paused at its newest checkpoint.
    await waitFor(page, `${attr('[data-testid="run-state"]', 'data-run')} === ${JSON.stringify(runB)}`, 30_000);
    await expect(page.getAttribute('[data-testid="run-state"]', 'data-state')).resolves.toBe('paused');
    await expect(page.getAttribute('[data-testid="run-state"]', 'data-step')).resolves.toBe(String(k));
    const resumedAt = Date.now();
    await page.click('[data-testid="run-resume"]');

    // Resuming reloads the model in the worker: allow for a machine busy with other work.
    await waitFor(page, `${attr('[data-testid="run-state"]', 'data-state')} === 'running'`, 90_000);
    // It goes on from the checkpoint's step, not from 0.
    expect(Number(await page.getAttribute('[data-testid="run-state"]', 'data-step'))).toBeGreaterThanOrEqual(k);
    await waitFor(page, `Number(${attr('[data-testid="run-state"]', 'data-step')}) >= ${k + 2}`, 120_000);
    await stopRun(page);

    // The log holds each step once: the steps after the checkpoint were cut and run again.
    const log = await runLog(page, runB);
    const steps = log.map((r) => r.step);
    expect(steps.slice(0, k + 2)).toEqual(Array.from({ length: k + 2 }, (_, i) => i));
    // Steps before the checkpoint ran before the resume and were not run again; the rest after it.
    // (Not the reload's time: the old page's worker runs on until the page unloads, and on the
    // faster single-threaded wasm it wrote steps and the newest checkpoint after page.reload().)
    expect(log.filter((r) => r.step < k).every((r) => r.time < resumedAt)).toBe(true);
    expect(log.filter((r) => r.step >= k).every((r) => r.time > resumedAt)).toBe(true);
    // Resumed steps k and k+1 equal the uninterrupted run's (same seed, config, tensors, optimiser, rng).
    for (const s of [k, k + 1]) {
      const want = reference.find((r) => r.step === s);
      expect(want, `reference step ${s}`).toBeDefined();
      expect(learned(log.find((r) => r.step === s)!.metrics)).toEqual(learned(want!.metrics));
    }
    // The charts got the run back: history from the log plus the resumed steps.
    const summary = await page.evaluate(() => window.sparringRuns!.summary());
    expect(summary.runs.find((r) => r.runId === runB)?.reports).toBeGreaterThanOrEqual(k + 2);
  });

  it('renames and deletes checkpoints', async () => {
    const { page } = lab;
    const before = await manifests(page);
    const target = before[0];
    const row = `[data-testid="checkpoint-row"][data-id="${target.id}"]`;
    await page.click(`${row} [data-testid="checkpoint-rename"]`);
    await page.fill(`${row} [data-testid="checkpoint-name-input"]`, 'before the jump');
    await page.press(`${row} [data-testid="checkpoint-name-input"]`, 'Enter');
    await waitFor(
      page,
      `document.querySelector('${row} [data-testid="checkpoint-name"]')?.textContent === 'before the jump'`,
      10_000,
    );
    expect((await manifests(page)).find((m) => m.id === target.id)?.name).toBe('before the jump');

    await page.click(`${row} [data-testid="checkpoint-delete"]`);
    await waitFor(page, `document.querySelector('${row}') === null`, 10_000);
    const after = await manifests(page);
    expect(after.map((m) => m.id)).not.toContain(target.id);
    expect(after.length).toBe(before.length - 1);
    // Its chunks went with it.
    await expect(idbValues(page, 'sparring-checkpoints', `c/${target.id}/`)).resolves.toEqual([]);
  });

  it('keeps only the newest N automatic saves of a run', async () => {
    const { page } = lab;
    await page.fill('[data-testid="autosave-keep"]', '2');
    await page.fill('[data-testid="autosave-every"]', '1');
    const runC = await startTinyRun(page);
    await waitFor(page, `Number(${attr('[data-testid="run-state"]', 'data-step')}) >= 5`, 60_000);
    await stopRun(page);
    await page.waitForTimeout(300);
    const mine = (await manifests(page)).filter((m) => m.runId === runC);
    const last = Number(await page.getAttribute('[data-testid="run-state"]', 'data-step'));
    expect(mine.map((m) => m.step).sort((a, b) => a - b)).toEqual([last - 1, last]);
  });

  it('a full quota: one clear message, earlier checkpoints intact, the run continues', async () => {
    const { page } = lab;
    await page.fill('[data-testid="autosave-keep"]', '0');
    await page.fill('[data-testid="autosave-every"]', '1');
    const before = await manifests(page);
    const runD = await startTinyRun(page);
    await waitFor(
      page,
      `document.querySelector('[data-testid="checkpoint-row"][data-run="${runD}"]') !== null`,
      60_000,
    );
    // Shrink this origin's quota to what it uses now (Chromium's DevTools protocol): the next save cannot fit.
    const cdp = await page.context().newCDPSession(page);
    const origin = new URL(page.url()).origin;
    const usage = await page.evaluate(async () => (await navigator.storage.estimate()).usage ?? 0);
    await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: usage + 1024 });
    try {
      await waitFor(
        page,
        `document.querySelector('[data-testid="checkpoint-message"]')?.getAttribute('data-error') === 'true'`,
        60_000,
      );
      const text = await page.textContent('[data-testid="checkpoint-message"]');
      expect(text).toMatch(
        /^Storage is full: checkpoint not saved\. Checkpoint "autosave · step \d+" \(run redteam-5-.*\) was not saved: the browser storage quota is exceeded .*earlier checkpoints are intact; delete old checkpoints or runs to free space\. The run continues\.$/,
      );
      // The run goes on stepping, and every checkpoint saved before is still whole.
      const s0 = Number(await page.getAttribute('[data-testid="run-state"]', 'data-step'));
      await waitFor(page, `Number(${attr('[data-testid="run-state"]', 'data-step')}) >= ${s0 + 2}`, 60_000);
      await expect(page.getAttribute('[data-testid="run-state"]', 'data-state')).resolves.toBe('running');
      // Every manifest's chunks stored, exactly those, read in one pass: the quota binds only after
      // Chromium's ~20 s (150-200 steps, a save each), and a read per checkpoint then took 26 s of
      // the test's 47 s (measured on the shared 2-core machine).
      const now = await manifests(page);
      const keys = await idbValues<string>(page, 'sparring-checkpoints', 'c/', 'getAllKeys');
      for (const m of now)
        expect(keys.filter((k) => k.startsWith(`c/${m.id}/`)).sort(), m.name).toEqual(
          m.chunks.map((c) => c.key).sort(),
        );
      expect(
        now
          .filter((m) => m.runId !== runD)
          .map((m) => m.id)
          .sort(),
      ).toEqual(before.map((m) => m.id).sort());
      expect(now.filter((m) => m.runId === runD).length).toBeGreaterThan(0);
    } finally {
      await cdp.send('Storage.overrideQuotaForOrigin', { origin });
    }
    await stopRun(page);
  });
});
