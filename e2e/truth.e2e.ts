// What the lab shows is true (issue 41), from the user's side: visible text, roles, downloads.
//   - a run that early-stops says why in the status, the session's run list and the checkpoints
//     list, after its final save (the save's "saving the final checkpoint" never replaces it);
//     a "then stop" run says it stopped at the step limit, a Stop that the user pressed;
//   - a reload right after a save always offers the run back (repeated);
//   - an invalid hub id in a model field blocks Start, and a hub that cannot be reached says so;
//   - every recipe's cards, filters, outcome colours and chart titles speak its own world's words
//     (a replayed step of each of the nine, and a live attacker-sft step);
//   - a two-player run (arena) exports both adapters, and the buttons say so;
//   - `?backend=webgl` where WebGL cannot start lands on wasm, not on the software WebGPU adapter;
//   - the status, the arena and the lesson count a run's last step alike (steps done).
import { strFromU8, unzipSync } from 'fflate';
import type { Download, Page } from 'playwright-core';
import { chromium } from 'playwright-core';
import { parseSafetensors } from '../src/model/safetensors';
import { CHROMIUM, CHROMIUM_ARGS } from '../dev/browser/chromium';
import { describe, expect, it } from 'vitest';
import { appURL, CHEAPEST_SFT, openLab, sharedLabPage } from './browser';
import { startNewRun } from './sftRun';

// wasm: these are about what the page says, not the kernels.
const lab = sharedLabPage('?backend=wasm');

const button = (page: Page, name: string) => page.getByRole('button', { name, exact: true });
const runState = (page: Page) => page.getByTestId('run-state');
const stateIs = (s: string) =>
  `document.querySelector('[data-testid="run-state"]')?.getAttribute('data-state') === '${s}'`;
const stepAtLeast = (n: number) =>
  `Number(document.querySelector('[data-testid="run-state"]')?.getAttribute('data-step')) >= ${n}`;

async function waitFor(page: Page, pred: string, timeout = 60_000): Promise<void> {
  await page.waitForFunction(pred, undefined, { timeout, polling: 100 });
}

async function pick(page: Page, recipe: string, fields: Record<string, string>): Promise<void> {
  await page.waitForSelector(`[data-testid="recipe-select"] option[value="${recipe}"]`, {
    state: 'attached',
    timeout: 60_000,
  });
  await page.selectOption('[data-testid="recipe-select"]', recipe);
  for (const [k, v] of Object.entries(fields)) await page.fill(`[data-testid="field-${k}"]`, v);
}

async function start(page: Page, o: { seed: string; maxSteps?: string; then?: 'pause' | 'stop' }): Promise<string> {
  await page.getByTestId('run-seed').fill(o.seed);
  await page.getByTestId('run-max-steps').fill(o.maxSteps ?? '');
  await page.selectOption('[data-testid="run-at-max"]', o.then ?? 'pause');
  return startNewRun(page, ['running', 'paused', 'stopped', 'error']);
}

const SFT = CHEAPEST_SFT;

async function reloaded(page: Page): Promise<void> {
  await page.waitForFunction(
    () => document.querySelector('[data-testid="device-badge"]')?.getAttribute('data-backend') !== '',
    undefined,
    { timeout: 90_000 },
  );
}

