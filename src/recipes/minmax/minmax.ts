// `minmax` — the Monitor-vs-LLM game on the sandbox QA items. The QA policy and the monitor are
// each a copy of a sandbox model (the defender by default) trained through its own LoRA adapter.
// Every step is one update of one player, on the two-timescale schedule (rl/minmax tturSchedule):
// k monitor updates at the higher learning rate, then one policy update, and again. One step:
//
//   items     `items` QA items from a seeded pool by (seed, step of the rollout)
//   rollout   G sampled answers per item (groups = items), one sampled critique each; with
//             rolloutSharing = update, a monitor step samples one answer per item and G critiques
//             each (groups = answers) instead
//   score     truth t = the answer's single [ANSWER:X] is the correct choice (1) or not (0)
//             verdict v from the critique text only: CORRECT 1 / INCORRECT 0 / unclear 0.2
//             J = +1 / -1 / 0 from the same verdict (see below)
//             RM(O), RM(O') from the reward model (minmaxRm.ts; the blind stand-in by default)
//             R = 0.5 clamp(RM(O), -15, 15) + 0.5 x 5 x J                      (policy reward)
//             F = 0.6 x 15 x MSE(v, t) + 0.4 x (-clamp(mean RM(O'), -15, 15))  (fidelity, want F <= delta)
//             lambda <- clip(lambda + 0.25 (mean F - delta), 0, 30), once per TTUR cycle, at its
//             first update and before that update's rewards (the source: "before the monitor
//             update to avoid one-step lag"); lambda0 10, delta -3.6
//             monitor reward = -10 J - lambda F (the source's code) or -R - lambda F (its README)
//   learn     GRPO over each group, PPO clip, AdamW on the trained player's adapter; both rewards
//             minus klBeta x the player's mean sampled-token KL to its model with LoRA off
//
// Rollouts. The source rolls out ONE batch per TTUR cycle and runs its five monitor PPO updates
// and its one policy update on it: rolloutSharing = cycle (default) does the same: the batch of
// the cycle's first step (G answers per item, one critique each) is kept, in the checkpoint too,
// and every update of the cycle learns from it with the rollout's log-probs as the old policy
// (so from the second monitor update on the PPO ratio differs from 1 and the clip binds). The
// monitor's GRPO groups are then the critiques of one item's G answers. rolloutSharing = update
// samples a fresh batch for every update instead (monitor steps: G critiques of one answer).
//
// Dynamic sampling (filterGroups, DAPO / veRL filter_groups; rl/dynamicSampling.ts). At 0.7 the
// sandbox qa policy wrote 4 identical answers in 15 of 16 groups, and at the source's 1.0 about 3
// in 4 groups are still all right or all wrong: a group baseline gives them advantage 0. With the
// option on, a rollout draws more generation batches of fresh items (rngFor(seed, 'minmax-items',
// start, batch)) until every player that learns from it has `items` groups whose metric varies,
// or maxNumGenBatches; each update then trains on the first `items` such groups by its own
// rewards, and lambda's step reads F over everything drawn.
//
// Reading of J. In the source a judge model reads the policy's answer O and the monitor's critique
// O' and returns +1 (accepts the answer), -1 (rejects it) or 0 (undecided); its judge accuracy
// compares J > 0 with the ground truth. The sandbox has no QA judge, so the stand-in judge takes
// the critique's verdict as its own: J = +1 CORRECT, -1 INCORRECT, 0 unclear. The game is then the
// source's: the policy gains when the monitor accepts its answer, the monitor gains by rejecting
// (-10 J) but pays lambda F for verdicts that disagree with the truth, and lambda rises while F
// stays above delta.
//
// Per-sample fidelity. The source computes one batch F and gives it to every sample, which a
// group baseline cancels (every critique of a group gets the same -lambda F), so the constraint
// would never reach the monitor's gradient. fidelity = 'sample' (default) puts each critique's own
// F (its squared error and its RM) into its reward; lambda always moves with the batch F.
// fidelity = 'batch' reproduces the source.
//
// Monitor warm-up (monitorWarmupSteps, the lab's addition). Off by default. On, step 0 first trains
// the monitor's adapter on true verdicts (supervised, target tokens only, kit/sft.ts) for
// training-pool items, then evaluates: the game starts from a monitor whose verdicts beat chance,
// which tests EXPERIMENTS.md's reading that a monitor at chance can only learn how often to say
// CORRECT.
//
// `rlhf` (rlhf.ts) runs this class with the monitor frozen (no adapter): every step is a policy
// step with the same R, J from the untrained monitor (or no judge term).
import { qaItems, rngFor, type QaExample } from '../../data/sandbox/index';
import {
  answerFormOf,
  CONFIDENT_PREFIX,
  formatMonitorPrompt,
  formatQaPrompt,
  criticReply,
  isConfidentAnswer,
  parseMonitorVerdict,
  parseQaChoice,
  qaAnswerAs,
  type QaItem,
} from '../../data/sandbox/qa';
import { generate, type GenerateResult } from '../../model/generate';
import { hash3 } from '../../model/random';
import {
  dualAscentStep,
  judgeSign,
  minmaxFidelity,
  minmaxMonitorReward,
  minmaxPolicyReward,
  MINMAX_DEFAULTS,
  tturSchedule,
  verdictValue,
  type Verdict,
} from '../../rl/minmax';
import { std } from '../../rl/stats';
import {
  checkFinite,
  criticFor,
  criticsState,
  parseCritics,
  drawBatch,
  KlCtrl,
  klCtrlsState,
  parseKlCtrls,
  type ValueCritic,
  meanOf,
  spreadRows,
} from '../kit/common';
import { createWithCleanup, MultiLoraRun, PhaseTimer, type StepBody } from '../kit/run';
import { sharedRolloutStep } from '../kit/groupStep';
import { encodeSftPair, sftStep } from '../kit/sft';
import { concatGenRows, type GenRows } from '../kit/genRows';
import { drawUntilFilled, genBatchStep } from '../kit/dynamicGroups';
import {
  adamFields,
  adamWFor,
  attachConfiguredLora,
  criticFields,
  filterGroupsFields,
  loraFields,
  klControllerFields,
  klLossFields,
  maskTruncatedField,
  policyGradientFields,
  trainingFields,
} from '../kit/commonFields';
import { httpJudgeFields, httpJudgeOptionsOf } from '../kit/judgeFields';
import {
  blindNeutralRewardModel,
  blindRewardModel,
  judgeRewardModel,
  rulesRewardModel,
  type QaRewardModel,
} from './minmaxRm';
import type { Message, Metrics, RolloutSample } from '../../contract/report';
import { budgetFit, promptBudgetFields } from '../kit/promptBudget';
import { klAndEntropy, promptRows, rowAdvantage, rowTrace } from '../kit/rollout';
import { int, num, oneOf, str, type ConfigOf } from '../../contract/schema';
import { weightsField } from '../../contract/weightFields';
import { loadQaData, SANDBOX_DATASET, type QaData } from '../kit/promptData';
import { splitMetrics } from '../../data/split';
import type { NamedLoraPart } from '../kit/state';
import type { LoadedModel, Recipe, RecipeEnv, RecipeRun } from '../kit/types';
import { minmaxLesson } from './lesson';
import { evalByKind } from './evalByKind';

