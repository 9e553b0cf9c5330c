// The GRPO-family step, written once (issue 45): draw the step's generation batch (roll out and
// score), build its groups (DAPO dynamic sampling when filterGroups is on, dynamicGroups.ts),
// compute advantages and learn (learnFromOutcomes), step the KL-in-reward controller, and report
// the metrics and samples every such step reports. A recipe declares what differs: how a batch is
// rolled out and scored (its players, prompts and reward), its filter metric, its own metrics and
// the anatomy of a sample; hooks cover what a paper adds (ReMax baselines, z-scored rewards, a
// per-token KL penalty, a held-out evaluation before the step, an early stop after it).
// An algorithm option added to learnFromOutcomes / drawGroups reaches every recipe through here.
// A game whose updates share one rollout (minmax, rlhf) runs sharedRolloutStep: the same learning
// tail, with its two timescales and its dual ascent as named hooks.
import type { AdvantageOutput } from '../../rl/advantages';
import { std } from '../../rl/stats';
import type { TokenMatrix } from '../../rl/types';
import type { Metrics, RolloutSample } from '../../contract/report';
import type { GenerateResult } from '../../model/generate';
import type { LlamaModel } from '../../model/llama';
import type { LoraSet } from '../../model/lora';
import type { AdamW } from '../../rl/optim';
import {
  checkFiniteRewards,
  learnFromOutcomes,
  meanOf,
  spreadRows,
  type KlCtrl,
  type LearnTokens,
  type OutcomeLearning,
  type ValueCritic,
} from './common';
import { dynamicSamplingMetrics } from '../../rl/dynamicSampling';
import {
  byFilterMetric,
  drawGroups,
  genBatchStep,
  selectGroups,
  type FilterGroupsOptions,
  type GroupedBatch,
} from './dynamicGroups';
import { selectGenRows, selectMatrixRows, type GenRows } from './genRows';
import { PhaseTimer } from './run';

/** The per-row column every step reads: the reward of each row. */
export interface ScoredRows {
  rewards: number[];
  [column: string]: readonly unknown[];
}

/** A scored generation batch (multiturn's: episodes, learned through its own hook). */
export type ScoredBatch = GroupedBatch<ScoredRows, Record<string, readonly unknown[]>, string, string>;

/** The per-row columns the default update reads besides the reward: prompt ids and the mean sampled-token KL. */
export interface PolicyRows extends ScoredRows {
  rows: number[][];
  kl: number[];
}

/** A single-turn batch of the trained player: its generation `gen` and reference log-probs `refLogp`. */
export type PolicyBatch = GroupedBatch<PolicyRows, Record<string, readonly unknown[]>, 'gen', 'refLogp'>;

/** What the step learned from a batch. */
export interface Learned {
  advantages: AdvantageOutput;
  learn: Metrics;
}

/** The config fields the step reads (commonFields: filterGroupsFields, policyGradientFields, trainingFields, ...). */
export type GroupStepConfig = Omit<OutcomeLearning, 'temperature'> &
  FilterGroupsOptions & { filterGroupsMetric: string; groupSize: number; samples: number };

/** What every recipe declares: its config, how a batch is drawn and scored, its filter metric. */
export interface StepDeclaration<B extends ScoredBatch> {
  config: GroupStepConfig;
  /** Rolls out and scores the generation batch seeded by step `s` (genBatchStep); marks rollout_ms on `t`. */
  draw(s: number, t: PhaseTimer): Promise<B>;
  /** filterGroupsMetric's values: acc and seq_reward (before the KL penalty); seq_final_reward = rewards. */
  filterMetric: { acc: (b: B) => ArrayLike<number>; seq_reward: (b: B) => ArrayLike<number> };
}

/** The default update, learnFromOutcomes on the trained player, and the hooks it offers. */
export interface OutcomeUpdate<B extends PolicyBatch> {
  /** The trained player (its LoRA, optimiser and, for gae, critic) and the ids that pad / stop its rows. */
  learner: { model: LlamaModel; lora: LoraSet; optimizer: AdamW; critic?: ValueCritic | null };
  tokens: LearnTokens;
  /** Temperature the player sampled at (its log-probs are taken at it). */
  temperature: number;
  /** The KL-in-reward controller, stepped on the batch's row KL after learning. */
  klCtrl?: KlCtrl;
  /** The scores advantages are computed from (default: the rewards). */
  scores?(b: B): number[];
  /** ReMax: per row, the reward of a greedy rollout of its prompt (after the batch is drawn). */
  rewardBaselines?(b: B): Promise<number[] | undefined>;
  /** Per-token penalty [B, T] subtracted from the token rewards (KL in the reward per token). */
  tokenPenalty?(b: B): TokenMatrix | undefined;
  /** Replaces the RL update where a paper does another (Token Buncher's TokenNoiser SFT steps). */
  learn?(b: B): Promise<Learned>;
}

