// `attacker-sft` — MTSA phase 1: supervised LoRA fine-tuning of the attacker on goal ->
// adversarial-prompt pairs. The attacker reads `Goal: <goal>` as the user turn and learns to
// write the prompt as its assistant turn; the loss is the mean NLL of the target tokens only
// (the assistant content and its end-of-turn token), never of the goal or the template.
//
// Data: the sandbox's attackerSft pairs (seeded), or uploaded JSONL rows {"goal", "prompt"}
// (a crescendo target is its turns joined by "\n"). Every report also shows what the attacker
// writes now: greedy prompts for held-out goals and the tactic mix they fall into (detectTactic).
import { budgetFit, promptBudgetFields } from '../kit/promptBudget';
import { promptRows } from '../kit/rollout';
import { attackerSft, attackerSource, rngFor, sandboxSplitInfo, TACTICS, type Tactic } from '../../data/sandbox/index';
import { stripBom } from '../../contract/datasetLoaders';
import { brief, briefText } from '../../contract/brief';
import { DATA_SPLIT_SEED, EVAL_SHARE, splitMetrics, splitRows, type SplitInfo } from '../../data/split';
import { columnsOf, readPromptSet } from '../../contract/promptSets';
import { generate } from '../../model/generate';
import type { LoraSet } from '../../model/lora';
import { hash3 } from '../../model/random';
import { AdamW } from '../../rl/optim';
import { meanOf, tokenTrace, drawBatch } from '../kit/common';
import { createWithCleanup, LoraRun, PhaseTimer, type StepBody } from '../kit/run';
import { attachConfiguredLora, loraFields } from '../kit/commonFields';
import { encodeSftPair, sftStep } from '../kit/sft';

export { encodeSftPair };
import { tacticOf } from '../kit/goals';
import type { Metrics, RolloutSample } from '../../contract/report';
import { int, num, str, type ConfigOf } from '../../contract/schema';
import { weightsField } from '../../contract/weightFields';
import type { LoadedModel, Recipe, RecipeEnv, RecipeRun } from '../kit/types';
import { attackerSftLesson } from './lesson';

export const attackerSftSchema = {
  attacker: str('attacker', 'model to fine-tune: a sandbox name (public/models/NAME), a folder path or a URL', {
    nonEmpty: true,
  }),
  attackerWeights: weightsField('attacker'),
  dataset: str(
    'sandbox',
    'training pairs: "sandbox" (the seeded attackerSft data) or a JSONL file / URL of rows {"goal": ..., "prompt": ...}',
    { nonEmpty: true },
  ),
  dataSize: int(2000, 'pairs drawn from the sandbox data (ignored for a JSONL dataset)', { min: 1, max: 1000000 }),
  batchSize: int(16, 'pairs per step', { min: 1, max: 1024 }),
  lr: num(
    2e-3,
    'AdamW learning rate (MTSA trains QLoRA at 2e-4 on 7B models; the tiny sandbox attacker needs a larger step)',
    { min: 0, max: 1 },
  ),
  weightDecay: num(0, 'AdamW decoupled weight decay', { min: 0, max: 1 }),
  maxGradNorm: num(1, 'global gradient-norm clip', { min: 1e-6, max: 1e6 }),
  ...loraFields({ rank: 8, alpha: 16 }, 'MTSA: QLoRA r 16 / alpha 32; 8 / 16 suffices for the sandbox attacker'),
  maxTargetTokens: int(128, 'targets are cut to this many tokens (sandbox targets are <= 99 bytes)', {
    min: 1,
    max: 4096,
  }),
  sampleEvery: int(
    1,
    'every N steps, write greedy prompts for held-out goals and report their tactic mix (0 = never)',
    { min: 0, max: 100000 },
  ),
  sampleGoals: int(8, 'held-out goals of the greedy samples', { min: 1, max: 512 }),
  ...promptBudgetFields(
    "the attacker's prompt of each greedy sample (a held-out dataset goal in the attacker's template); the training pairs are SFT rows, not a rollout (their targets are cut to maxTargetTokens)",
  ),
  sampleMaxTokens: int(64, 'length cap of a greedy sample in tokens', { min: 1, max: 1024 }),
};
export type AttackerSftConfig = ConfigOf<typeof attackerSftSchema>;

export interface GoalPromptPair {
  goal: string;
  prompt: string;
  /** The row it came from (`<file>:<line>`), for the prompt budget's message. */
  id?: string;
}

/** Parses JSONL rows {"goal", "prompt"}; errors name the file, the line and the field. Blank lines are skipped. */
/**
 * Goal -> prompt pairs from JSONL (parseGoalPromptJsonl: every row must be whole) or CSV with
 * `goal` and `prompt` columns (contract/promptSets.ts: rows without a prompt are left out).
 */
