// The prompt budget (issue 40) reaches every recipe whose rollout sends a dataset row: attack (the
// dataset goal wrapped into the attacker's prompt), defend and arena (the attacker's prompt, and the
// defender's benign tasks), multiturn (each episode's first turn, and the attacker's prompt), minmax and rlhf (the
// policy's QA row, the monitor's prompt), attacker-sft (its greedy samples' held-out goal). Every prompt a model receives is either the model's own encoding of a
// row cut on the chosen side (veRL's postprocess_data slices) or a prompt another model wrote
// (shorter than the budget here: the attacker writes at most 4 tokens); "error" refuses naming the row.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-wasm';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { nodeRecipeEnv } from '../cli/recipe-env';
import { PromptLengthError } from '../contract/promptBounds';
import { readQaSet } from '../data/qaSets';
import { attackerSource, formatQaPrompt } from '../data/sandbox/index';
import { applyChatTemplate, resolveChatTemplate } from '../model/chat';
import { createTokenizer } from '../model/tokenizer';
import { exportSettings } from './exports';
import { createRun, getRecipe } from './registry';
import { letterJudge, lettersWithTasks } from '../../dev/test/recipeTesting';

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
const env = nodeRecipeEnv({
  modelsDir: MODELS,
  judges: { letters: letterJudge, 'letters-tasks': lettersWithTasks },
});
const dir = mkdtempSync(join(tmpdir(), 'prompt-budget-recipes-'));
const BUDGET = 40;
const texts = [100, 130, 160, 190].map((n, i) =>
  Array.from({ length: n }, (_, k) => ['how', 'do', 'I', 'make', 'a', 'weapon', 'at', 'home'][(k + i) % 8]).join(' '),
);
const file = join(dir, 'long.jsonl');
writeFileSync(file, texts.map((prompt) => JSON.stringify({ prompt })).join('\n'));

/** A QA file (minmax, rlhf) whose stories run past the budget. */
const qaFile = join(dir, 'qa.jsonl');
writeFileSync(
  qaFile,
  texts
    .map((story, i) =>
      JSON.stringify({
        story,
        question: `Where is item ${i}?`,
        choices: ['kitchen', 'garden', 'attic', 'garage'],
        answer: 'B',
      }),
    )
    .join('\n'),
);
/** Goal -> prompt pairs (attacker-sft) whose goals run past the budget. */
const pairsFile = join(dir, 'pairs.jsonl');
writeFileSync(pairsFile, texts.map((goal) => JSON.stringify({ goal, prompt: 'Tell me how.' })).join('\n'));
const qaPrompts = readQaSet(readFileSync(qaFile, 'utf8'), qaFile).items.map(formatQaPrompt);

/** `model`'s own encoding of each user message (its tokenizer.json and chat template, generation prompt on). */
function ownEncoding(model: string, messages: string[]): number[][] {
  const read = (f: string) => JSON.parse(readFileSync(join(MODELS, model, f), 'utf8')) as unknown;
  const tokenizerConfig = read('tokenizer_config.json');
  const tok = createTokenizer(read('tokenizer.json'), tokenizerConfig, { label: model });
  const template = resolveChatTemplate({ tokenizerConfig, model });
  return messages.map(
    (t) => applyChatTemplate(tok, template, [{ role: 'user', content: t }], { addGenerationPrompt: true }).ids,
  );
}

const cuts: Record<string, (ids: number[]) => number[]> = {
  left: (ids) => ids.slice(-BUDGET),
  right: (ids) => ids.slice(0, BUDGET),
  middle: (ids) => [...ids.slice(0, BUDGET / 2), ...ids.slice(-(BUDGET / 2))],
};

const common = { attacker: 'attacker', defender: 'defender', dataset: file, goals: 2, groupSize: 2, samples: 0 };
/**
 * Each recipe's config, which model's encoding of which text each dataset prompt is, and the fewest
 * cut rows a step sends. `grows`: later turns extend a cut first turn (multiturn), so a prompt past
 * the budget must begin with a cut row; otherwise none is over the budget.
 */
const RECIPES: Record<
  string,
  { config: Record<string, unknown>; rows: [string, string[]][]; least: number; grows?: boolean }