/** An update of the recipe's own (multiturn's episodes); it marks score_ms and learn_ms on `t`. */
export interface OwnUpdate<B extends ScoredBatch> {
  learn(b: B, t: PhaseTimer): Promise<Learned>;
}

/** The drawn batch, what dynamic sampling reported, and what was learned. */
export interface GroupStepResult<B extends ScoredBatch> extends Learned {
  batch: B;
  filter: Metrics;
  /** The KL-in-reward coefficient the batch was scored with (before the controller's update; 0 without one). */
  beta: number;
}

/**
 * One GRPO-family step: what the recipe declares, and either the default update with its hooks
 * (single-turn batches of the trained player) or an update of its own (multiturn's episodes).
 * Draw (with dynamic sampling), learn, update the KL controller. Phases are timed on `t`: the
 * recipe's draw marks rollout_ms, scoring and baselines count as score_ms, the update as learn_ms.
 */
export function groupStep<B extends PolicyBatch>(
  step: number,
  t: PhaseTimer,
  spec: StepDeclaration<B> & OutcomeUpdate<B>,
): Promise<GroupStepResult<B>>;
export function groupStep<B extends ScoredBatch>(
  step: number,
  t: PhaseTimer,
  spec: StepDeclaration<B> & OwnUpdate<B>,
): Promise<GroupStepResult<B>>;
export async function groupStep<B extends ScoredBatch>(
  step: number,
  t: PhaseTimer,
  spec: StepDeclaration<B> & (OutcomeUpdate<PolicyBatch> | OwnUpdate<B>),
): Promise<GroupStepResult<B>> {
  const c = spec.config;
  const drawn = await drawGroups(
    c,
    async (gb) => {
      const b = await spec.draw(genBatchStep(step, gb), t);
      t.mark('score_ms');
      return b;
    },
    (b) =>
      byFilterMetric(c.filterGroupsMetric, {
        acc: () => spec.filterMetric.acc(b),
        seq_reward: () => spec.filterMetric.seq_reward(b),
        seq_final_reward: b.row.rewards,
      }),
  );
  if (!('learner' in spec)) {
    const own = await (spec as OwnUpdate<B>).learn(drawn.batch, t);
    return { batch: drawn.batch, filter: drawn.metrics, ...own, beta: 0 };
  }
  const p = spec as unknown as OutcomeUpdate<PolicyBatch>;
  const b = drawn.batch as unknown as PolicyBatch;
  const beta = p.klCtrl?.value ?? 0;
  const gen = b.gens.gen.gen;
  const scores = p.scores ? p.scores(b) : b.row.rewards;
  const rewardBaselines = p.rewardBaselines ? await p.rewardBaselines(b) : undefined;
  t.mark('score_ms');
  const { advantages, learn } = p.learn
    ? await p.learn(b)
    : await learnRows(
        p,
        { prompts: b.row.rows, responses: gen.tokens, mask: gen.mask, logprobs: gen.logprobs, rewardBaselines },
        b.mats.refLogp,
        scores,
        b.group,
        c,
        p.tokenPenalty?.(b),
      );
  p.klCtrl?.update(b.row.kl);
  t.mark('learn_ms');
  return { batch: drawn.batch, filter: drawn.metrics, advantages, learn, beta };
}

/** The learning tail every step shares: learnFromOutcomes on the trained player at the temperature it sampled at. */
const learnRows = (
  p: Pick<OutcomeUpdate<PolicyBatch>, 'learner' | 'tokens' | 'temperature'>,
  rollout: Parameters<typeof learnFromOutcomes>[1],
  refLogp: TokenMatrix,
  scores: number[],
  groups: number[],
  c: Omit<OutcomeLearning, 'temperature'>,
  tokenPenalty?: TokenMatrix,
): Promise<Learned> =>
  learnFromOutcomes(
    p.learner,
    rollout,
    refLogp,
    scores,
    groups,
    { ...c, temperature: p.temperature },
    p.tokens,
    tokenPenalty,
  );

/** The trained player's rows of a shared rollout: prompts and generation, reference log-probs, mean sampled-token KL, group. */
export interface SharedRows {
  gen: GenRows;
  refLogp: TokenMatrix;
  kl: number[];
  group: number[];
}

/**
 * A step of a game whose updates share one rollout (minmax: a TTUR cycle's k monitor updates and
 * its policy update learn from the batch rolled out at the cycle's start; rlhf: one policy update
 * per rollout). The recipe draws the rollout (its groups filled for every player that learns from
 * it, drawUntilFilled) and names what its paper adds as hooks: `timescale` (two timescales: the
 * player this step updates and its learning rate), `dualAscent` (the multiplier of a constraint,
 * stepped on the whole rollout before the update's rewards are read) and `rewards` (the updating
 * player's, before the KL in the reward). The kit subtracts the KL-in-reward term, keeps the
 * update's first `target` varying groups (filterGroups, on its own rewards), learns and steps
 * the KL controller, as groupStep does.
 */
