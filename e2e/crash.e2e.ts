// Hard kills in the middle of checkpoint saves. Chromium runs on its own profile folder and is
// killed with SIGKILL (the whole process group: no unload, no flush) while the worker saves
// checkpoints back to back; then it is relaunched on the same profile. After every kill:
// every checkpoint whose manifest was in IndexedDB before the kill is still there with all its
// chunks, chunks of the save that was cut (no manifest) are collected at the lab's start, the
// autosave setting typed a second before the kill is still set, and Run setup shows the run the
// kill cut, paused at its checkpoint.
//
// CI runs a few trials; `npm run e2e:crash` runs many (SPARRING_CRASH_TRIALS, default 3 here).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, describe, expect, it } from 'vitest';
import { CHROMIUM, CHROMIUM_ARGS } from '../dev/browser/chromium';
import { appURL, HARNESS_PAGE } from './browser';

const TRIALS = Math.max(1, Number(process.env.SPARRING_CRASH_TRIALS ?? 3));

/** Chromium on `profile`, in its own process group so one kill takes every process of it. */
async function startChromium(
  profile: string,
): Promise<{ browser: Browser; proc: ChildProcess; kill: () => Promise<void>; shutdown: () => Promise<void> }> {
  const proc = spawn(
    CHROMIUM,
    [...CHROMIUM_ARGS, '--headless=new', '--remote-debugging-port=0', `--user-data-dir=${profile}`, 'about:blank'],
    {
      detached: true,
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  const ws = await new Promise<string>((resolve, reject) => {
    let err = '';
    const timer = setTimeout(
      () => reject(new Error(`Chromium did not report its DevTools address in 30 s: ${err.slice(-500)}`)),
      30_000,
    );
    proc.stderr!.on('data', (d: Buffer) => {
      err += d.toString();
      const m = /DevTools listening on (ws:\/\/\S+)/.exec(err);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    proc.on('exit', (code) => reject(new Error(`Chromium exited (${code}) before it listened: ${err.slice(-500)}`)));
  });
  proc.stderr!.resume();
  const browser = await chromium.connectOverCDP(ws);
  const gone = new Promise<void>((r) => proc.once('exit', () => r()));
  return {
    browser,
    proc,
    kill: async () => {
      process.kill(-proc.pid!, 'SIGKILL');
      await gone;
    },
    /** A clean exit (Browser.close over CDP): Chromium writes what it holds in memory, localStorage included. */
    shutdown: async () => {
      const cdp = await browser.newBrowserCDPSession();
      await cdp.send('Browser.close').catch(() => undefined);
      await Promise.race([gone, new Promise((r) => setTimeout(r, 10_000))]);
      if (proc.exitCode === null && proc.signalCode === null) process.kill(-proc.pid!, 'SIGKILL');
    },
  };
}

type Manifest = { id: string; runId: string; step: number; chunks: { key: string; byteLength: number }[] };

/** Manifests and chunk sizes straight from IndexedDB (no app code), or empty if the database is not there. */
async function rawStore(page: Page): Promise<{ manifests: Manifest[]; chunks: Record<string, number> }> {
  return page.evaluate(async () => {
    if (!(await indexedDB.databases()).some((d) => d.name === 'sparring-checkpoints'))
      return { manifests: [], chunks: {} };
    const open = indexedDB.open('sparring-checkpoints');
    const db = await new Promise<IDBDatabase>((res, rej) => {
      open.onsuccess = () => res(open.result);
      open.onerror = () => rej(open.error);
    });
    try {
      if (!db.objectStoreNames.contains('kv')) return { manifests: [], chunks: {} };
      const os = db.transaction('kv', 'readonly').objectStore('kv');
      const req = <T>(r: IDBRequest<T>) =>
        new Promise<T>((res, rej) => ((r.onsuccess = () => res(r.result)), (r.onerror = () => rej(r.error))));
      const manifests = (await req(os.getAll(IDBKeyRange.bound('m/', 'm/\uffff')))) as Manifest[];
      const keys = (await req(os.getAllKeys(IDBKeyRange.bound('c/', 'c/\uffff')))) as string[];
      const values = (await req(os.getAll(IDBKeyRange.bound('c/', 'c/\uffff')))) as ArrayBuffer[];
      return { manifests, chunks: Object.fromEntries(keys.map((k, i) => [k, values[i].byteLength])) };
    } finally {
      db.close();
    }
  });
}

/** Every manifest's chunks are present with the length its index says (what CheckpointStore.load checks). */
function wholeCheckpoints(s: Awaited<ReturnType<typeof rawStore>>): string[] {
  const broken: string[] = [];
  for (const m of s.manifests)
    for (const c of m.chunks)
      if (s.chunks[c.key] !== c.byteLength)
        broken.push(`${m.id}: ${c.key} ${s.chunks[c.key] ?? 'missing'} != ${c.byteLength}`);
  return broken;
}

const orphanKeys = (s: Awaited<ReturnType<typeof rawStore>>): string[] => {
  const ids = new Set(s.manifests.map((m) => m.id));
  return Object.keys(s.chunks).filter((k) => !ids.has(k.slice(2, k.lastIndexOf('/'))));
};

/** Deletes every manifest and chunk (not the store's birth record: that would read as a wipe). */
async function dropCheckpoints(page: Page): Promise<void> {
  await page.evaluate(async () => {
    const open = indexedDB.open('sparring-checkpoints');
    const db = await new Promise<IDBDatabase>(
      (res, rej) => ((open.onsuccess = () => res(open.result)), (open.onerror = () => rej(open.error))),
    );
    const tx = db.transaction('kv', 'readwrite');
    tx.objectStore('kv').delete(IDBKeyRange.bound('m/', 'm/\uffff'));
    tx.objectStore('kv').delete(IDBKeyRange.bound('c/', 'c/\uffff'));
    await new Promise((res, rej) => ((tx.oncomplete = res), (tx.onerror = () => rej(tx.error))));
    db.close();
  });
}

async function openLab(browser: Browser): Promise<Page> {
  const page = browser.contexts()[0].pages()[0] ?? (await browser.contexts()[0].newPage());
  await page.goto(appURL(HARNESS_PAGE + '?backend=wasm'));
  await page.waitForFunction(
    () => document.querySelector('[data-testid="device-badge"]')?.getAttribute('data-backend') !== '',
    undefined,
    { timeout: 90_000 },
  );
  // The start's checks (persistence, wiped store, orphans) are done once the storage line is read.
  await page.waitForFunction(
    () =>
      !/Reading storage/.test(
        document.querySelector('[data-testid="storage-usage"]')?.textContent ?? 'Reading storage',
      ),
    undefined,
    { timeout: 30_000 },
  );
  return page;
}

/** A tiny redteam run, paused, with the page asking the worker for one checkpoint after another. */
async function saveContinuously(page: Page, seed: number): Promise<void> {
  await page.waitForSelector('[data-testid="recipe-select"] option[value="redteam"]', {
    state: 'attached',
    timeout: 30_000,
  });
  await page.selectOption('[data-testid="recipe-select"]', 'redteam');
  // Rank 32: saves of a few hundred KiB, so a kill often lands inside one.
  for (const [k, v] of Object.entries({
    groupSize: '2',
    prompts: '1',
    promptPool: '4',
    maxNewTokens: '4',
    samples: '1',
    loraRank: '32',
  })) {
    await page.fill(`[data-testid="field-${k}"]`, v);
  }
  await page.uncheck('[data-testid="field-earlyStop"]');
  await page.fill('[data-testid="run-seed"]', String(seed));
  await page.click('[data-testid="run-start"]');
  await page.waitForFunction(
    () => document.querySelector('[data-testid="run-state"]')?.getAttribute('data-state') === 'running',
    undefined,
    { timeout: 60_000 },
  );
  await page.click('[data-testid="run-pause"]');
  await page.waitForFunction(
    () => document.querySelector('[data-testid="run-state"]')?.getAttribute('data-state') === 'paused',
    undefined,
    { timeout: 60_000 },
  );
  await page.evaluate(() => {
    void (async () => {
      for (;;) await window.sparring!.engine.saveCheckpoint().catch(() => undefined);
    })();
  });
  await page.waitForFunction(
    () => (document.querySelectorAll('[data-testid="checkpoint-row"]').length ?? 0) > 0,
    undefined,
    { timeout: 30_000 },
  );
}

describe('hard kills during checkpoint saves', () => {
  const profile = mkdtempSync(join(tmpdir(), 'sparring-crash-'));
  let current: Awaited<ReturnType<typeof startChromium>> | null = null;
  afterAll(async () => {
    if (current && current.proc.exitCode === null) await current.kill();
    rmSync(profile, { recursive: true, force: true });
  });

  it(
    `loses no checkpoint and no setting over ${TRIALS} kill${TRIALS === 1 ? '' : 's'}`,
    async () => {
      let before: Manifest[] = [];
      let killedRun: string | null = null;
      let typed: string | null = null;
      let cut = 0;
      let kept = 0;
      for (let trial = 0; trial <= TRIALS; trial++) {
        current = await startChromium(profile);
        const page = await openLab(current.browser);
        if (trial > 0) {
          // What the start found: orphans of the cut save were collected, every earlier checkpoint is whole.
          const after = await rawStore(page);
          expect(orphanKeys(after), `trial ${trial}: orphan chunks after the start`).toEqual([]);
          expect(wholeCheckpoints(after), `trial ${trial}`).toEqual([]);
          const ids = new Set(after.manifests.map((m) => m.id));
          expect(
            before.filter((m) => !ids.has(m.id)).map((m) => `${m.runId}@${m.step}`),
            `trial ${trial}: checkpoints lost`,
          ).toEqual([]);
          kept += before.length;
          await page
            .waitForFunction(
              (v) => (document.querySelector('[data-testid="autosave-every"]') as HTMLInputElement | null)?.value === v,
              typed,
              { timeout: 5_000 },
            )
            .catch(() => undefined);
          await expect(
            page.inputValue('[data-testid="autosave-every"]'),
            `trial ${trial}: the autosave setting typed before the kill`,
          ).resolves.toBe(typed);
          if ((await page.$('[data-testid="orphans-collected"]')) !== null) cut++;
          // Run setup shows the run the kill cut, paused at a checkpoint; Stop ends it (a new run needs that).
          await page.waitForFunction(
            (id) => document.querySelector('[data-testid="run-state"]')?.getAttribute('data-run') === id,
            killedRun,
            { timeout: 30_000 },
          );
          await expect(page.getAttribute('[data-testid="run-state"]', 'data-state')).resolves.toBe('paused');
          await page.click('[data-testid="run-stop"]');
          await page.waitForFunction(
            () => document.querySelector('[data-testid="run-state"]')?.getAttribute('data-state') === 'stopped',
            undefined,
            { timeout: 10_000 },
          );
          await dropCheckpoints(page); // checked: keep the profile small over many trials
        }
        if (trial === TRIALS) break;
        await saveContinuously(page, 10 + trial);
        // A setting changed a second before the kill must survive it.
        typed = String(20 + trial);
        await page.fill('[data-testid="autosave-every"]', typed);
        await page.waitForTimeout(1000 + Math.floor(Math.random() * 400));
        before = (await rawStore(page)).manifests;
        killedRun = await page.getAttribute('[data-testid="run-state"]', 'data-run');
        expect(before.length).toBeGreaterThan(0);
        await current.kill();
        current = null;
      }
      console.log(
        `crash e2e: ${TRIALS} kills, ${cut} cut a save between its chunks and its manifest, ${kept} checkpoints checked whole after them`,
      );
    },
    60_000 + TRIALS * 45_000,
  );

  it('says plainly when the browser wiped the store, instead of "No checkpoints yet"', async () => {
    // A kill, then the databases vanish while no lab page is open, as when the browser evicts or
    // recreates them. (localStorage alone would not do: Chromium had not written it to disk yet.)
    if (current) await current.kill();
    current = await startChromium(profile);
    const page = current.browser.contexts()[0].pages()[0] ?? (await current.browser.contexts()[0].newPage());
    await page.goto(appURL('favicon.svg'));
    await page.evaluate(async () => {
      for (const name of ['sparring-checkpoints', 'sparring-runs']) {
        await new Promise((res, rej) => {
          const r = indexedDB.deleteDatabase(name);
          r.onsuccess = res;
          r.onerror = () => rej(r.error);
        });
      }
    });
    await openLab(current.browser);
    await expect(page.textContent('[data-testid="storage-notice"]')).resolves.toMatch(
      /^The browser cleared this lab's storage \(checkpoints, run logs\) since it was last open\./,
    );
    await expect(page.textContent('[data-testid="checkpoints-empty"]')).resolves.toMatch(
      /^No checkpoints: the browser cleared them/,
    );
    await expect(page.getAttribute('[data-testid="storage-usage"]', 'data-persisted')).resolves.toMatch(
      /^(true|false)$/,
    );
    // Said once: the next start finds the new records.
    await page.reload();
    await openLab(current.browser);
    expect(await page.$('[data-testid="storage-notice"]')).toBeNull();
    await current.shutdown();
    current = null;
  }, 90_000);
});