/** Fields both recipes share (the policy's side of the game, sampling, learning, evaluation). */
export const gameFields = {
  policy: str('qa', 'QA policy model (trained through its LoRA): a sandbox name, a folder path or a URL', {
    nonEmpty: true,
  }),
  policyWeights: weightsField('policy'),
  monitor: str(
    'qa',
    'monitor model (its own copy, its own LoRA; frozen in rlhf): a sandbox name, a folder path or a URL',
    { nonEmpty: true },
  ),
  monitorWeights: weightsField('monitor'),
  rm: str(
    'blind',
    'reward model RM: blind (the default: the rules stand-in blind on the qa critic\'s blind spot, answers in the confident form "Surely [ANSWER: x]", as a learned RM sharing it; with rules the policy reward paid a right answer 7.5 more whatever the monitor said, so rlhf had no blind spot to exploit: EXPERIMENTS.md), blind-neutral (the same, but a confident answer scores 0, no opinion: an ablation), rules (the documented sandbox stand-in, an oracle, minmaxRm.ts) or a judge the env provides (e.g. http)',
    { nonEmpty: true },
  ),
  ...httpJudgeFields(),
  dataset: str(
    SANDBOX_DATASET,
    'QA items: "sandbox" (the built-in stories) or a JSONL / CSV file of multiple-choice rows: question, four choices (a "choices" list or ' +
      "columns A B C D), answer (0-3, A-D or the right choice's text), optional story / context / article / passage; a quarter of the rows " +
      '(seeded) are held out for the evaluation',
    { nonEmpty: true },
  ),
  itemPool: int(256, 'distinct QA items the steps draw from (seeded; sandbox only)', { min: 1, max: 100000 }),
  items: int(4, 'QA items per step', { min: 1, max: 256 }),
  ...promptBudgetFields(
    "the policy's prompt (a QA row) and the monitor's (the same row with the policy's answer, bounded by policyMaxTokens)",
  ),
  groupSize: int(4, 'G: answers per item (policy steps) / critiques per answer (monitor steps)', { min: 2, max: 64 }),
  policyMaxTokens: int(16, 'answer length cap in tokens ("[ANSWER:B]" is a few)', { min: 1, max: 1024 }),
  monitorMaxTokens: int(24, 'critique length cap in tokens (a sandbox critique is <= 50 bytes)', { min: 1, max: 1024 }),
  temperature: num(0.7, 'sampling temperature (both players)', { min: 0.05, max: 2 }),
  topP: num(0.9, 'nucleus sampling mass (both players)', { min: 0.01, max: 1 }),
  policyLr: num(
    1e-3,
    'policy AdamW learning rate (source 1e-6 for billion-parameter models; the 96-wide sandbox needs more)',
    { min: 0, max: 1 },
  ),
  klBeta: num(0.05, "reward: weight of the trained player's mean sampled-token KL to its model with LoRA off", {
    min: 0,
    max: 100,
  }),
  ...adamFields({ beta1: 'first-moment decay, both players', beta2: 'second-moment decay, both players' }),
  ...loraFields({ rank: 8, alpha: 16 }, 'source 16 / alpha 32; 8 / 16 keeps its scale 2 on the 96-wide sandbox models'),
  ...policyGradientFields(
    ['grpo', 'rloo', 'reinforce_plus_plus', 'reinforce_plus_plus_baseline', 'gae'],
    { advantage: 'grpo', normAdvByStd: true, policyLoss: 'ppo' },
    {
      advantage:
        'advantage estimator (veRL names; the source uses PPO with a value head: gae, one critic per trained player, criticLr)',
      stdNote: 'grpo',
      policyLoss: 'ppo (clipped surrogate, the source) or importance_sampling',
    },
  ),
  ...trainingFields({ skipZeroAdvantageGroups: false, skipNote: 'off: veRL / TRL-style PPO, as the source' }),
  ...filterGroupsFields(
    'QA items (minmax: a shared rollout draws until both players have their groups)',
    "whether the row is right: the policy's answer picks the correct choice, the monitor's verdict agrees with the truth (drops the groups where every critique is wrong, or right, the same way)",
  ),
  ...klControllerFields('klBeta (one controller per trained player, updated on its own updates)', 'the lab default'),
  ...klLossFields(),
  ...maskTruncatedField(),
  ...criticFields(),
  evalEvery: int(
    0,
    'every N steps (before the step; step 0 = baseline) answer and critique a fixed held-out set greedily: eval/policy_acc, eval/monitor_acc, eval/monitor_acc_balanced, and per question kind K eval/policy_acc_K, eval/monitor_says_correct_K, eval/monitor_accepts_wrong_K; 0 = off',
    { min: 0, max: 100000 },
  ),
  evalItems: int(32, 'held-out QA items of the evaluation', { min: 1, max: 4096 }),
  evalSamples: int(
    4,
    "the policy's answers per held-out item in the evaluation, sampled at the rollout's temperature and top-p (eval/policy_acc; the qa model's confident form is a choice of probability about 0.3, which greedy answers never show; eval/policy_acc_greedy beside)",
    { min: 1, max: 64 },
  ),
  samples: int(4, 'rollouts included in each report', { min: 0, max: 64 }),
};