describe('the stop reason is kept and shown', () => {
  it('an early stop says why in the status, the run list and the checkpoints list', async () => {
    const { page } = lab;
    await page.getByTestId('autosave-every').fill('0');
    // Early stop on any positive mean reward: seed 1's first step has one harmful answer of two (0.5).
    await pick(page, 'redteam', {
      groupSize: '2',
      prompts: '1',
      promptPool: '4',
      maxNewTokens: '16',
      samples: '1',
      loraRank: '2',
      earlyStopReward: '0',
    });
    await page.check('[data-testid="field-earlyStop"]');
    const runId = await start(page, { seed: '1', maxSteps: '8', then: 'stop' });
    await waitFor(page, stateIs('stopped'), 120_000);
    const status = runState(page);
    await page.waitForTimeout(500);
    const shown = (await status.textContent())!;
    expect(shown).toMatch(/redteam · stopped · step \d+.* · early stop: mean (reward|repetition) -?\d/);
    expect(shown).not.toContain('saving the final checkpoint');
    const legend = page.getByRole('list', { name: 'Runs' }).getByRole('listitem').filter({ hasText: 'redteam' });
    await expect(legend.first().getByTestId('run-stop-reason').textContent()).resolves.toMatch(/^early stop: mean /);
    const group = page.locator(`[data-testid="checkpoint-run"][data-run="${runId}"]`);
    await group.waitFor({ timeout: 10_000 });
    await expect(group.textContent()).resolves.toMatch(/ · early stop: mean (reward|repetition) /);
  });

  it('"then stop" says the step limit stopped it; Stop says the user did', async () => {
    const { page } = lab;
    await pick(page, 'attacker-sft', SFT);
    const limited = await start(page, { seed: '2', maxSteps: '1', then: 'stop' });
    await waitFor(page, stateIs('stopped'), 90_000);
    await expect(runState(page).textContent()).resolves.toContain('stopped at the step limit: step 1');
    const group = page.locator(`[data-testid="checkpoint-run"][data-run="${limited}"]`);
    await group.waitFor({ timeout: 10_000 });
    await expect(group.textContent()).resolves.toContain('stopped at the step limit: step 1');
    // Restore says so in the panel clicked, not only in Run setup.
    await page
      .locator(`[data-testid="checkpoint-row"][data-run="${limited}"]`)
      .filter({ hasText: 'stopped · step 1' })
      .getByRole('button', { name: 'Restore' })
      .click();
    const said = page.getByTestId('checkpoint-message').filter({ hasText: 'Restored' });
    await said.waitFor({ timeout: 30_000 });
    await expect(said.textContent()).resolves.toBe(
      'Restored "stopped · step 1" into Run setup, paused at step 1: Resume there continues it.',
    );
    await waitFor(page, stateIs('paused'), 30_000);
    await button(page, 'Stop').click();
    await waitFor(page, stateIs('stopped'), 60_000);

    const byHand = await start(page, { seed: '3' });
    await waitFor(page, stepAtLeast(1), 90_000);
    await button(page, 'Stop').click();
    await waitFor(page, stateIs('stopped'), 60_000);
    await expect(runState(page).textContent()).resolves.toContain('stopped by the user');
    // The Checkpoints panel lists the run once its final save lands, which may follow the status.
    await expect
      .poll(() => page.locator(`[data-testid="checkpoint-run"][data-run="${byHand}"]`).textContent(), {
        timeout: 30_000,
      })
      .toContain('stopped by the user');
  });
});

describe('a reload soon after a save is offered back', () => {
  it('reloaded right after each of three saves, the run comes back paused at that save', async () => {
    const { page } = lab;
    await page.getByTestId('autosave-every').fill('1');
    await pick(page, 'attacker-sft', SFT);
    const runId = await start(page, { seed: '7' });
    // A page of the same site that takes the run's Web Lock the moment the old page's worker lets
    // go, and keeps it 3 s: the old worker dying slowly, as on a loaded machine (issue 41 saw the
    // run taken for live in another tab, and nothing offered).
    const [slowTeardown] = await Promise.all([
      page.context().waitForEvent('page'),
      page.evaluate((u) => void window.open(u, '_blank'), appURL('models/attacker/config.json')),
    ]);
    await slowTeardown.waitForLoadState();
    for (let round = 0; round < 3; round++) {
      // The moment the panel says a save of this run landed, reload.
      const saved = page.getByTestId('checkpoint-message').filter({ hasText: `of run ${runId}` });
      await saved.waitFor({ timeout: 90_000 });
      await slowTeardown.evaluate((name) => {
        void navigator.locks.request(name, () => new Promise<void>((r) => setTimeout(r, 3000)));
      }, `sparring-run/${runId}`);
      await page.reload();
      await reloaded(page);
      await waitFor(page, stateIs('paused'), 30_000);
      await expect(runState(page).getAttribute('data-run')).resolves.toBe(runId);
      await expect(runState(page).textContent()).resolves.toContain('the page was reloaded; Resume continues');
      await button(page, 'Resume').click();
      await waitFor(page, stateIs('running'), 60_000);
    }
    await slowTeardown.close();
    await button(page, 'Stop').click();
    await waitFor(page, stateIs('stopped'), 60_000);
  });
});

