// Hostile model repos in real Chromium (issue 40): the tokenizer.json with the `(a+)+$` Split
// regex and the chat template looping over range(1e9), served from disk as the hub serves them
// (dev/servers/hubServer.ts), named in a setup link and started with the lab's own Start button on
// wasm: each run is refused within 10 s with one message naming the file and the field, the tab's
// memory stays under 1 GiB, and a run of a good model from the same server then trains.
//
// Memory: the resident set (VmRSS in /proc/<pid>/status) of every Chromium renderer process this
// test started (the page and its engine worker live in the renderer), summed and sampled every
// 100 ms; the browser and GPU processes are not counted. Without the template guard, range(1e9)
// ran V8 out of memory at 2.5 GB (src/model/chat.ts's range budget is what stops it).
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveHubRepos, type HubServer } from '../dev/servers/hubServer';
import { HOSTILE_RANGE_TEMPLATE, hostileSplit, writeRepo } from '../dev/test/hostileRepos';
import { applyChatTemplate, resolveChatTemplate } from '../src/model/chat';
import { createTokenizer } from '../src/model/tokenizer';
import { launch, openLab } from './browser';
import { stepAtLeast, waitFor } from './sftRun';

const DEFENDER = resolve('public/models/defender');
const root = mkdtempSync(join(tmpdir(), 'hostile-e2e-'));
const model = { weights: DEFENDER, tokenizer: DEFENDER };
const GiB = 2 ** 30;

/** Every descendant of this process whose command line is a Chromium renderer's. */
function rendererPids(): number[] {
  const parent = new Map<number, number>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      parent.set(Number(d), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone
    }
  }
  const mine = (pid: number) => {
    for (let p = parent.get(pid); p !== undefined && p > 1; p = parent.get(p)) if (p === process.pid) return true;
    return false;
  };
  return [...parent.keys()].filter((pid) => {
    if (!mine(pid)) return false;
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('--type=renderer');
    } catch {
      return false;
    }
  });
}