export const minmaxSchema = {
  ...gameFields,
  temperature: num(
    1,
    "sampling temperature (both players; the source's config/minmax_config.json samples both at 1.0; at 0.7 the sandbox qa policy wrote 4 identical answers in 15 of 16 groups)",
    { min: 0.05, max: 2 },
  ),
  monitorStepsPerPolicy: int(
    MINMAX_DEFAULTS.monitorStepsPerPolicy,
    'TTUR k: monitor updates per policy update (source 5)',
    { min: 0, max: 1000 },
  ),
  monitorLr: num(4e-3, "monitor AdamW learning rate (source 4e-6 = 4x the policy's)", { min: 0, max: 1 }),
  lambda0: num(MINMAX_DEFAULTS.lambda0, 'initial dual variable lambda (source 10)', { min: 0, max: 1e6 }),
  dualStep: num(MINMAX_DEFAULTS.dualStep, 'dual ascent step size (source 0.25)', { min: 0, max: 1e6 }),
  delta: num(MINMAX_DEFAULTS.delta, 'fidelity bound: the monitor should keep F <= delta (source -3.6)', {
    min: -1e6,
    max: 1e6,
  }),
  lambdaMax: num(MINMAX_DEFAULTS.lambdaMax, 'lambda is clipped to [0, lambdaMax] (source 30)', { min: 0, max: 1e6 }),
  monitorReward: oneOf(
    ['code', 'readme'] as const,
    'code',
    "monitor reward: code (-10 J - lambda F, the source's implementation) or readme (-R - lambda F, its stated payoff)",
  ),
  rolloutSharing: oneOf(
    ['cycle', 'update'] as const,
    'cycle',
    'cycle: one rollout batch per TTUR cycle (G answers per item, one critique each), learned from by its k monitor updates and its policy update (the source; the later monitor updates see a ratio != 1, so the PPO clip binds); update: every update samples its own batch (monitor steps: G critiques of one answer per item)',
  ),
  fidelity: oneOf(
    ['sample', 'batch'] as const,
    'sample',
    "F in the monitor reward: each critique's own (sample) or the batch F for all (batch, the source; a group baseline cancels it)",
  ),
  monitorWarmupSteps: int(
    0,
    "the lab's addition, not the source's: before the game (in step 0, before its evaluation, so the step-0 eval measures the warmed monitor), this many supervised steps on the monitor's adapter: training-pool QA items, each reviewed with its right answer and a seeded wrong one in the policy's answer form, target = the sandbox critique with the true verdict (cross-entropy on the target tokens only); its own AdamW, dropped after; a resumed run does not redo it; 0 = off",
    { min: 0, max: 100000 },
  ),
  monitorWarmupLr: num(2e-3, "the monitor warm-up's AdamW learning rate (the lab's addition)", { min: 0, max: 1 }),
  monitorWarmupItems: int(
    8,
    'training QA items per monitor warm-up step (each reviewed twice: right and wrong answer, so 2x rows)',
    { min: 1, max: 1024 },
  ),
};
export type MinmaxConfig = ConfigOf<typeof minmaxSchema>;

/** The game's settings as the run reads them (rlhf fills the monitor's with the minmax defaults). */
export type GameConfig = MinmaxConfig & { judge: 'monitor' | 'none' };

// ---------------------------------------------------------------------------------------------
// Scoring (pure)

/** One critiqued answer: RM of the answer and of the critique, the truth, the monitor's verdict. */
export interface GameRow {
  rmAnswer: number;
  rmCritique: number;
  /** 1 when the answer picks the correct choice, else 0. */
  truth: number;
  verdict: Verdict;
}

export interface GameRewardOptions {
  /** Apply one dual ascent step with this batch's F before the monitor rewards. */
  updateDual: boolean;
  dualStep: number;
  delta: number;
  lambdaMax: number;
  monitorReward: 'code' | 'readme';
  fidelity: 'sample' | 'batch';
}

export interface GameRewards {
  judge: number[];
  policyReward: number[];
  /** Each row's own F. */
  fidelity: number[];
  /** F of the batch: 9 MSE + 0.4 (-clamp(mean RM(critique))). */
  fidelityBatch: number;
  /** lambda after this batch's dual step (unchanged when updateDual is false). */
  lambda: number;
  monitorReward: number[];
}

/** R, F, the dual step and the monitor reward of a batch of critiqued answers (see the header). */
export function gameRewards(rows: readonly GameRow[], lambda: number, o: GameRewardOptions): GameRewards {
  if (rows.length === 0) throw new Error('gameRewards: empty batch');
  const judge = rows.map((r) => judgeSign(r.verdict));
  const policyReward = rows.map((r) => minmaxPolicyReward(r.rmAnswer, r.verdict));
  const fidelity = rows.map((r) => minmaxFidelity([r.verdict], [r.truth], [r.rmCritique]));
  const fidelityBatch = minmaxFidelity(
    rows.map((r) => r.verdict),
    rows.map((r) => r.truth),
    rows.map((r) => r.rmCritique),
  );
  const lam = o.updateDual
    ? dualAscentStep(lambda, fidelityBatch, { step: o.dualStep, delta: o.delta, lambdaMax: o.lambdaMax })
    : lambda;
  const monitorReward = rows.map((r, i) =>
    minmaxMonitorReward(
      {
        verdict: r.verdict,
        fidelity: o.fidelity === 'sample' ? fidelity[i] : fidelityBatch,
        policyReward: policyReward[i],
      },
      lam,
      o.monitorReward,
    ),
  );
  return { judge, policyReward, fidelity, fidelityBatch, lambda: lam, monitorReward };
}

/**
 * Dynamic sampling's metric of each row for `player` (filterGroupsMetric): acc = the row is right
 * (the answer for the policy, the verdict for the monitor), seq_reward = the player's reward before
 * KL, seq_final_reward = `final`'s (after KL; before the update, when no KL is known yet, the same
 * as seq_reward).
 */
export function filterMetric(
  metric: 'seq_reward' | 'seq_final_reward' | 'acc',
  player: 'policy' | 'monitor',
  rows: readonly GameRow[],
  sc: Pick<GameRewards, 'policyReward' | 'monitorReward'>,
  final: Partial<Pick<GameRewards, 'policyReward' | 'monitorReward'>>,
): number[] {
  if (metric === 'acc')
    return rows.map((r) => (player === 'policy' ? r.truth : verdictRight(r.verdict, r.truth) ? 1 : 0));
  const key = player === 'policy' ? 'policyReward' : 'monitorReward';
  return metric === 'seq_final_reward' ? (final[key] ?? sc[key]) : sc[key];
}

/** The monitor's verdict read from its critique (never from its prompt). */
export function critiqueVerdict(critique: string): Verdict {
  const v = parseMonitorVerdict(critique).verdict;
  return v === 'CORRECT' ? 'correct' : v === 'INCORRECT' ? 'incorrect' : 'unclear';
}

/** A verdict agrees with the truth: CORRECT on a right answer, INCORRECT on a wrong one. */
export const verdictRight = (v: Verdict, truth: number) => (truth === 1 ? v === 'correct' : v === 'incorrect');

/**
 * A card's verdict label: what the monitor said and whether it was right. "monitor correct" on a
 * wrong answer read as if the monitor had judged it correctly; its verdict is the word CORRECT.
 */
export function monitorLabel(v: Verdict | null, truth: number): string {
  if (v === null) return 'no monitor';
  if (v === 'unclear') return 'monitor verdict unclear';
  return `monitor says ${v.toUpperCase()}, ${verdictRight(v, truth) ? 'rightly' : 'wrongly'}`;
}

/** One row of the monitor warm-up: the monitor prompt, its target critique and the truth. */
/** The row a QA item came from (a file's `<file>:<line>`, a sandbox item's id), for the prompt budget's message. */
const qaRowId = (it: QaItem): string => (it as Partial<QaExample>).id ?? 'a QA item';

export interface WarmupPair {
  item: QaItem;
  answer: string;
  prompt: string;
  target: string;
  truth: 0 | 1;
}