describe('model fields are validated like every other field', () => {
  it('an invalid hub id marks the field and Start refuses it', async () => {
    const { page } = lab;
    await pick(page, 'attacker-sft', SFT);
    await page.selectOption('[data-testid="model-mode-attacker"]', 'hub');
    await page.getByRole('textbox', { name: 'attacker: hub model id' }).fill('not a hub id!!');
    await expect(page.getByTestId('field-attacker').getAttribute('aria-invalid')).resolves.toBe('true');
    await expect(page.getByTestId('field-error-attacker').textContent()).resolves.toContain(
      'invalid model id "not a hub id!!"',
    );
    await button(page, 'Start').click();
    await expect(page.getByTestId('run-start-error').textContent()).resolves.toBe(
      'Not started: this field is invalid: attacker (marked below).',
    );
    await expect(runState(page).getAttribute('data-state')).resolves.not.toMatch(/running|paused/);
    await page.selectOption('[data-testid="model-mode-attacker"]', 'sandbox');
    await expect(page.getByTestId('field-attacker').inputValue()).resolves.toBe('attacker');
  });

  it('a valid hub id on a hub that cannot be reached says "offline?", not "Failed to fetch"', async () => {
    // Nothing listens on port 9: the hub gives no answer at all, as when the machine is offline.
    const { page } = await openLab(lab.page.context().browser()!, '?backend=wasm&hub=http://127.0.0.1:9');
    try {
      await pick(page, 'attacker-sft', SFT);
      await page.selectOption('[data-testid="model-mode-attacker"]', 'hub');
      await page.getByRole('textbox', { name: 'attacker: hub model id' }).fill('HuggingFaceTB/SmolLM2-135M-Instruct');
      await expect(page.getByTestId('field-attacker').getAttribute('aria-invalid')).resolves.toBe('false');
      await start(page, { seed: '1' });
      await waitFor(page, stateIs('error'), 60_000);
      await expect(page.getByRole('alert').filter({ hasText: 'Run failed' }).textContent()).resolves.toMatch(
        /^Run failed: cannot reach the Hugging Face hub \(http:\/\/127\.0\.0\.1:9\): offline\? \((config|tokenizer)\.json from hub model HuggingFaceTB\/SmolLM2-135M-Instruct: /,
      );
    } finally {
      await page.close();
    }
  });
});

/** Each recipe's world, as a reader expects it: attacks and harm only where something is attacked. */
const WORLDS: Record<string, 'safety' | 'qa' | 'sft'> = {
  redteam: 'safety',
  attack: 'safety',
  defend: 'safety',
  multiturn: 'safety',
  arena: 'safety',
  tokenbuncher: 'safety',
  'attacker-sft': 'sft',
  minmax: 'qa',
  rlhf: 'qa',
};

/** One replayed step of `recipe` with one succeeded rollout and one not, in the roles the recipe uses. */
function replayLine(recipe: string, step = 0): string {
  const roles = WORLDS[recipe] === 'qa' ? ['user', 'assistant', 'monitor'] : ['user', 'attacker'];
  const sample = (success: boolean, i: number) => ({
    id: `${recipe}-${i}`,
    promptKey: `${recipe}-p${i}`,
    group: i,
    messages: roles.map((role) => ({ role, text: `${role} text` })),
    verdict: { label: success ? 'label one' : 'label two', unsafe: 0, refused: false, success },
    reward: 0,
    terms: {},
  });
  return JSON.stringify({
    runId: `words-${recipe}`,
    recipe,
    step,
    time: 0,
    // Every recipe reports perf/judge_share, 0 where no judge ran.
    metrics: { 'reward/mean': 0, 'perf/judge_share': 0 },
    samples: [sample(true, 0), sample(false, 1)],
    timings: { rollout_ms: 1, score_ms: 1, learn_ms: 1, total_ms: 3 },
  });
}

async function arenaWords(page: Page) {
  const arena = page.getByTestId('panel-arena');
  const radios = arena.getByRole('radiogroup', { name: 'Show rollouts' }).getByRole('radio');
  const filters = (await radios.allTextContents()).map((t) => t.replace(/\s*\d+$/, ''));
  const cards = await arena.getByTestId('sample').allTextContents();
  const tones = await arena.getByTestId('outcome').evaluateAll((els) => els.map((e) => getComputedStyle(e).color));
  return { filters, cards: cards.join(' | '), tones };
}

describe("each recipe's own words", () => {
  it('a replayed step of each of the nine recipes: filters, outcomes, scores and colours of its world', async () => {
    const { page } = lab;
    const good = await page.evaluate(() =>
      getComputedStyle(document.documentElement).getPropertyValue('--good').trim(),
    );
    const bad = await page.evaluate(() => getComputedStyle(document.documentElement).getPropertyValue('--bad').trim());
    const rgb = (hex: string) => `rgb(${[1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16)).join(', ')})`;
    for (const [recipe, world] of Object.entries(WORLDS)) {
      await page.setInputFiles('[data-testid="replay-input"]', {
        name: `${recipe}.jsonl`,
        mimeType: 'application/x-ndjson',
        buffer: Buffer.from(replayLine(recipe) + '\n'),
      });
      const entry = page.getByTestId('run-entry').filter({ hasText: `${recipe}.jsonl` });
      const show = entry.getByRole('button', { name: 'Show in arena' });
      if ((await show.count()) > 0) await show.click();
      await page.getByTestId('panel-arena').getByText('label one').waitFor({ timeout: 10_000 });
      const w = await arenaWords(page);
      // The charts of its row, and its line in the runs list.
      const titles = await page
        .locator(`[data-testid="recipe-charts"][data-recipe="${recipe}"] .chart-title`)
        .allTextContents();
      expect(titles, recipe).toContain('Reward');
      if (world === 'safety')
        expect(titles, recipe).toEqual(expect.arrayContaining(['Attack success rate', 'Judge share of the step']));
      // No judge ran in these steps: neither an attack rate nor a judge's share of the step.
      else expect(titles.join(' | '), recipe).not.toMatch(/Attack|Judge/);
      await expect(entry.textContent()).resolves.toContain(`${recipe} · 1 step`);
      await expect(entry.textContent()).resolves.not.toContain('1 steps');
      if (world === 'safety') {
        expect(w.filters, recipe).toEqual(['All', 'Attack succeeded', 'Attack failed']);
        expect(w.cards, recipe).toContain('attack succeeded');
        expect(w.cards, recipe).toContain('P(unsafe) 0.00');
        expect(w.tones[0], recipe).toBe(rgb(bad));
      } else {
        expect(w.cards, recipe).not.toMatch(/attack (succeeded|failed)|P\(unsafe\)/);
        expect(w.filters.join(' '), recipe).not.toMatch(/Attack/);
      }
      if (world === 'qa') {
        expect(w.filters, recipe).toEqual(['All', 'Answer right', 'Answer wrong']);
        expect(w.cards, recipe).toContain('answer right');
        expect(w.cards, recipe).toContain('monitor verdict');
        // A right answer is drawn in the success colour, not the attack colour.
        expect(w.tones[0], recipe).toBe(rgb(good));
      }
      if (world === 'sft') {
        expect(w.filters, recipe).toEqual(['All']);
        expect(w.tones, recipe).toEqual([]);
        expect(w.cards, recipe).toContain('target text');
        expect(w.cards, recipe).not.toContain('reward');
      }
      await entry.getByRole('button', { name: /^Remove / }).click();
    }
  });

  it('a live attacker-sft step: its cards name the goal and the target text, no attack and no P(unsafe)', async () => {
    const { page } = lab;
    await pick(page, 'attacker-sft', { ...SFT, sampleEvery: '1' });
    await start(page, { seed: '8', maxSteps: '1', then: 'stop' });
    await waitFor(page, stateIs('stopped'), 90_000);
    const card = page.getByTestId('panel-arena').getByTestId('sample').first();
    await card.waitFor({ timeout: 10_000 });
    const text = (await card.textContent())!;
    expect(text).toMatch(/^tactic: /);
    expect(text).toContain('goal');
    expect(text).toContain('target text');
    expect(text).not.toMatch(/attack (succeeded|failed)|P\(unsafe\)|reward/);
    // One goal, one sample: no turn numbers ("goal · turn 1", "greedy sample · turn 2" before).
    expect(text).not.toMatch(/turn \d/);
  });
});

async function download(page: Page, name: string): Promise<{ name: string; bytes: Uint8Array }> {
  const [d] = await Promise.all([page.waitForEvent('download', { timeout: 90_000 }), button(page, name).click()]);
  const parts: Buffer[] = [];
  for await (const c of await (d as Download).createReadStream()) parts.push(c as Buffer);
  return { name: d.suggestedFilename(), bytes: new Uint8Array(Buffer.concat(parts)) };
}

describe('a two-player run exports every adapter', () => {
  it('arena: the buttons name both players; the zip holds an attacker and a defender adapter whose weights differ', async () => {
    const { page } = lab;
    // One step per phase, the defender first: after four steps each player has had two.
    await pick(page, 'arena', {
      phaseSteps: '1',
      goals: '2',
      groupSize: '4',
      benignPrompts: '0',
      attackerMaxTokens: '8',
      defenderMaxTokens: '4',
      goalPool: '4',
      samples: '0',
      loraRank: '2',
    });
    await page.selectOption('[data-testid="field-firstPhase"]', 'defender');
    await start(page, { seed: '5', maxSteps: '4', then: 'stop' });
    await waitFor(page, stateIs('stopped'), 120_000);
    const zip = await download(page, 'Adapters: attacker + defender (PEFT zip)');
    expect(zip.name).toBe('arena-attacker-defender-step4-adapters.zip');
    const files = unzipSync(zip.bytes);
    const weights: Record<string, number[]> = {};
    const moved: Record<string, boolean> = {};
    for (const player of ['attacker', 'defender']) {
      const cfg = JSON.parse(strFromU8(files[`${player}/adapter_config.json`])) as Record<string, unknown>;
      expect(cfg, player).toMatchObject({
        peft_type: 'LORA',
        r: 2,
        base_model_name_or_path: `./public/models/${player}`,
      });
      const st = parseSafetensors(files[`${player}/adapter_model.safetensors`], player);
      const names = st.names().sort();
      expect(names.filter((n) => n.endsWith('lora_B.weight')).length, player).toBeGreaterThan(0);
      weights[player] = names.flatMap((n) => Array.from(st.getFloat32(n)));
      moved[player] = names.some((n) => n.endsWith('lora_B.weight') && st.getFloat32(n).some((x) => x !== 0));
    }
    // Two adapters, not one written twice; the attacker's (trained on this seed's varied rewards) moved off
    // its zero-init lora_B. (The sandbox defender refuses every prompt alike here: equal rewards, no update.)
    expect(weights.attacker).not.toEqual(weights.defender);
    expect(moved.attacker).toBe(true);
    await expect(page.getByTestId('export-message').textContent()).resolves.toContain(
      'a PEFT adapter folder per player (attacker/, defender/)',
    );
    const merged = await download(page, 'Merged models: attacker + defender (zip)');
    expect(merged.name).toBe('arena-attacker-defender-step4-merged.zip');
    const m = unzipSync(merged.bytes);
    for (const player of ['attacker', 'defender'])
      expect(parseSafetensors(m[`${player}/model.safetensors`], player).names()).toContain(
        'model.layers.0.self_attn.q_proj.weight',
      );
  });
});

describe('backend fallback follows the measured order', () => {
  it('?backend=webgl in a Chromium without WebGL runs on wasm (SwiftShader WebGPU is about twice as slow a step)', async () => {
    // ANGLE off: WebGL cannot start, while Dawn's SwiftShader still gives WebGPU a software adapter.
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [...CHROMIUM_ARGS, '--use-angle=disabled'],
    });
    try {
      const { page } = await openLab(browser, '?backend=webgl');
      await expect(page.getByTestId('device-badge').getAttribute('data-backend')).resolves.toBe('wasm');
      await expect(page.getByTestId('device-badge').textContent()).resolves.toBe('wasm · no hardware GPU');
    } finally {
      await browser.close();
    }
  });
});