export interface SharedRolloutStep<B extends { rows: SharedRows }> extends Pick<
  OutcomeUpdate<PolicyBatch>,
  'learner' | 'tokens' | 'temperature' | 'klCtrl'
> {
  recipe: string;
  config: Omit<GroupStepConfig, 'lr'>;
  /** Two timescales (TTUR): the player that updates at this step and its learning rate. */
  timescale: { player: string; lr: number };
  /** The rollout this update learns from (drawn now, or its cycle's), its generation batches joined; marks rollout_ms. */
  rollout(step: number, t: PhaseTimer): Promise<{ batch: B; genBatches: number; target: number }>;
  /** Dual ascent: steps the constraint's multiplier on the rollout before `rewards` reads it. */
  dualAscent?(b: B): void;
  /** The updating player's reward of each row, before the KL penalty (seq_reward). */
  rewards(b: B): number[];
  /** filterGroupsMetric acc: whether each row is right. */
  acc(b: B): ArrayLike<number>;
  /** What a non-finite reward's error names about row r besides its index. */
  rewardDetail(b: B, r: number, base: readonly number[]): string;
}

/** What an update of a shared rollout learned from: the rows it kept (indices into the rollout) and theirs. */
export interface SharedStepResult<B> extends Learned {
  batch: B;
  filter: Metrics;
  beta: number;
  kept: number[];
  gen: GenRows;
  kl: number[];
  rewards: number[];
  groups: number[];
}

/** One update of a shared rollout (see SharedRolloutStep); scoring is timed as score_ms, the update as learn_ms. */
export async function sharedRolloutStep<B extends { rows: SharedRows }>(
  step: number,
  t: PhaseTimer,
  spec: SharedRolloutStep<B>,
): Promise<SharedStepResult<B>> {
  const c = spec.config;
  const { batch, genBatches, target } = await spec.rollout(step, t);
  const all = batch.rows;
  spec.dualAscent?.(batch);
  const base = spec.rewards(batch);
  const beta = spec.klCtrl?.value ?? 0;
  const rewardsAll = base.map((x, r) => x - beta * all.kl[r]);
  checkFiniteRewards(spec.recipe, rewardsAll, (r) => spec.rewardDetail(batch, r, base));
  // The rows this update learns from: all, or (filterGroups) the first `target` groups whose
  // metric varies; none kept -> the whole rollout, whose policy term is then zero.
  let kept = base.map((_, r) => r);
  let filter: Metrics = {};
  if (c.filterGroups) {
    const metric = byFilterMetric(c.filterGroupsMetric, {
      acc: () => spec.acc(batch),
      seq_reward: () => base,
      seq_final_reward: rewardsAll,
    });
    const s = selectGroups(target, c, { metric, index: all.group });
    filter = dynamicSamplingMetrics({ ...s, genBatches }, target);
    if (s.keptGroups > 0) kept = s.rows[0];
  }
  const whole = kept.length === base.length;
  const gen = whole ? all.gen : selectGenRows(all.gen, kept);
  const refLogp = whole ? all.refLogp : selectMatrixRows(all.refLogp, kept);
  const kl = kept.map((r) => all.kl[r]);
  const rewards = kept.map((r) => rewardsAll[r]);
  const groups = kept.map((r) => all.group[r]);
  t.mark('score_ms');
  const { advantages, learn } = await learnRows(
    spec,
    { prompts: gen.rows, responses: gen.gen.tokens, mask: gen.gen.mask, logprobs: gen.gen.logprobs },
    refLogp,
    rewards,
    groups,
    { ...c, lr: spec.timescale.lr },
  );
  spec.klCtrl?.update(kl);
  t.mark('learn_ms');
  return { batch, filter, beta, kept, gen, kl, rewards, groups, advantages, learn };
}

/** The metrics every GRPO-family step reports: learning, dynamic sampling, reward spread, skipped rows. */
export function groupMetrics(r: GroupStepResult<ScoredBatch>): Metrics {
  const rewards = r.batch.row.rewards;
  return {
    ...r.learn,
    ...r.filter,
    'reward/mean': meanOf(rewards),
    'reward/std': std(rewards, false),
    'batch/skipped_rows': r.advantages.zeroAdvantageRows.reduce((a, x) => a + x, 0),
  };
}

/** Sampled tokens per second of the step's rollouts (all generations `gens`), from the timer's rollout phase. */
export function tokensPerSecond(t: PhaseTimer, gens: readonly GenerateResult[]): number {
  const tokens = gens.reduce((s, g) => s + g.lengths.reduce((a, x) => a + x, 0), 0);
  return tokens / Math.max(1e-9, t.timings().rollout_ms / 1000);
}

/** The report's samples: `n` rows spread over the batch's groups (first rows first), each as the recipe draws it. */
export const groupSamples = <B extends ScoredBatch>(
  r: GroupStepResult<B>,
  c: { groupSize: number; samples: number },
  sample: (row: number) => RolloutSample,
): RolloutSample[] => spreadRows(r.batch.groups, c.groupSize, c.samples).map(sample);