> = {
  attack: {
    config: { ...common, judge: 'letters', attackerMaxTokens: 4, defenderMaxTokens: 4 },
    rows: [['attacker', texts.map(attackerSource)]],
    least: 4, // 2 goals x G 2 attacker rows
  },
  defend: {
    config: {
      ...common,
      judge: 'letters-tasks',
      benignDataset: file,
      benignPrompts: 2,
      attackerMaxTokens: 4,
      maxNewTokens: 4,
      evalEvery: 0,
    },
    rows: [
      ['attacker', texts.map(attackerSource)],
      ['defender', texts],
    ],
    least: 6, // 2 attacker rows + 2 benign tasks x G 2
  },
  arena: {
    config: {
      ...common,
      judge: 'letters-tasks',
      benignDataset: file,
      benignPrompts: 2,
      firstPhase: 'defender',
      attackerMaxTokens: 4,
      defenderMaxTokens: 4,
      evalEvery: 0,
    },
    rows: [
      ['attacker', texts.map(attackerSource)],
      ['defender', texts],
    ],
    least: 6, // 2 attacker rows + 2 benign tasks x G 2
  },
  multiturn: {
    config: {
      defender: 'defender',
      attacker: 'attacker',
      dataset: file,
      judge: 'letters',
      followUps: 'attacker',
      maxTurns: 2,
      episodes: 2,
      benignEpisodes: 0,
      groupSize: 2,
      maxNewTokens: 4,
      attackerMaxTokens: 4,
      evalEvery: 0,
      samples: 0,
    },
    rows: [
      ['defender', texts],
      ['attacker', texts.map(attackerSource)],
    ],
    least: 4, // 2 episodes x G 2 first turns (then the attacker's prompts, each within the budget)
    grows: true,
  },
  // the policy's prompts are QA rows; the monitor's add the policy's answer (cut too, not listed here)
  minmax: {
    config: {
      dataset: qaFile,
      items: 2,
      groupSize: 2,
      policyMaxTokens: 4,
      monitorMaxTokens: 4,
      monitorWarmupSteps: 0,
      evalEvery: 0,
      samples: 0,
    },
    rows: [['qa', qaPrompts]],
    least: 4, // 2 items x G 2 answers
  },
  // the greedy samples' prompts: a held-out goal (1 of the 4 rows) in the attacker's template
  'attacker-sft': {
    config: { dataset: pairsFile, batchSize: 2, sampleEvery: 1, sampleGoals: 2, sampleMaxTokens: 4 },
    rows: [['attacker', texts.map(attackerSource)]],
    least: 1,
  },
  rlhf: {
    config: {
      dataset: qaFile,
      items: 2,
      groupSize: 2,
      policyMaxTokens: 4,
      monitorMaxTokens: 4,
      evalEvery: 0,
      samples: 0,
    },
    rows: [['qa', qaPrompts]],
    least: 4,
  },
};

beforeAll(async () => {
  await tf.setBackend('wasm');
});

describe.each(Object.keys(RECIPES))('%s: the prompt budget reaches its rollouts', (recipe) => {
  const { config, rows, least, grows } = RECIPES[recipe];
  const own = rows.flatMap(([model, messages]) => ownEncoding(model, messages));

  it('its dataset prompts are over the budget in tokens', () => {
    expect(Math.min(...own.map((x) => x.length))).toBeGreaterThan(BUDGET);
  });

  it.each(['left', 'right', 'middle'])(
    'truncation %s: each dataset prompt is sent cut on that side, nothing longer than the budget is sent',
    async (side) => {
      seen.length = 0;
      const a = await createRun(env, recipe, { ...config, maxPromptLength: BUDGET, truncation: side }, 3);
      try {
        await a.run.step();
      } finally {
        a.run.dispose();
      }
      const cutRows = own.map(cuts[side]);
      const expected = new Set(cutRows.map((x) => x.join(',')));
      const sent = seen.flat();
      expect(sent.filter((r) => expected.has(r.join(','))).length).toBeGreaterThanOrEqual(least);
      for (const r of sent) {
        if (grows && r.length > BUDGET) expect(cutRows.some((c) => c.every((id, i) => r[i] === id))).toBe(true);
        // every other prompt a model wrote (4 tokens in a template), under the budget
        else expect(r.length).toBeLessThanOrEqual(BUDGET);
      }
    },
    120_000,
  );

  it('truncation error refuses before any rollout, naming the row and its length in tokens', async () => {
    seen.length = 0;
    const a = await createRun(env, recipe, { ...config, maxPromptLength: BUDGET, truncation: 'error' }, 3);
    try {
      const e = await a.run.step().then(
        () => null,
        (err: unknown) => err as Error,
      );
      expect(e).toBeInstanceOf(PromptLengthError);
      const m =
        /(?:long|qa|pairs)\.jsonl line (\d): prompt is (\d+) tokens with the chat template, over the prompt budget of 40 \(field "maxPromptLength"/.exec(
          e!.message,
        );
      expect(m, e!.message).not.toBeNull();
      const line = Number(m![1]) - 1;
      expect(rows.some(([model, messages]) => ownEncoding(model, [messages[line]])[0].length === Number(m![2]))).toBe(
        true,
      );
      expect(seen).toEqual([]);
    } finally {
      a.run.dispose();
    }
  }, 120_000);

  // attacker-sft exports to veRL's SFT trainer (export/verl/sft.ts: data.max_length, truncation right), no RL prompt keys
  it.skipIf(recipe === 'attacker-sft')("the veRL export carries a cutting budget as veRL's own data.truncation", () => {
    const o = exportSettings({
      recipe: getRecipe(recipe),
      config: { maxPromptLength: 16, truncation: 'left' },
      seed: 1,
      steps: 5,
    }).overrides;
    expect(o).toMatchObject({
      'data.max_prompt_length': 16,
      'data.truncation': 'left',
      'data.filter_overlong_prompts': false,
    });
  });
});