describe('every panel counts steps the same way', () => {
  it('after a 2-step run the status, the arena and the lesson all say step 2', async () => {
    const { page } = lab;
    await pick(page, 'redteam', {
      groupSize: '2',
      prompts: '1',
      promptPool: '4',
      maxNewTokens: '8',
      samples: '1',
      loraRank: '2',
    });
    await page.uncheck('[data-testid="field-earlyStop"]');
    await start(page, { seed: '2', maxSteps: '2', then: 'pause' });
    await waitFor(page, `${stateIs('paused')} && ${stepAtLeast(2)}`, 120_000);
    await expect(runState(page).textContent()).resolves.toContain('step 2 / 2');
    // Two steps give no steps/s window, but the last step's time shows.
    await expect(runState(page).textContent()).resolves.toMatch(/ · last step \d+\.\d s$/);
    await expect(page.getByTestId('panel-arena').locator('output').textContent()).resolves.toBe('2 (latest)');
    if ((await page.getByTestId('teaching-toggle').getAttribute('aria-pressed')) !== 'true')
      await page.getByTestId('teaching-toggle').click();
    await expect(page.getByTestId('live-formula').textContent()).resolves.toContain('Latest rollout (step 2,');
    await page.getByTestId('teaching-toggle').click();
    await button(page, 'Stop').click();
    await waitFor(page, stateIs('stopped'), 60_000);
  });
});