export function parseGoalPromptPairs(text: string, label: string): GoalPromptPair[] {
  if (
    text
      .trimStart()
      .replace(/^\uFEFF/, '')
      .startsWith('{')
  )
    return parseGoalPromptJsonl(text, label);
  const set = readPromptSet(text, label, { prompt: 'prompt' });
  const cols = columnsOf(text, label).map((c) => c.toLowerCase());
  if (!cols.includes('goal'))
    throw new Error(`${label}: a CSV of pairs needs a "goal" and a "prompt" column (columns: ${cols.join(', ')})`);
  return set.rows.map((r) => ({
    id: `${label}:${r.line}`,
    goal: r.goal,
    prompt: typeof r.prompt === 'string' ? r.prompt : r.prompt.map((t) => t.content).join('\n'),
  }));
}

export function parseGoalPromptJsonl(text: string, label: string): GoalPromptPair[] {
  const out: GoalPromptPair[] = [];
  stripBom(text)
    .split(/\r?\n/)
    .forEach((line, i) => {
      if (line.trim() === '') return;
      let row: unknown;
      try {
        row = JSON.parse(line);
      } catch (e) {
        throw new Error(`${label}:${i + 1}: not valid JSON: ${briefText((e as Error).message, 120)}`);
      }
      if (!row || typeof row !== 'object' || Array.isArray(row))
        throw new Error(`${label}:${i + 1}: a row must be a JSON object {"goal", "prompt"}`);
      const r = row as Record<string, unknown>;
      for (const f of ['goal', 'prompt'] as const) {
        if (typeof r[f] !== 'string' || (r[f] as string).trim() === '') {
          throw new Error(
            `${label}:${i + 1}: field "${f}" must be a non-empty string, got ${brief(r[f])} (row fields: ${briefText(Object.keys(r).join(', '), 120) || 'none'})`,
          );
        }
      }
      out.push({ id: `${label}:${i + 1}`, goal: r.goal as string, prompt: r.prompt as string });
    });
  if (out.length === 0) throw new Error(`${label}: no rows`);
  return out;
}

/** Share of each tactic among prompts (all nine keys). */
export function tacticMix(prompts: readonly string[]): Record<Tactic, number> {
  const mix = Object.fromEntries(TACTICS.map((t) => [t, 0])) as Record<Tactic, number>;
  for (const p of prompts) {
    mix[tacticOf(p)] += 1 / Math.max(1, prompts.length);
  }
  return mix;
}

/** Training pairs, the held-out goals the greedy samples are written for (never trained on), and the split. */
export interface AttackerSftData {
  train: GoalPromptPair[];
  heldOutGoals: string[];
  /** The row of each held-out goal (a file's `<file>:<line>`, a sandbox goal's id). */
  heldOutIds: string[];
  split: SplitInfo;
}

/** Sandbox pairs on the train goals; held-out goals from the eval goals (data/sandbox/split.ts). */
export function sandboxAttackerSftData(
  config: Pick<AttackerSftConfig, 'dataSize' | 'sampleGoals'>,
  seed: number,
): AttackerSftData {
  const held = attackerSft(config.sampleGoals, hash3(seed, 0xa77, 1) >>> 0, { split: 'eval' });
  return {
    train: attackerSft(config.dataSize, seed, { split: 'train' }).map((e) => ({ goal: e.goal, prompt: e.target })),
    heldOutGoals: held.map((e) => e.goal),
    heldOutIds: held.map((e) => e.id),
    split: sandboxSplitInfo(),
  };
}

/**
 * An uploaded file's rows split by row (seeded, data/split.ts): a quarter held out. Held-out goals
 * are the first sampleGoals held-out rows' goals; a goal that also has a training row is skipped,
 * so no held-out goal was trained on.
 */
export function uploadedAttackerSftData(
  rows: GoalPromptPair[],
  config: Pick<AttackerSftConfig, 'dataset' | 'sampleGoals'>,
): AttackerSftData {
  if (rows.length < 2)
    throw new Error(
      `${config.dataset}: ${rows.length} row(s); attacker-sft needs at least 2 to hold one out for evaluation`,
    );
  const s = splitRows(rows, EVAL_SHARE, DATA_SPLIT_SEED);
  const trained = new Set(s.train.map((r) => r.goal));
  const firstRow = new Map<string, string>();
  for (const r of s.eval) if (!trained.has(r.goal) && !firstRow.has(r.goal)) firstRow.set(r.goal, r.id ?? r.goal);
  const held = [...firstRow].slice(0, config.sampleGoals);
  const heldOutGoals = held.map(([g]) => g);
  if (heldOutGoals.length === 0)
    throw new Error(
      `${config.dataset}: every held-out row's goal also has a training row; no goal is left to evaluate on (use distinct goals)`,
    );
  return { train: s.train, heldOutGoals, heldOutIds: held.map(([, id]) => id), split: s.info };
}

class AttackerSftRun extends LoraRun {
  readonly recipe = 'attacker-sft';