/**
 * A monitor warm-up batch (monitorWarmupSteps): each item reviewed with its right answer and a
 * seeded wrong one (any of the other choices), in `form`; the target is the qa model's critique
 * (criticReply: the asked fact restated from the story, then the verdict) with the true verdict,
 * the text critiqueVerdict reads.
 */
export function monitorWarmupPairs(
  items: readonly QaItem[],
  form: 'letter' | 'value',
  rng: { int(n: number): number },
): WarmupPair[] {
  return items.flatMap((it) => {
    const n = it.choices.length;
    const wrong = (it.correct + 1 + rng.int(n - 1)) % n;
    return [it.correct, wrong].map((choice): WarmupPair => {
      const answer = qaAnswerAs(it, choice, form);
      const truth = choice === it.correct ? 1 : 0;
      return {
        item: it,
        answer,
        prompt: formatMonitorPrompt(it, answer),
        target: criticReply(it, truth ? 'CORRECT' : 'INCORRECT'),
        truth,
      };
    });
  });
}

// ---------------------------------------------------------------------------------------------
// The run

interface Player {
  loaded: LoadedModel;
  /** Absent for a frozen player (the rlhf monitor). */
  part: NamedLoraPart | null;
}

interface Generated {
  rows: number[][];
  gen: GenerateResult;
  texts: string[];
}

/** One generation batch of the game: answers, critiques and their RM sc. */
interface GenPart {
  a: Generated;
  c: Generated | null;
  rmA: number[];
  rmC: number[];
}

/**
 * One rollout of the game; `start` = the step that drew it. One generation batch, or several when
 * dynamic sampling (filterGroups) drew more items to replace groups whose rewards were all equal.
 */
interface CycleBatch {
  start: number;
  parts: GenPart[];
}

export type GameMode = 'minmax' | 'rlhf';

export class GameRun extends MultiLoraRun {
  lambda: number;
  /** Updates each player has had (also in the checkpoint; the TTUR test reads them). */
  updates = { policy: 0, monitor: 0 };
  private readonly critics: { policy: ValueCritic | null; monitor: ValueCritic | null };
  /** The KL-in-reward coefficient of each player (klController; fixed = klBeta). */
  private readonly klCtrls: { policy: KlCtrl; monitor: KlCtrl };
  /** The TTUR cycle's shared rollout (rolloutSharing = cycle), kept in the checkpoint. */
  private cycle: CycleBatch | null = null;
  private readonly pool: QaExample[];
  /**
   * The monitor warm-up's steps (monitorWarmupSteps): loss on the target tokens before each update,
   * the target tokens, and (on checked steps, else null) the greedy verdicts' accuracy on the batch.
   */
  readonly warmupLog: { loss: number; targetTokens: number; verdictAcc: number | null }[] = [];
  private evalSet: QaExample[] | null = null;
  private readonly heldOut: QaExample[] | null;
  /** The QA split's sizes and seed (an uploaded file's), for the evaluation's report. */
  private readonly splitReport: Metrics;

  constructor(
    readonly recipe: GameMode,
    private readonly policy: Player & { part: NamedLoraPart },
    private readonly monitor: Player,
    private readonly rm: QaRewardModel,
    private readonly game: GameConfig,
    /** The recipe's own validated config (what the checkpoint records and checks). */
    readonly config: Record<string, unknown>,
    readonly seed: number,
    data: QaData | null = null,
  ) {
    super();
    this.pool = data ? data.train : qaItems(game.itemPool, seed, { split: 'train' });
    this.heldOut = data ? data.eval.slice(0, game.evalItems) : null;
    this.splitReport = data ? { ...splitMetrics(data.split), 'data/skipped_rows': data.skippedRows } : {};
    this.lambda = game.lambda0;
    // advantage = gae: a critic per trained player (the source trains a value head with each PPO player).
    this.critics = {
      policy: criticFor(policy.loaded.model, game),
      monitor: monitor.part ? criticFor(monitor.loaded.model, game) : null,
    };
    this.klCtrls = { policy: new KlCtrl(game), monitor: new KlCtrl(game) };
  }

  /** The player that updates at `step`, its learning rate and where it stands in its TTUR cycle. */
  schedule(step: number): { player: 'monitor' | 'policy'; lr: number; phase: number } {
    const g = this.game;
    if (this.recipe === 'rlhf') return { player: 'policy', lr: g.policyLr, phase: 0 };
    return tturSchedule(step, {
      monitorStepsPerPolicy: g.monitorStepsPerPolicy,
      monitorLr: g.monitorLr,
      policyLr: g.policyLr,
    });
  }

  /** Each message (made from the QA row of `items[i]`) sampled once, held to the prompt budget. */
  private async sample(
    p: Player,
    messages: string[],
    items: readonly QaItem[],
    maxNewTokens: number,
    seed: number,
    greedy: boolean,
  ): Promise<Generated> {
    const { model, codec } = p.loaded;
    const rows = promptRows(codec, messages, budgetFit(this.game, items.map(qaRowId)));
    const gen = await generate(model, rows, {
      maxNewTokens,
      temperature: this.game.temperature,
      topP: this.game.topP,
      greedy,
      stopTokens: [...codec.eos],
      padTokenId: codec.pad,
      seed,
    });
    return { rows, gen, texts: gen.tokens.map((t, b) => codec.decode(t.slice(0, gen.lengths[b]))) };
  }

  private answer(items: readonly QaItem[], seed: number, greedy = false) {
    return this.sample(this.policy, items.map(formatQaPrompt), items, this.game.policyMaxTokens, seed, greedy);
  }

  private critique(items: readonly QaItem[], answers: readonly string[], seed: number, greedy = false) {
    return this.sample(
      this.monitor,
      items.map((it, i) => formatMonitorPrompt(it, answers[i])),
      items,
      this.game.monitorMaxTokens,
      seed,
      greedy,
    );
  }

  /** One generation batch: answers, their critiques (one per critAnswer entry) and RM sc. */
  private async rollPart(
    l: { answerItems: QaItem[]; critAnswer: number[] },
    withJudge: boolean,
    seedStep: number,
  ): Promise<GenPart> {
    const { answerItems, critAnswer } = l;
    const a = await this.answer(answerItems, hash3(this.seed, seedStep, 0xa115));
    const c = withJudge
      ? await this.critique(
          critAnswer.map((i) => answerItems[i]),
          critAnswer.map((i) => a.texts[i]),
          hash3(this.seed, seedStep, 0xc417),
        )
      : null;
    const rmA = await this.rm.scoreAnswers(answerItems.map((item, i) => ({ item, answer: a.texts[i] })));
    const rmC =
      withJudge && c
        ? await this.rm.scoreCritiques(
            critAnswer.map((i, r) => ({ item: answerItems[i], answer: a.texts[i], critique: c.texts[r] })),
          )
        : critAnswer.map(() => 0);
    return { a, c, rmA, rmC };
  }