const rssBytes = (pid: number): number => {
  try {
    return Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
};

/** Samples the renderers' summed RSS every 100 ms until stopped; returns the peak. */
function sampleRenderers(): { stop(): number } {
  const pids = rendererPids();
  let peak = 0;
  const tick = () =>
    (peak = Math.max(
      peak,
      pids.map(rssBytes).reduce((a, b) => a + b, 0),
    ));
  tick();
  const t = setInterval(tick, 100);
  return {
    stop() {
      clearInterval(t);
      tick();
      return peak;
    },
  };
}

let hub: HubServer;
let browser: Browser;
beforeAll(async () => {
  hub = await serveHubRepos({
    'evil/split': writeRepo(join(root, 'split'), model, { tokenizer: hostileSplit }),
    'evil/range': writeRepo(join(root, 'range'), model, { template: HOSTILE_RANGE_TEMPLATE }),
    'good/defender': writeRepo(join(root, 'good'), model),
  });
  browser = await launch();
});
afterAll(async () => {
  await browser?.close();
  await hub?.close();
});

const link = (id: string) =>
  `?backend=wasm&hub=${encodeURIComponent(hub.endpoint)}&recipe=redteam&c.defender=${encodeURIComponent(id)}` +
  '&c.judge=rules&c.prompts=2&c.groupSize=2&c.maxNewTokens=3&c.samples=0&c.evalEvery=0';

/** Presses Start and waits for the run's error (a failed start or a failed run), returning it and the time taken. */
async function startUntilError(page: Page): Promise<{ text: string; ms: number }> {
  const t0 = Date.now();
  await page.getByRole('button', { name: 'Start', exact: true }).click();
  const err = page.locator('[data-testid="run-error"], [data-testid="run-command-error"]').first();
  await err.waitFor({ timeout: 30_000 });
  return { text: (await err.textContent()) ?? '', ms: Date.now() - t0 };
}

describe('hostile model repos in Chromium', () => {
  it('the catastrophic Split regex and the range(1e9) template are refused within 10 s, the tab under 1 GiB; a good repo then trains', async () => {
    const cases: [string, RegExp][] = [
      [
        'evil/split',
        /tokenizer\.json \(.*evil\/split.*\): field "pre_tokenizer\.pretokenizers\[0\]\.pattern\.Regex" \("\(a\+\)\+\$"\) is refused: the repeated group at character 0/,
      ],
      [
        'evil/range',
        /chat template of .*evil\/range.*\(chat_template\.jinja\): loops over range\(\) asked for 1,000,000,000 items in one render, over the limit of 100,000/,
      ],
    ];
    const { page } = await openLab(browser, link('evil/split'));
    const seen: Record<string, { ms: number; peakMiB: number; baseMiB: number }> = {};
    for (const [id, message] of cases) {
      if (id !== 'evil/split') await page.goto(new URL(link(id), page.url()).href);
      await page.getByRole('button', { name: 'Start', exact: true }).waitFor();
      const base = sampleRenderers();
      const baseBytes = base.stop();
      const s = sampleRenderers();
      const { text, ms } = await startUntilError(page);
      const peak = s.stop();
      seen[id] = { ms, peakMiB: Math.round(peak / 2 ** 20), baseMiB: Math.round(baseBytes / 2 ** 20) };
      expect(text).toMatch(message);
      expect(text.length).toBeLessThan(700);
      expect(ms).toBeLessThan(10_000);
      expect(peak).toBeGreaterThan(0);
      expect(peak).toBeLessThan(GiB);
    }
    console.log(`hostile repos: ${JSON.stringify(seen)}`);
    // The same lab, pointed at the good repo of the same server, trains.
    await page.goto(new URL(link('good/defender'), page.url()).href);
    await page.getByRole('button', { name: 'Start', exact: true }).click();
    await waitFor(page, stepAtLeast(1), 90_000);
    await page.getByRole('button', { name: 'Stop', exact: true }).click();
  });

  it("the fit check counts an upload's longest prompt with the model's tokenizer, and says it estimated when the tokenizer is refused", async () => {
    // 300 ASCII characters against 200 CJK ones: the estimate (3 characters a token) ranks the ASCII
    // row first; the defender's byte-level tokenizer makes 3 tokens of each CJK character.
    const rows = ['a'.repeat(300), '漢'.repeat(200), 'short'];
    const read = (f: string) => JSON.parse(readFileSync(join(DEFENDER, f), 'utf8')) as unknown;
    const tokenizerConfig = read('tokenizer_config.json');
    const tok = createTokenizer(read('tokenizer.json'), tokenizerConfig, { label: 'defender' });
    const template = resolveChatTemplate({ tokenizerConfig, model: 'defender' });
    const own = applyChatTemplate(tok, template, [{ role: 'user', content: rows[1] }], { addGenerationPrompt: true });
    const { page } = await openLab(browser, `?backend=wasm&hub=${encodeURIComponent(hub.endpoint)}`);
    await page.setInputFiles('[data-testid="dataset-file"]', {
      name: 'mix.jsonl',
      mimeType: 'application/x-ndjson',
      buffer: Buffer.from(rows.map((prompt) => JSON.stringify({ prompt })).join('\n')),
    });
    await page.waitForSelector('[data-testid="dataset-item"][data-ref="upload:mix.jsonl"]', { timeout: 10_000 });
    // The repos by hub id: the fit check reads config.json from the page's ?hub= mirror, as the
    // worker reads the tokenizer (it read the lab's own site, 'cannot check the size', before).
    const fitText = async (id: string, expected: RegExp) => {
      await page.goto(new URL(`${link(id)}&c.dataset=upload%3Amix.jsonl`, page.url()).href);
      const fit = page.getByTestId('fit-defender').filter({ hasText: expected });
      await fit.waitFor({ timeout: 30_000 });
      return (await fit.textContent()) ?? '';
    };
    const counted = await fitText('good/defender', /prompt length: counted/);
    expect(counted).toContain(`prompt length: counted with the model's tokenizer and chat template (`);
    expect(counted).toContain(
      `the longest prompt of upload:mix.jsonl is ${own.ids.length.toLocaleString('en-US')} tokens (line 2; the 3 longest of 3 prompts counted)`,
    );
    const guessed = await fitText('evil/split', /prompt length: estimated/);
    expect(guessed).toMatch(
      /prompt length: estimated at 3 characters a token plus 32 for the template \(300 characters, about 132 tokens\): the tokenizer was not used \(tokenizer\.json \(.*evil\/split/,
    );
  });
});