  constructor(
    private readonly m: LoadedModel,
    readonly lora: LoraSet,
    readonly optimizer: AdamW,
    private readonly data: AttackerSftData,
    readonly config: AttackerSftConfig,
    readonly seed: number,
  ) {
    super();
  }

  private get pairs(): GoalPromptPair[] {
    return this.data.train;
  }

  private get heldOut(): string[] {
    return this.data.heldOutGoals;
  }

  private batch(step: number): GoalPromptPair[] {
    return drawBatch(this.pairs, this.config.batchSize, rngFor(this.seed, 'attacker-sft-batch', step));
  }

  protected async runStep(step: number): Promise<StepBody> {
    const c = this.config;
    const { model, codec } = this.m;
    const clock = new PhaseTimer();

    // --- learn: target-only NLL
    const enc = this.batch(step).map((p) => encodeSftPair(codec, attackerSource(p.goal), p.prompt, c.maxTargetTokens));
    const r = await sftStep({ model, lora: this.lora, optimizer: this.optimizer }, enc, {
      pad: codec.pad,
      lr: c.lr,
      maxGradNorm: c.maxGradNorm,
    });
    const nTok = r.targetTokens;
    const learnMs = clock.mark('learn_ms');

    const metrics: Metrics = {
      'loss/sft': r.loss,
      'grad/norm': r.gradNorm,
      'grad/skipped': r.skipped ? 1 : 0,
      'optim/lr': c.lr,
      'batch/target_tokens': nTok,
    };

    // --- greedy samples and their tactic mix
    const samples: RolloutSample[] = [];
    if (c.sampleEvery > 0 && step % c.sampleEvery === 0) {
      const ids = promptRows(codec, this.heldOut.map(attackerSource), budgetFit(c, this.data.heldOutIds));
      const g = await generate(model, ids, {
        maxNewTokens: c.sampleMaxTokens,
        greedy: true,
        stopTokens: [...codec.eos],
        padTokenId: codec.pad,
      });
      const texts = g.tokens.map((t, b) => codec.decode(t.slice(0, g.lengths[b])));
      const mix = tacticMix(texts);
      for (const t of TACTICS) metrics[`tactic/${t}`] = mix[t];
      metrics['sample/distinct'] = new Set(texts).size / Math.max(1, texts.length);
      metrics['sample/length_mean'] = meanOf(g.lengths);
      Object.assign(metrics, splitMetrics(this.data.split));
      texts.forEach((text, b) => {
        const n = g.lengths[b];
        const tactic = tacticOf(text);
        samples.push({
          id: `attacker-sft-${this.seed}-${step}-${b}`,
          promptKey: `goal-${b}`,
          group: b,
          tactic,
          messages: [
            { role: 'user', text: attackerSource(this.heldOut[b]) },
            {
              role: 'attacker',
              text,
              tokens: tokenTrace(codec, g.tokens[b].slice(0, n), g.logprobs[b].slice(0, n), g.entropy[b].slice(0, n)),
            },
          ],
          verdict: { label: `tactic: ${tactic}`, unsafe: 0, refused: false, success: false },
          reward: 0,
          terms: {},
        });
      });
    }
    // The greedy samples are this recipe's rollout phase; it scores nothing.
    clock.mark('rollout_ms');
    metrics['perf/step_ms'] = clock.elapsed();
    metrics['perf/tokens_per_s'] = nTok / Math.max(1e-9, learnMs / 1000);
    return { metrics, samples, timings: clock.timings() };
  }

  protected held() {
    return [this.m];
  }
}

export const attackerSftRecipe: Recipe<typeof attackerSftSchema> = {
  lesson: attackerSftLesson,
  name: 'attacker-sft',
  title: 'Attacker SFT (goal -> adversarial prompt)',
  source: 'MTSA-RLVR phase 1',
  description:
    'Supervised LoRA fine-tuning of the attacker on goal -> adversarial-prompt pairs (sandbox data or an uploaded JSONL), ' +
    'loss on the prompt tokens only; reports the tactic mix of the prompts it writes for held-out goals.',
  schema: attackerSftSchema,
  modelField: 'attacker',
  async create(env: RecipeEnv, config: AttackerSftConfig, seed: number): Promise<RecipeRun> {
    let data: AttackerSftData;
    if (config.dataset === 'sandbox') data = sandboxAttackerSftData(config, seed);
    else {
      if (!env.readText)
        throw new Error(
          `attacker-sft: field "dataset" names a file (${config.dataset}) but this environment cannot read files`,
        );
      data = uploadedAttackerSftData(parseGoalPromptPairs(await env.readText(config.dataset), config.dataset), config);
    }
    return createWithCleanup(async (own) => {
      const m = own(await env.loadModel(config.attacker, { weights: config.attackerWeights }));
      const lora = attachConfiguredLora(m.model, config, hash3(seed, 0x10a, 1));
      const optimizer = new AdamW({ lr: config.lr, weightDecay: config.weightDecay });
      return new AttackerSftRun(m, lora, optimizer, data, config, seed);
    });
  },
};