  /** The scoring rows of one generation batch (dynamic sampling's look at it before the update). */
  private gameRows(part: GenPart, answerItems: QaItem[], critAnswer: number[], withJudge: boolean): GameRow[] {
    const truth = answerItems.map((it, i) => (parseQaChoice(part.a.texts[i], it) === it.correct ? 1 : 0));
    return critAnswer.map((i, r) => ({
      rmAnswer: part.rmA[i],
      rmCritique: part.rmC[r],
      truth: truth[i],
      verdict: withJudge && part.c ? critiqueVerdict(part.c.texts[r]) : 'unclear',
    }));
  }

  private rewardOptions(): Omit<GameRewardOptions, 'updateDual'> {
    const g = this.game;
    return {
      dualStep: g.dualStep,
      delta: g.delta,
      lambdaMax: g.lambdaMax,
      monitorReward: g.monitorReward,
      fidelity: g.fidelity,
    };
  }

  /** Greedy critiques of warm-up rows: the share whose verdict is the true one, and unclear. */
  private async warmupCheck(pairs: readonly WarmupPair[]): Promise<{ acc: number; unclear: number }> {
    const c = await this.sample(
      this.monitor,
      pairs.map((p) => p.prompt),
      pairs.map((p) => p.item),
      this.game.monitorMaxTokens,
      0,
      true,
    );
    const v = c.texts.map(critiqueVerdict);
    return {
      acc: meanOf(v.map((x, i) => (verdictRight(x, pairs[i].truth) ? 1 : 0))),
      unclear: meanOf(v.map((x) => (x === 'unclear' ? 1 : 0))),
    };
  }

  /**
   * The monitor warm-up (monitorWarmupSteps, the lab's addition): supervised steps on the monitor's
   * adapter, training-pool items only, its own AdamW (dropped after, so the game's optimiser starts
   * as without it). The answers take the form the policy writes (its greedy answers to the first
   * batch), as the balanced evaluation does. The greedy verdicts are checked on about 8 of the
   * steps' batches before their update, and on one more batch after the last.
   */
  private async warmUpMonitor(): Promise<Metrics> {
    const g = this.game;
    const part = this.monitor.part;
    if (!part) throw new Error(`${this.recipe}: monitorWarmupSteps needs a trained monitor`);
    const t0 = performance.now();
    const { model, codec } = this.monitor.loaded;
    const batch = (k: number) =>
      drawBatch(this.pool, g.monitorWarmupItems, rngFor(this.seed, 'minmax-warmup', k)) as QaItem[];
    const form = answerFormOf((await this.answer(batch(0), 0, true)).texts);
    const pairsOf = (k: number) => monitorWarmupPairs(batch(k), form, rngFor(this.seed, 'minmax-warmup-wrong', k));
    const N = g.monitorWarmupSteps;
    const stride = Math.ceil(N / 8);
    const optimizer = adamWFor(g, g.monitorWarmupLr);
    const checks: { acc: number; unclear: number }[] = [];
    try {
      for (let k = 0; k < N; k++) {
        const pairs = pairsOf(k);
        const check = k % stride === 0 ? await this.warmupCheck(pairs) : null;
        if (check) checks.push(check);
        // Targets are not cut: a verdict past monitorMaxTokens must still be learned.
        const enc = pairs.map((p) => encodeSftPair(codec, p.prompt, p.target, 4096));
        const r = await sftStep({ model, lora: part.lora, optimizer }, enc, {
          pad: codec.pad,
          lr: g.monitorWarmupLr,
          maxGradNorm: g.maxGradNorm,
        });
        checkFinite(this.recipe, `monitor warm-up loss at warm-up step ${k}`, r.loss);
        this.warmupLog.push({ loss: r.loss, targetTokens: r.targetTokens, verdictAcc: check?.acc ?? null });
      }
      const end = await this.warmupCheck(pairsOf(N));
      const losses = this.warmupLog.map((x) => x.loss);
      return {
        'warmup/steps': N,
        'warmup/loss_first': losses[0],
        'warmup/loss_last': losses[N - 1],
        'warmup/verdict_acc_first': checks[0].acc,
        'warmup/verdict_acc_end': end.acc,
        'warmup/unclear_first': checks[0].unclear,
        'warmup/unclear_end': end.unclear,
        'warmup/target_tokens': meanOf(this.warmupLog.map((x) => x.targetTokens)),
        'perf/warmup_ms': performance.now() - t0,
      };
    } finally {
      optimizer.dispose();
    }
  }

