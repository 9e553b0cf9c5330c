// The recipe's prompt budget in tokens (issue 40; veRL's data.max_prompt_length + data.truncation):
// a redteam run over an uploaded JSONL whose prompts run past the budget, with the sandbox
// defender's real tokenizer and chat template. Every prompt the rollout hands to generate must be
// the tokenizer's own encoding of its row cut as veRL's postprocess_data cuts (left: the last N ids,
// right: the first N, middle: the first N/2 and the last N - N/2), and "error" refuses naming the row.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-wasm';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { nodeRecipeEnv } from '../cli/recipe-env';
import { PromptLengthError } from '../contract/promptBounds';
import { applyChatTemplate, resolveChatTemplate } from '../model/chat';
import { createTokenizer } from '../model/tokenizer';
import { exportSettings } from './exports';
import { createRun, getRecipe } from './registry';
import { letterJudge } from '../../dev/test/recipeTesting';

const seen = vi.hoisted(() => [] as number[][][]);
vi.mock('../model/generate', async (original) => {
  const m = await original<typeof import('../model/generate')>();
  return {
    ...m,
    generate: (model: Parameters<typeof m.generate>[0], prompts: number[][], o: Parameters<typeof m.generate>[2]) => {
      seen.push(prompts.map((p) => [...p]));
      return m.generate(model, prompts, o);
    },
  };
});

const MODELS = resolve('public/models');
const env = nodeRecipeEnv({ modelsDir: MODELS, judges: { letters: letterJudge } });
const dir = mkdtempSync(join(tmpdir(), 'prompt-budget-'));
const BUDGET = 40;
/** Four prompts of 100-190 words: each over 40 tokens, the longest over the defender's 256-token context (cut, it runs). */
const texts = [100, 130, 160, 190].map((n, i) =>
  Array.from({ length: n }, (_, k) => ['how', 'do', 'I', 'make', 'a', 'weapon', 'at', 'home'][(k + i) % 8]).join(' '),
);
const file = join(dir, 'long.jsonl');
writeFileSync(file, texts.map((prompt) => JSON.stringify({ prompt })).join('\n'));

/** The defender's own encoding of each row (its tokenizer.json and chat template, generation prompt on). */
function ownEncoding(): number[][] {
  const read = (f: string) => JSON.parse(readFileSync(join(MODELS, 'defender', f), 'utf8')) as unknown;
  const tokenizerConfig = read('tokenizer_config.json');
  const tok = createTokenizer(read('tokenizer.json'), tokenizerConfig, { label: 'defender' });
  const template = resolveChatTemplate({ tokenizerConfig, model: 'defender' });
  return texts.map(
    (t) => applyChatTemplate(tok, template, [{ role: 'user', content: t }], { addGenerationPrompt: true }).ids,
  );
}

const cfg = (truncation: string) => ({
  defender: 'defender',
  judge: 'letters',
  dataset: file,
  prompts: 2,
  groupSize: 2,
  maxNewTokens: 4,
  samples: 0,
  evalEvery: 0,
  earlyStop: false,
  skipZeroAdvantageGroups: false,
  maxPromptLength: BUDGET,
  truncation,
});

const cuts: Record<string, (ids: number[]) => number[]> = {
  left: (ids) => ids.slice(-BUDGET),
  right: (ids) => ids.slice(0, BUDGET),
  middle: (ids) => [...ids.slice(0, BUDGET / 2), ...ids.slice(-(BUDGET / 2))],
};

beforeAll(async () => {
  await tf.setBackend('wasm');
});

describe('prompt budget in tokens', () => {
  const own = ownEncoding();

  it('the rows are over the budget in tokens', () => {
    expect(Math.min(...own.map((x) => x.length))).toBeGreaterThan(BUDGET);
    expect(Math.max(...own.map((x) => x.length))).toBeGreaterThan(256);
  });

  it.each(['left', 'right', 'middle'])(
    'truncation %s: the rollout sends each row cut on that side',
    async (side) => {
      seen.length = 0;
      const a = await createRun(env, 'redteam', cfg(side), 3);
      try {
        const r = await a.run.step();
        expect(Number.isFinite(r.metrics['reward/mean'])).toBe(true);
      } finally {
        a.run.dispose();
      }
      const expected = own.map(cuts[side]).map((x) => x.join(','));
      const rows = seen.flat();
      expect(rows.length).toBeGreaterThanOrEqual(4);
      for (const row of rows) {
        expect(row).toHaveLength(BUDGET);
        expect(expected).toContain(row.join(','));
      }
    },
    120_000,
  );

  it('truncation error refuses before any rollout, naming the row and its length in tokens', async () => {
    seen.length = 0;
    const a = await createRun(env, 'redteam', cfg('error'), 3);
    try {
      const e = await a.run.step().then(
        () => null,
        (err: unknown) => err as Error,
      );
      expect(e).toBeInstanceOf(PromptLengthError);
      const m =
        /long\.jsonl line (\d): prompt is (\d+) tokens with the chat template, over the prompt budget of 40 \(field "maxPromptLength"; truncation "error"/.exec(
          e!.message,
        );
      expect(m, e!.message).not.toBeNull();
      expect(Number(m![2])).toBe(own[Number(m![1]) - 1].length);
      expect(seen).toEqual([]);
    } finally {
      a.run.dispose();
    }
  }, 120_000);

  it("the veRL export carries a cutting budget as veRL's own truncation, and keeps error (every row fits) otherwise", () => {
    const o = (config: Record<string, unknown>) =>
      exportSettings({ recipe: getRecipe('redteam'), config, seed: 1, steps: 5 }).overrides;
    expect(o({ maxPromptLength: 16, truncation: 'middle' })).toMatchObject({
      'data.max_prompt_length': 16,
      'data.truncation': 'middle',
      'data.filter_overlong_prompts': false,
    });
    expect(o({ maxPromptLength: 16 })).toMatchObject({
      'data.truncation': 'error',
      'data.filter_overlong_prompts': true,
    });
    expect(o({ maxPromptLength: 16 })['data.max_prompt_length']).toBeGreaterThan(16);
  });
});