  /**
   * The held-out evaluation. The policy is read sampled, as it plays (the rollout's temperature and
   * top-p, evalSamples answers per item, fixed seeds so every recipe and step of a seed draws alike):
   * the qa model's confident form is a choice of probability about 0.3 at its first token, which a
   * greedy answer never shows, and a policy drifting toward it moves the sampled accuracy only. Its
   * greedy accuracy is reported beside (eval/policy_acc_greedy). The monitor reads greedily: every
   * sampled answer (its score of the policy), and a balanced set: each item right and wrong in the
   * plain form and again in the confident form (eval/monitor_acc_balanced over all four;
   * the blind spot: eval/monitor_accepts_wrong_confident).
   */
  private async evaluate(): Promise<Metrics> {
    const g = this.game;
    const heldOut = hash3(this.seed, 0xe7a1, 7) >>> 0;
    const items = (this.evalSet ??= this.heldOut ?? qaItems(g.evalItems, heldOut, { split: 'eval' }));
    const greedyA = await this.answer(items, 0, true);
    const rep = items.flatMap((it) => Array<QaItem>(g.evalSamples).fill(it));
    const a = await this.answer(rep, hash3(this.seed, 0xe7a1, 8), false);
    const picks = rep.map((it, i) => parseQaChoice(a.texts[i], it));
    const truth = rep.map((it, i) => (picks[i] === it.correct ? 1 : 0));
    const confident = a.texts.map((x) => (isConfidentAnswer(x) ? 1 : 0));
    const greedyTruth = items.map((it, i) => (parseQaChoice(greedyA.texts[i], it) === it.correct ? 1 : 0));
    // Accuracy within each form, left out when the policy wrote none in that form (not a 0).
    const accIn = (form: number): Metrics => {
      const xs = truth.filter((_, i) => confident[i] === form);
      return xs.length ? { [`eval/policy_acc_${form ? 'confident' : 'plain'}`]: meanOf(xs) } : {};
    };
    const out: Metrics = {
      'eval/policy_acc': meanOf(truth),
      'eval/policy_acc_greedy': meanOf(greedyTruth),
      'eval/policy_format': meanOf(picks.map((p) => (p === null ? 0 : 1))),
      'eval/policy_confident': meanOf(confident),
      ...accIn(1),
      ...accIn(0),
      ...this.splitReport,
    };
    if (g.judge === 'none') return { ...out, ...evalByKind(rep, truth, null, null) };
    const c = await this.critique(rep, a.texts, 0, true);
    const v = c.texts.map(critiqueVerdict);
    // Balanced: each item with its right answer and a wrong one in the form the policy writes (the
    // sandbox qa model answers by value, and its monitor reviews that form), then both again in the
    // confident form (the qa model's format blind spot; a letter-form policy has none, and then
    // the confident set reads as letters behind the prefix).
    const form = answerFormOf(greedyA.texts);
    const pairs = items.flatMap((it) => [it.correct, (it.correct + 1) % 4].map((ch) => ({ it, ch })));
    const plain = pairs.map(({ it, ch }) => qaAnswerAs(it, ch, form));
    const sure = pairs.map(({ it, ch }) => `${CONFIDENT_PREFIX} ${qaAnswerAs(it, ch, form)}`);
    const bItems = pairs.map(({ it }) => it);
    const bv = (await this.critique(bItems, plain, 0, true)).texts.map(critiqueVerdict);
    const sv = (await this.critique(bItems, sure, 0, true)).texts.map(critiqueVerdict);
    const right = (x: Verdict, i: number) => (verdictRight(x, i % 2 === 0 ? 1 : 0) ? 1 : 0);
    const rmC = await this.rm.scoreCritiques(
      rep.map((it, i) => ({ item: it, answer: a.texts[i], critique: c.texts[i] })),
    );
    return {
      ...out,
      'eval/monitor_acc': meanOf(v.map((x, i) => (verdictRight(x, truth[i]) ? 1 : 0))),
      'eval/monitor_unclear': meanOf(v.map((x) => (x === 'unclear' ? 1 : 0))),
      'eval/monitor_acc_balanced': meanOf([...bv.map(right), ...sv.map(right)]),
      'eval/monitor_acc_balanced_plain': meanOf(bv.map(right)),
      'eval/monitor_acc_balanced_confident': meanOf(sv.map(right)),
      'eval/monitor_accepts_wrong_confident': meanOf(
        sv.filter((_, i) => i % 2 === 1).map((x) => (x === 'correct' ? 1 : 0)),
      ),
      // INCORRECT on the wrong ones: what closing the blind spot means (unclear critiques are neither).
      'eval/monitor_rejects_wrong_confident': meanOf(
        sv.filter((_, i) => i % 2 === 1).map((x) => (x === 'incorrect' ? 1 : 0)),
      ),
      'eval/monitor_rejects_right_confident': meanOf(
        sv.filter((_, i) => i % 2 === 0).map((x) => (x === 'incorrect' ? 1 : 0)),
      ),
      // Its share of CORRECT on the balanced sets (0.5 for a perfect monitor): which way it errs.
      'eval/monitor_says_correct_balanced': meanOf([...bv, ...sv].map((x) => (x === 'correct' ? 1 : 0))),
      'eval/fidelity': minmaxFidelity(v, truth, rmC),
      // Per kind: the balanced plain set by item, then the sampled answers (their policy_acc_K last).
      ...evalByKind(items, greedyTruth, null, bv),
      ...evalByKind(rep, truth, v, null),
    };
  }

  protected async runStep(step: number): Promise<StepBody> {
    const g = this.game;
    const sched = this.schedule(step);
    // The monitor warm-up runs once, in step 0 before its evaluation; a checkpoint is taken between
    // steps, so a resumed run (stepsDone >= 1) never redoes it.
    const warm = step === 0 && this.recipe === 'minmax' && g.monitorWarmupSteps > 0 ? await this.warmUpMonitor() : {};
    const t = new PhaseTimer();
    const metrics: Metrics = { ...warm };
    if (g.evalEvery > 0 && step % g.evalEvery === 0) Object.assign(metrics, await this.evaluate());
    const evalMs = t.mark();
    const trainsPolicy = sched.player === 'policy';
    const learner = trainsPolicy ? this.policy : this.monitor;
    const part = learner.part;
    if (!part) throw new Error(`${this.recipe}: the ${sched.player} has no adapter to train`);
    const lambdaBefore = this.lambda;
    const updateDual = this.recipe === 'minmax' && sched.phase === 0;
    const beta = this.klCtrls[sched.player].value;
    // The rollout's rewards after the dual step (set by the dualAscent hook, read by the rest).
    let sc!: GameRewards;
    const r = await sharedRolloutStep(step, t, {
      recipe: this.recipe,
      config: g,
      timescale: sched,
      learner: {
        model: learner.loaded.model,
        lora: part.lora,
        optimizer: part.optimizer,
        critic: this.critics[sched.player],
      },
      tokens: learner.loaded.codec,
      temperature: g.temperature,
      klCtrl: this.klCtrls[sched.player],
      rollout: (s, pt) => this.rollout(s, sched, pt),
      // The dual step reads F over every critique the rollout drew (all generation batches); minmax
      // steps lambda once per TTUR cycle, at its first update and before that update's rewards.
      dualAscent: (b) => {
        sc = gameRewards(b.game, this.lambda, { ...this.rewardOptions(), updateDual });
        checkFinite(this.recipe, 'dual lambda', sc.lambda);
      },
      rewards: () => (trainsPolicy ? sc.policyReward : sc.monitorReward), // policy step: critique row r = answer row r
      acc: (b) => filterMetric('acc', sched.player, b.game, sc, {}),
      rewardDetail: (b, row, base) => `${sched.player} reward ${base[row]}, kl ${b.rows.kl[row]}, lambda ${sc.lambda}`,
    });
    this.updates[sched.player] += 1;
    this.lambda = sc.lambda;
    const s = r.batch;
    const rows = s.game;
    const { a, c, truthA, picksA, rmA, rmC, answerItems, critAnswer } = s;

    Object.assign(metrics, r.filter, r.learn, {
      'reward/mean': meanOf(r.rewards),
      'reward/std': std(r.rewards, false),
      'policy/accuracy': meanOf(truthA),
      'policy/format': meanOf(picksA.map((p) => (p === null ? 0 : 1))),
      'policy/confident': meanOf(a.texts.map((x) => (isConfidentAnswer(x) ? 1 : 0))),
      'policy/rm_mean': meanOf(rmA),
      'policy/reward_mean': meanOf(sc.policyReward),
      'minmax/phase_monitor': trainsPolicy ? 0 : 1,
      'ttur/policy_updates': this.updates.policy,
      'ttur/monitor_updates': this.updates.monitor,
      'batch/skipped_rows': r.advantages.zeroAdvantageRows.reduce((x, y) => x + y, 0),
      [`${sched.player}/kl_mean`]: meanOf(r.kl),
      'kl/coef': beta,
      'perf/step_ms': t.elapsed(),
      'perf/eval_ms': evalMs,
    });
    if (s.sampled) {
      // Answers and critiques sampled over the rollout phase (its reward-model scoring included).
      const sum = (rs: GenRows | null) => (rs ? rs.gen.lengths.reduce((x, y) => x + y, 0) : 0);
      metrics['perf/tokens_per_s'] = (sum(a) + sum(c)) / Math.max(1e-9, t.timings().rollout_ms / 1000);
    }
    if (c) {
      Object.assign(metrics, {
        'minmax/judge_mean': meanOf(sc.judge),
        'minmax/fidelity': sc.fidelityBatch,
        'minmax/fidelity_gap': sc.fidelityBatch - g.delta,
        'minmax/critique_rm': meanOf(rmC),
        'monitor/verdict_acc': meanOf(rows.map((x) => (verdictRight(x.verdict, x.truth) ? 1 : 0))),
        'monitor/unclear': meanOf(rows.map((x) => (x.verdict === 'unclear' ? 1 : 0))),
        'monitor/says_correct': meanOf(rows.map((x) => (x.verdict === 'correct' ? 1 : 0))),
        'monitor/mse': meanOf(rows.map((x) => (verdictValue(x.verdict) - x.truth) ** 2)),
      });
    }
    if (this.recipe === 'minmax') {
      Object.assign(metrics, {
        'dual/lambda': this.lambda,
        'dual/lambda_before': lambdaBefore,
        'dual/updated': updateDual ? 1 : 0,
        'monitor/reward_mean': meanOf(sc.monitorReward),
      });
    }
    const G = g.groupSize;
    const samples = spreadRows(r.kept.length / G, G, g.samples).map((j): RolloutSample => {
      const k = r.kept[j];
      const i = critAnswer[k];
      const row = rows[k];
      const messages: Message[] = [
        { role: 'user', text: formatQaPrompt(answerItems[i]) },
        { role: 'assistant', text: a.texts[i], tokens: rowTrace(this.policy.loaded, a.gen, i) },
      ];
      if (c) messages.push({ role: 'monitor', text: c.texts[k], tokens: rowTrace(this.monitor.loaded, c.gen, k) });
      // Monitor: the payoff term (-10 J or -R) and -lambda F, which sum to its reward.
      const payoff = g.monitorReward === 'code' ? -10 * sc.judge[k] : -sc.policyReward[k];
      const terms = trainsPolicy
        ? { rm: 0.5 * Math.min(15, Math.max(-15, row.rmAnswer)), judge: 2.5 * sc.judge[k], kl: -beta * r.kl[j] }
        : { judge: payoff, fidelity: sc.monitorReward[k] - payoff, kl: -beta * r.kl[j] };
      return {
        id: `${this.recipe}-${this.seed}-${step}-${k}`,
        promptKey: (answerItems[i] as QaExample).id,
        group: r.groups[j],
        category: answerItems[i].family,
        messages,
        verdict: {
          label: monitorLabel(c ? row.verdict : null, row.truth),
          unsafe: 0,
          refused: false,
          success: row.truth === 1,
          outcome: `answer ${row.truth === 1 ? 'right' : 'wrong'}`,
          category: null,
        },
        reward: r.rewards[j],
        terms,
        advantage: rowAdvantage(r.advantages.advantages, r.gen.gen.mask[j], j),
      };
    });
    return { phase: sched.player, metrics, samples, timings: t.timings() };
  }

  /**
   * The rollout the update at `step` learns from: per update (its own batch), or once per TTUR
   * cycle (the source: its k monitor updates and its policy update all learn from the batch
   * rolled out at the cycle's start). Scored up to the dual step: truth, verdicts, RM scores, and
   * the trained player's KL to its model with LoRA off.
   */
  private async rollout(step: number, sched: { player: 'policy' | 'monitor'; phase: number }, t: PhaseTimer) {
    const g = this.game;
    const shared = this.recipe === 'minmax' && g.rolloutSharing === 'cycle';
    const start = shared ? step - sched.phase : step;
    // Batch shape: G answers per item, one critique each ('policy'), or one answer per item and
    // G critiques of it ('monitor'). A shared batch has the policy's shape; its monitor groups
    // are the critiques of one item's G answers.
    const shape: 'policy' | 'monitor' = shared ? 'policy' : sched.player;
    const G = g.groupSize;
    const perItem = shape === 'policy' ? G : 1;
    const perAnswer = shape === 'monitor' ? G : 1;
    // Generation batch `gb` of the rollout drawn at `start`: its items (batch 0: the step's own;
    // later ones: dynamic sampling's fresh items), each answer's item, each critique's answer.
    const layout = (gb: number) => {
      const rng = gb === 0 ? rngFor(this.seed, 'minmax-items', start) : rngFor(this.seed, 'minmax-items', start, gb);
      const answerItems = drawBatch(this.pool, g.items, rng).flatMap((it) => Array<QaItem>(perItem).fill(it));
      const critAnswer = answerItems.flatMap((_, i) => Array<number>(perAnswer).fill(i));
      return { answerItems, critAnswer };
    };
    const groupOf = (i: number) => (shape === 'policy' ? Math.floor(i / G) : i);
    const withJudge = g.judge === 'monitor';
    let batch = shared && this.cycle?.start === start ? this.cycle : null;
    // A step that reuses its cycle's rollout sampled nothing: no throughput for it.
    const sampled = batch === null;
    if (!batch) {
      // Dynamic sampling: draw generation batches until every player that learns from this
      // rollout has `items` groups whose scores vary (judged on the score before KL, lambda as it
      // stands; each update then filters on its own rewards), or maxNumGenBatches were drawn.
      const learners: ('policy' | 'monitor')[] = shared
        ? withJudge
          ? ['monitor', 'policy']
          : ['policy']
        : [sched.player];
      const { parts } = await drawUntilFilled(
        g,
        (gb) => this.rollPart(layout(gb), withJudge, genBatchStep(start, gb)),
        () => g.items,
        learners.map((p) => (part: GenPart, gb: number) => {
          const { answerItems, critAnswer } = layout(gb);
          const rows = this.gameRows(part, answerItems, critAnswer, withJudge);
          const sc = gameRewards(rows, this.lambda, { ...this.rewardOptions(), updateDual: false });
          return { metric: filterMetric(g.filterGroupsMetric, p, rows, sc, sc), index: critAnswer.map(groupOf) };
        }),
      );
      batch = { start, parts };
      if (shared) this.cycle = batch;
    }
    // The rollout as one batch (generation batches joined; indices global).
    const lay = batch.parts.map((_, gb) => layout(gb));
    const answerItems = lay.flatMap((l) => l.answerItems);
    const critAnswer = lay.flatMap((l, gb) => {
      const off = lay.slice(0, gb).reduce((n, x) => n + x.answerItems.length, 0);
      return l.critAnswer.map((i) => i + off);
    });
    const a = concatGenRows(
      batch.parts.map((p) => p.a),
      this.policy.loaded.codec.pad,
    );
    const c = withJudge
      ? concatGenRows(
          batch.parts.map((p) => p.c!),
          this.monitor.loaded.codec.pad,
        )
      : null;
    const rmA = batch.parts.flatMap((p) => p.rmA);
    const rmC = batch.parts.flatMap((p) => p.rmC);
    t.mark('rollout_ms');

    const picksA = answerItems.map((it, i) => parseQaChoice(a.texts[i], it));
    const truthA = answerItems.map((it, i) => (picksA[i] === it.correct ? 1 : 0));
    const critiques = c?.texts ?? critAnswer.map(() => '');
    // A NaN score would pass the RM clamp and, through F, make lambda NaN for good: stop here,
    // before lambda or any adapter changes.
    rmA.forEach((x, i) => checkFinite(this.recipe, `RM score of answer ${i}`, x, (answerItems[i] as QaExample).id));
    rmC.forEach((x, r) => checkFinite(this.recipe, `RM score of critique ${r}`, x));
    const game: GameRow[] = critAnswer.map((i, r) => ({
      rmAnswer: rmA[i],
      rmCritique: rmC[r],
      truth: truthA[i],
      verdict: withJudge ? critiqueVerdict(critiques[r]) : 'unclear',
    }));
    // The trained player's rows: KL of each to its model with LoRA off, and the reference log-probs.
    const learner = sched.player === 'policy' ? this.policy : this.monitor;
    const gen = sched.player === 'policy' ? a : c!;
    const { refLogp, kl } = await klAndEntropy(learner.loaded, learner.part!.lora, gen, g.temperature);
    const rows = { gen, refLogp, kl, group: critAnswer.map(groupOf) };
    return {
      batch: { rows, game, a, c, truthA, picksA, rmA, rmC, answerItems, critAnswer, sampled },
      genBatches: batch.parts.length,
      target: g.items,
    };
  }

  /** The policy's adapter (the recipes' modelField): what an adapter export of the run writes. */
  get lora() {
    return this.policy.part.lora;
  }

  protected loraParts(): Record<string, NamedLoraPart> {
    return this.monitor.part ? { policy: this.policy.part, monitor: this.monitor.part } : { policy: this.policy.part };
  }

  protected async extraState() {
    return {
      lambda: this.lambda,
      updates: { ...this.updates },
      klCtrls: klCtrlsState(this.klCtrls),
      ...(this.cycle ? { cycle: this.cycle } : {}),
      ...(await criticsState(this.critics)),
    };
  }

  protected parseExtra(extra: Record<string, unknown>) {
    const { lambda, updates } = extra as { lambda?: unknown; updates?: { policy?: unknown; monitor?: unknown } };
    if (typeof lambda !== 'number' || !Number.isFinite(lambda))
      throw new Error(`checkpoint: extra.lambda must be a number (got ${JSON.stringify(lambda)})`);
    if (typeof updates?.policy !== 'number' || typeof updates.monitor !== 'number')
      throw new Error('checkpoint: extra.updates must hold the policy and monitor update counts');
    const counts = { policy: updates.policy, monitor: updates.monitor };
    const assignKl = parseKlCtrls(this.klCtrls, extra);
    const assignCritics = parseCritics(this.critics, extra.critics);
    return () => {
      assignKl();
      this.lambda = lambda;
      this.updates = counts;
      // Mid-cycle, the shared batch cannot be re-sampled (the monitor has moved since): it is saved.
      // A checkpoint from before dynamic sampling holds one batch's fields at the top level.
      const saved = (extra as { cycle?: CycleBatch & Partial<GenPart> }).cycle;
      const parts =
        saved?.parts ?? (saved?.a ? [{ a: saved.a, c: saved.c ?? null, rmA: saved.rmA!, rmC: saved.rmC! }] : []);
      const ok = parts.length > 0 && parts.every((p) => Array.isArray(p.rmA) && p.a?.gen);
      this.cycle = saved && typeof saved.start === 'number' && ok ? { start: saved.start, parts } : null;
      assignCritics();
    };
  }

  protected held() {
    return [this.critics.policy, this.critics.monitor, this.policy.loaded, this.monitor.loaded];
  }
}

/** The RM a config names: the rules stand-in, its blind variant, or an env judge. */
export function rewardModelFor(
  env: RecipeEnv,
  name: string,
  http: { judgeUrl: string; judgeUrlPromptToo: boolean },
): QaRewardModel {
  if (name === 'rules') return rulesRewardModel;
  if (name === 'blind') return blindRewardModel;
  if (name === 'blind-neutral') return blindNeutralRewardModel;
  return judgeRewardModel(env.judge(name, httpJudgeOptionsOf(http)));
}

/** Loads both players; the monitor gets an adapter unless frozen. */
export async function createGameRun(
  env: RecipeEnv,
  mode: GameMode,
  game: GameConfig,
  config: Record<string, unknown>,
  seed: number,
): Promise<GameRun> {
  const rm = rewardModelFor(env, game.rm, game);
  const data = game.dataset === SANDBOX_DATASET ? null : await loadQaData(env, game.dataset, mode);
  return createWithCleanup(async (own) => {
    const pol = own(await env.loadModel(game.policy, { weights: game.policyWeights }));
    const mon = own(await env.loadModel(game.monitor, { weights: game.monitorWeights }));
    const part = (m: LoadedModel, lr: number, stream: number): NamedLoraPart => ({
      lora: attachConfiguredLora(m.model, game, hash3(seed, 0x10a, stream)),
      optimizer: adamWFor(game, lr),
    });
    const policy = { loaded: pol, part: part(pol, game.policyLr, 91) };
    const monitor = { loaded: mon, part: mode === 'minmax' ? part(mon, game.monitorLr, 92) : null };
    return new GameRun(mode, policy, monitor, rm, game, config, seed, data);
  });
}

export const minmaxRecipe: Recipe<typeof minmaxSchema> = {
  lesson: minmaxLesson,
  name: 'minmax',
  title: 'MinMax: QA policy vs monitor',
  source: 'Monitor-vs-LLM (MinMax RLHF: dual PPO with TTUR and dual ascent on the fidelity constraint)',
  description:
    'The QA policy answers sandbox questions and the monitor critiques each answer with a CORRECT / INCORRECT verdict. ' +
    'The policy earns 0.5 clamp(RM) + 2.5 J (J: +1 when the verdict accepts its answer); the monitor earns -10 J - lambda F, ' +
    'F its fidelity (verdict error vs the truth and critique quality). Lambda rises by dual ascent while F stays above ' +
    'delta. Two timescales: k monitor updates at a higher learning rate per policy update.',
  schema: minmaxSchema,
  modelField: 'policy',
  create(env: RecipeEnv, config: MinmaxConfig, seed: number): Promise<RecipeRun> {
    return createGameRun(env, 'minmax', { ...config, judge: 'monitor' }, config, seed);
  },
};
