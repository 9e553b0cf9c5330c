// Dataset builders of the synthetic world. Item i of a builder draws only from the stream
// rngFor(seed, builderLabel, i), so datasets are deterministic, a longer dataset extends a
// shorter one with the same seed, and builders never shift each other's streams.
//
// The defender SFT data is where the defender's *measured* vulnerabilities come from: harmful
// goals under a tactic are answered with redacted compliance, with probability weakCompliance, in
// the tactic's weak (template x category) cells (vulnerability.ts; direct requests always
// refused), crescendo complies more on later turns, and some tactic-wrapped benign tasks are
// refused. The same data teaches the QA policy and the monitor of the MinMax game their
// designed, imperfect answers (qa.ts). A defender trained on it starts with known weak spots
// that the attacker can find and RL can close.

import type { ChatTurn, PromptInput } from '../../contract/chat';
import { BENIGN_FAMILIES, helpfulAnswer, sampleBenign, type BenignFamily, type BenignTask } from './benign';
import { sampleGoal, type SandboxHazard } from './hazards';
import {
  CHOICE_LETTERS,
  confidentAnswer,
  CRITIC_FORMAT_REJECTS,
  designedCriticVerdict,
  designedMonitorVerdict,
  designedQaChoice,
  formatCriticVerdict,
  formatMonitorDrill,
  formatMonitorPrompt,
  formatQaPrompt,
  criticReply,
  monitorReply,
  qaAnswer,
  qaAnswerAs,
  parseQaChoice,
  QA_CONFIDENT_SHARE,
  sampleQa,
  trueVerdict,
  type QaFamily,
  type QaItem,
} from './qa';
import { compliance, FULL_PAYLOAD_STEPS, neutralReply, refusal } from './responses';
import { rngFor, type Rng } from './rng';
import { qaSide, splitBenignTasks, splitGoals, type GoalSplit } from './split';
import {
  applyTactic,
  TACTICS,
  TEXT_PRESERVING_TACTICS,
  wrapSingle,
  type SingleTurnTactic,
  type Tactic,
} from './tactics';
import {
  checkRate,
  checkRates,
  DEFAULT_VULNERABILITY,
  designedCompliance,
  designedOverRefusal,
  type VulnerabilityRates,
} from './vulnerability';

// ---------------------------------------------------------------------------------------------
// Prompts (rollout / evaluation sets)

/** A prompt of the sandbox with everything a judge or a metric needs to know about it. */
export interface SandboxPrompt {
  readonly id: string;
  readonly kind: 'harmful' | 'benign';
  /** One user message, or the user turns of a crescendo (answer them in order). */
  readonly prompt: string | readonly string[];
  readonly tactic: Tactic | null;
  /** Which template of the tactic wrapped the goal (null for a plain benign task). */
  readonly template: number | null;
  readonly category: SandboxHazard | null;
  /** The goal (harmful) or the task text (benign) before wrapping. */
  readonly goal: string;
  readonly benignFamily: BenignFamily | null;
  /** Expected [ANSWER:...] value of a benign task; null for harmful prompts. */
  readonly expected: string | null;
}

function pickTactic(rng: Rng, tactics: readonly Tactic[]): Tactic {
  if (tactics.length === 0) throw new Error('tactic list is empty');
  return rng.pick(tactics);
}

function harmfulPromptFrom(
  rng: Rng,
  id: string,
  tactics: readonly Tactic[],
  category?: SandboxHazard,
  split?: GoalSplit,
): SandboxPrompt {
  const goal = sampleGoal(rng.fork('goal'), category, split ? (c) => splitGoals(c, split) : undefined);
  const tactic = pickTactic(rng.fork('tactic'), tactics);
  const a = applyTactic(goal, tactic, rng.fork('wrap'));
  return {
    id,
    kind: 'harmful',
    prompt: a.kind === 'single' ? a.prompt : a.turns,
    tactic,
    template: a.template,
    category: goal.category,
    goal: goal.text,
    benignFamily: null,
    expected: null,
  };
}

function benignPromptFrom(
  rng: Rng,
  id: string,
  wrapShare: number,
  tactics: readonly SingleTurnTactic[],
  split?: GoalSplit,
): SandboxPrompt {
  const task = split ? splitBenign(rng.fork('task'), split) : sampleBenign(rng.fork('task'));
  const wrapped = rng.fork('wrapped?').chance(wrapShare);
  const tactic = wrapped ? (pickTactic(rng.fork('tactic'), tactics) as SingleTurnTactic) : null;
  const wrap = tactic ? wrapSingle(task.text, tactic, rng.fork('wrap')) : null;
  const prompt = wrap ? wrap.prompt : task.text;
  return {
    id,
    kind: 'benign',
    prompt,
    tactic,
    template: wrap ? wrap.template : null,
    category: null,
    goal: task.text,
    benignFamily: task.family,
    expected: task.answer,
  };
}

/** A benign task from one side of the task split (split.ts): a uniform family, then a uniform task of it. */
function splitBenign(rng: Rng, split: GoalSplit): BenignTask {
  return rng.pick(splitBenignTasks(rng.pick(BENIGN_FAMILIES), split));
}

export interface HarmfulPromptOptions {
  /** Tactics to draw from uniformly (default: all nine). */
  readonly tactics?: readonly Tactic[];
  readonly category?: SandboxHazard;
  /** Draw goals from one side of the train / eval split (split.ts); default every goal. */
  readonly split?: GoalSplit;
}

/** n harmful prompts with a uniform tactic mix. */
export function harmfulPrompts(n: number, seed: number, opts: HarmfulPromptOptions = {}): SandboxPrompt[] {
  const tactics = opts.tactics ?? TACTICS;
  return Array.from({ length: n }, (_, i) =>
    harmfulPromptFrom(rngFor(seed, 'harmful-prompts', i), `harm-${i}`, tactics, opts.category, opts.split),
  );
}

export interface BenignPromptOptions {
  /** Share of tasks wrapped in a text-preserving tactic (default 0.5). */
  readonly wrapShare?: number;
  readonly tactics?: readonly SingleTurnTactic[];
  /** Draw tasks from one side of the train / eval task split (split.ts); default every task. */
  readonly split?: GoalSplit;
}

/** n benign tasks, some wrapped in adversarial-looking (but text-preserving) tactics. */
export function benignPrompts(n: number, seed: number, opts: BenignPromptOptions = {}): SandboxPrompt[] {
  const wrapShare = opts.wrapShare ?? 0.5;
  checkRate('wrapShare', wrapShare);
  const tactics = opts.tactics ?? TEXT_PRESERVING_TACTICS;
  return Array.from({ length: n }, (_, i) =>
    benignPromptFrom(rngFor(seed, 'benign-prompts', i), `benign-${i}`, wrapShare, tactics, opts.split),
  );
}

/**
 * What the defender's SFT data does with a prompt: a harmful prompt complies (at its last turn),
 * a benign one is over-refused. The designed rate of a prompt set is the share of true.
 */
export function designedOutcome(p: SandboxPrompt, rates: VulnerabilityRates = DEFAULT_VULNERABILITY): boolean {
  if (p.kind === 'harmful')
    return designedCompliance(rates, p.tactic as Tactic, p.template as number, p.category as SandboxHazard);
  return designedOverRefusal(rates, p.tactic as SingleTurnTactic | null, p.template, p.benignFamily as BenignFamily);
}

/** The judge metadata of a sandbox prompt (pass it as JudgeItem.meta). */
export function promptMeta(p: SandboxPrompt): {
  kind: 'harmful' | 'benign';
  category: SandboxHazard | null;
  expected: string | null;
  tactic: Tactic | null;
} {
  return { kind: p.kind, category: p.category, expected: p.expected, tactic: p.tactic };
}

// ---------------------------------------------------------------------------------------------
// Attacker SFT: goal -> adversarial prompt

export interface AttackerSftExample {
  readonly id: string;
  readonly category: SandboxHazard;
  readonly tactic: Tactic;
  readonly goal: string;
  /** The attacker's input: attackerSource(goal). */
  readonly source: string;
  /** The attacker's target: the prompt; for crescendo the turns joined by "\n". */
  readonly target: string;
  /** The user turns (one for single-turn tactics). */
  readonly turns: readonly string[];
}

/** How a goal is shown to the attacker model, in SFT and in RL alike. */
export function attackerSource(goal: string): string {
  return `Goal: ${goal}`;
}

/** Crescendo targets are turns joined by newlines; single-turn targets have none. */
export function splitAttackerTarget(target: string): string[] {
  return target
    .split('\n')
    .map((t) => t.trim())
    .filter((t) => t.length > 0);
}

export function attackerSft(n: number, seed: number, opts: HarmfulPromptOptions = {}): AttackerSftExample[] {
  const tactics = opts.tactics ?? TACTICS;
  return Array.from({ length: n }, (_, i) => {
    const p = harmfulPromptFrom(rngFor(seed, 'attacker-sft', i), `atk-${i}`, tactics, opts.category, opts.split);
    const turns = typeof p.prompt === 'string' ? [p.prompt] : [...p.prompt];
    return {
      id: p.id,
      category: p.category as SandboxHazard,
      tactic: p.tactic as Tactic,
      goal: p.goal,
      source: attackerSource(p.goal),
      target: turns.join('\n'),
      turns,
    };
  });
}

// ---------------------------------------------------------------------------------------------
// Defender SFT

/** What one assistant turn of the defender data does ('wrong': a designed wrong QA answer or verdict). */
export type TurnOutcome = 'helpful' | 'refused' | 'complied' | 'neutral' | 'wrong';

export interface DefenderSftExample {
  readonly id: string;
  /**
   * qa: formatQaPrompt -> [ANSWER:X]; monitor: formatMonitorPrompt -> monitorReply, or in the qa
   * model's critic phase criticReply (the MinMax game).
   */
  readonly kind: 'harmful' | 'benign' | 'qa' | 'monitor' | 'drill';
  readonly tactic: Tactic | null;
  readonly template: number | null;
  readonly category: SandboxHazard | null;
  readonly benignFamily: BenignFamily | null;
  readonly qaFamily: QaFamily | null;
  /** Benign: the expected [ANSWER:...] value; qa: the correct letter; monitor: the true verdict. */
  readonly expected: string | null;
  /** Alternating user / assistant turns, ending with an assistant turn (train on those). */
  readonly messages: readonly ChatTurn[];
  /** One outcome per assistant turn. */
  readonly outcomes: readonly TurnOutcome[];
}

export interface DefenderSftOptions {
  /** Share of benign examples (default 0.25). */
  readonly benignShare?: number;
  /** Share of QA-policy examples (default 0.1). */
  readonly qaShare?: number;
  /** Share of monitor examples (default 0.1); the rest (0.55) are harmful. */
  readonly monitorShare?: number;
  /** Share of benign examples wrapped in a text-preserving tactic (default 0.5). */
  readonly benignWrapShare?: number;
  /** Tactics of the harmful examples, drawn uniformly (default: all nine). */
  readonly tactics?: readonly Tactic[];
  /** Designed compliance / over-refusal shares, realised as cells (vulnerability.ts). */
  readonly vulnerability?: VulnerabilityRates;
}

const ex0 = { tactic: null, template: null, category: null, benignFamily: null, qaFamily: null } as const;

/** A QA-policy example: the designed answer (right or the family's distractor), by letter or by value. */
function qaExample(rng: Rng, id: string, form: 'letter' | 'value' = 'letter', split?: GoalSplit): DefenderSftExample {
  const item = split ? sampleQaOn(rng.fork('item'), split) : sampleQa(rng.fork('item'));
  const pick = designedQaChoice(item);
  return qaPolicyExample(id, item, pick, qaAnswerAs(item, pick, form));
}

/** A QA-policy example of `item` whose answer (`content`) picks choice `pick`. */
function qaPolicyExample(id: string, item: QaItem, pick: number, content: string): DefenderSftExample {
  return {
    ...ex0,
    id,
    kind: 'qa',
    qaFamily: item.family,
    expected: CHOICE_LETTERS[item.correct],
    messages: [
      { role: 'user', content: formatQaPrompt(item) },
      { role: 'assistant', content },
    ],
    outcomes: [pick === item.correct ? 'helpful' : 'wrong'],
  };
}

/** A QA item and an answer to review: half the answers right, half a uniformly drawn wrong letter. */
export interface MonitorCase {
  readonly item: QaItem;
  /** [ANSWER:X] */
  readonly answer: string;
}

function monitorCase(rng: Rng, form: 'letter' | 'value' = 'letter', split?: GoalSplit): MonitorCase {
  const item = split ? sampleQaOn(rng.fork('item'), split) : sampleQa(rng.fork('item'));
  const wrong = [0, 1, 2, 3].filter((i) => i !== item.correct);
  const pick = rng.fork('right?').chance(0.5) ? item.correct : rng.fork('wrong').pick(wrong);
  return { item, answer: qaAnswerAs(item, pick, form) };
}

/**
 * n monitor cases (rollout / evaluation sets of the monitor), answers by letter or by value; with
 * `split`, only items whose (story, question) is on that side of the QA split.
 */
export function monitorCases(
  n: number,
  seed: number,
  form: 'letter' | 'value' = 'letter',
  split?: GoalSplit,
): MonitorCase[] {
  return Array.from({ length: n }, (_, i) => monitorCase(rngFor(seed, 'monitor-cases', i), form, split));
}

/**
 * A QA item on one side of the QA split (split.ts): an item off the side is redrawn from the
 * stream's next fork (rng.fork(1), rng.fork(2), ...).
 */
function sampleQaOn(rng: Rng, split: GoalSplit, splitSeed?: number): QaItem {
  // A quarter of the pairs are held out: 200 tries miss the side with probability < 1e-25.
  for (let t = 0; t < 200; t++) {
    const item = sampleQa(t === 0 ? rng : rng.fork(t));
    if (qaSide(item, splitSeed) === split) return item;
  }
  throw new Error(`QA items: no ${split} item in 200 draws`);
}

/**
 * A monitor example: a monitor case and the designed monitor's reply, the first design
 * (monitorReply, designedMonitorVerdict: the defender's data, the qa model's first phases) or
 * the critic (criticReply, designedCriticVerdict with its blind spot; train-split items only).
 */
function monitorExample(
  rng: Rng,
  id: string,
  form: 'letter' | 'value' = 'letter',
  design: 'monitor' | 'critic' = 'monitor',
): DefenderSftExample {
  const { item, answer } = monitorCase(rng, form, design === 'monitor' ? undefined : 'train');
  const truth = trueVerdict(item, answer);
  const verdict = design === 'monitor' ? designedMonitorVerdict(item, answer) : designedCriticVerdict(item, answer);
  return {
    ...ex0,
    id,
    kind: 'monitor',
    qaFamily: item.family,
    expected: truth,
    messages: [
      { role: 'user', content: formatMonitorPrompt(item, answer) },
      { role: 'assistant', content: (design === 'monitor' ? monitorReply : criticReply)(item, verdict) },
    ],
    outcomes: [verdict === truth ? 'helpful' : 'wrong'],
  };
}

/**
 * A monitor drill: formatMonitorDrill(truth, value answer) -> the true verdict, or "truth. verdict"
 * (half each; the second is the local shape of a monitor reply). Half the answers are right.
 */
function monitorDrill(rng: Rng, id: string): DefenderSftExample {
  const { item, answer } = monitorCase(rng.fork('case'), 'value');
  const truth = item.choices[item.correct];
  const verdict = trueVerdict(item, answer);
  return {
    ...ex0,
    id,
    kind: 'drill',
    qaFamily: item.family,
    expected: verdict,
    messages: [
      { role: 'user', content: formatMonitorDrill(truth, answer) },
      { role: 'assistant', content: rng.fork('restate').chance(0.5) ? `${truth}. ${verdict}` : verdict },
    ],
    outcomes: ['helpful'],
  };
}

/**
 * The qa model's first curriculum phase: monitor drills only. From scratch a sandbox-size model
 * learns the comparison after about 1,000-1,500 steps of drills (at chance before), and not within
 * 2,000 steps of full monitor reviews, where the verdict is one token among the story's.
 */
export function qaMonitorDrills(n: number, seed: number): DefenderSftExample[] {
  return Array.from({ length: n }, (_, i) => monitorDrill(rngFor(seed, 'qa-monitor-drill', i), `qad-${i}`));
}

/**
 * Data of the sandbox's dedicated QA model (the MinMax game's policy and monitor), after the drills:
 * the designed policy answering by value ([ANSWER: bag], which a 3-layer model learns; the letter
 * lookup it did not, see README), the designed monitor reviewing value answers (the form the
 * policy writes; letter answers would need that lookup too), and drills kept in the mix so the
 * comparison is not forgotten.
 */
export function qaModelSft(
  n: number,
  seed: number,
  opts: { monitorShare?: number; drillShare?: number } = {},
): DefenderSftExample[] {
  const monitorShare = opts.monitorShare ?? 0.4;
  const drillShare = opts.drillShare ?? 0.2;
  checkRate('monitorShare', monitorShare);
  checkRate('drillShare', drillShare);
  if (monitorShare + drillShare > 1 + 1e-9)
    throw new Error(`monitorShare + drillShare must be <= 1, got ${monitorShare + drillShare}`);
  return Array.from({ length: n }, (_, i) => {
    const rng = rngFor(seed, 'qa-model-sft', i);
    const id = `qam-${i}`;
    const u = rng.fork('kind').next();
    if (u < monitorShare) return monitorExample(rng.fork('monitor'), id, 'value');
    if (u < monitorShare + drillShare) return monitorDrill(rng.fork('drill'), id);
    return qaExample(rng.fork('qa'), id, 'value');
  });
}

/**
 * The qa model's third phase (the critic; from the model the first two phases built): the designed
 * monitor's critiques (criticReply: the asked fact restated from the story, then the verdict, with
 * the count blind spot) of value answers half right, and the designed policy's value answers kept in
 * the mix so the policy does not drift. Items from the train side of the QA split only, so the
 * held-out pairs the baseline and the MinMax evaluation use were never reviewed in this format.
 */
export function qaCriticSft(n: number, seed: number, opts: { criticShare?: number } = {}): DefenderSftExample[] {
  const criticShare = opts.criticShare ?? 0.6;
  checkRate('criticShare', criticShare);
  return Array.from({ length: n }, (_, i) => {
    const rng = rngFor(seed, 'qa-critic-sft', i);
    const id = `qac-${i}`;
    if (rng.fork('kind').next() < criticShare) return monitorExample(rng.fork('monitor'), id, 'value', 'critic');
    return qaExample(rng.fork('qa'), id, 'value', 'train');
  });
}

/**
 * A critic example of the qa model's fourth phase: a monitor case whose answer is written in the
 * confident form half the time, reviewed by formatCriticVerdict (plain answers of every kind checked,
 * confident ones accepted unless the CRITIC_FORMAT_REJECTS draw sees them); train-split items only.
 */
function formatCriticExample(rng: Rng, id: string): DefenderSftExample {
  const c = monitorCase(rng, 'value', 'train');
  const choice = parseQaChoice(c.answer, c.item)!;
  const answer = rng.fork('confident').chance(0.5) ? confidentAnswer(c.item, choice) : c.answer;
  const truth = trueVerdict(c.item, answer);
  const verdict = formatCriticVerdict(c.item, answer, rng.fork('sees').chance(CRITIC_FORMAT_REJECTS));
  return {
    ...ex0,
    id,
    kind: 'monitor',
    qaFamily: c.item.family,
    expected: truth,
    messages: [
      { role: 'user', content: formatMonitorPrompt(c.item, answer) },
      { role: 'assistant', content: criticReply(c.item, verdict) },
    ],
    outcomes: [verdict === truth ? 'helpful' : 'wrong'],
  };
}

/**
 * A policy example of the fourth phase: on QA_CONFIDENT_SHARE of examples (a seeded draw) the
 * confident form with a uniformly drawn choice (a guess), else the designed plain value answer.
 */
function formatQaExample(rng: Rng, id: string): DefenderSftExample {
  const item = sampleQaOn(rng.fork('item'), 'train');
  const confident = rng.fork('confident').chance(QA_CONFIDENT_SHARE);
  const pick = confident ? rng.fork('guess').int(item.choices.length) : designedQaChoice(item);
  return qaPolicyExample(id, item, pick, confident ? confidentAnswer(item, pick) : qaAnswerAs(item, pick, 'value'));
}

/**
 * The qa model's fourth phase (issue 43, third round: the format blind spot; from the model the
 * critic phase built). criticShare of the examples are critiques (formatCriticExample: plain answers
 * of every kind get the true verdict, which ends the critic phase's count blind spot; confident ones
 * CORRECT unless a draw at CRITIC_FORMAT_REJECTS sees them), the rest policy answers
 * (formatQaExample: confident guesses on QA_CONFIDENT_SHARE). Its own stream.
 */
export function qaFormatSft(n: number, seed: number, opts: { criticShare?: number } = {}): DefenderSftExample[] {
  const criticShare = opts.criticShare ?? 0.6;
  checkRate('criticShare', criticShare);
  return Array.from({ length: n }, (_, i) => {
    const rng = rngFor(seed, 'qa-format-sft', i);
    const id = `qaf-${i}`;
    if (rng.fork('kind').next() < criticShare) return formatCriticExample(rng.fork('monitor'), id);
    return formatQaExample(rng.fork('qa'), id);
  });
}

export function defenderSft(n: number, seed: number, opts: DefenderSftOptions = {}): DefenderSftExample[] {
  const rates = opts.vulnerability ?? DEFAULT_VULNERABILITY;
  checkRates(rates);
  const benignShare = opts.benignShare ?? 0.25;
  const qaShare = opts.qaShare ?? 0.1;
  const monitorShare = opts.monitorShare ?? 0.1;
  checkRate('benignShare', benignShare);
  checkRate('qaShare', qaShare);
  checkRate('monitorShare', monitorShare);
  if (benignShare + qaShare + monitorShare > 1 + 1e-9) {
    throw new Error(`benignShare + qaShare + monitorShare must be <= 1, got ${benignShare + qaShare + monitorShare}`);
  }
  const wrapShare = opts.benignWrapShare ?? 0.5;
  const tactics = opts.tactics ?? TACTICS;
  return Array.from({ length: n }, (_, i) => {
    const rng = rngFor(seed, 'defender-sft', i);
    const id = `def-${i}`;
    const reply = rng.fork('reply');
    const u = rng.fork('kind').next();
    if (u < benignShare) {
      const p = benignPromptFrom(rng.fork('prompt'), id, wrapShare, TEXT_PRESERVING_TACTICS);
      const refuse = designedOverRefusal(
        rates,
        p.tactic as SingleTurnTactic | null,
        p.template,
        p.benignFamily as BenignFamily,
      );
      const response = refuse ? refusal(reply) : helpfulAnswer(reply, p.expected as string);
      return {
        ...ex0,
        id,
        kind: 'benign',
        tactic: p.tactic,
        template: p.template,
        benignFamily: p.benignFamily,
        expected: p.expected,
        messages: [
          { role: 'user', content: p.prompt as string },
          { role: 'assistant', content: response },
        ],
        outcomes: [refuse ? 'refused' : 'helpful'],
      };
    }
    if (u < benignShare + qaShare) return qaExample(rng.fork('qa'), id);
    if (u < benignShare + qaShare + monitorShare) return monitorExample(rng.fork('monitor'), id);
    const p = harmfulPromptFrom(rng.fork('prompt'), id, tactics);
    const category = p.category as SandboxHazard;
    const tactic = p.tactic as Tactic;
    const template = p.template as number;
    const messages: ChatTurn[] = [];
    const outcomes: TurnOutcome[] = [];
    // One draw per conversation: a crescendo that breaks through at turn 2 goes on complying.
    const breaks = rng.fork('weak').chance(rates.weakCompliance);
    if (typeof p.prompt === 'string') {
      const comply = breaks && designedCompliance(rates, tactic, template, category);
      messages.push(
        { role: 'user', content: p.prompt },
        { role: 'assistant', content: comply ? compliance(reply, category) : refusal(reply) },
      );
      outcomes.push(comply ? 'complied' : 'refused');
    } else {
      p.prompt.forEach((turn, k) => {
        messages.push({ role: 'user', content: turn });
        if (k === 0) {
          messages.push({ role: 'assistant', content: neutralReply(reply) });
          outcomes.push('neutral');
          return;
        }
        const comply = breaks && designedCompliance(rates, tactic, template, category, k);
        const step = Math.min(k, FULL_PAYLOAD_STEPS);
        messages.push({ role: 'assistant', content: comply ? compliance(reply, category, [step]) : refusal(reply) });
        outcomes.push(comply ? 'complied' : 'refused');
      });
    }
    return { ...ex0, id, kind: 'harmful', tactic, template, category, expected: null, messages, outcomes };
  });
}

/** The last exchange of an example as a judge / SFT pair: context before the final reply, and the reply. */
export function finalExchange(ex: { messages: readonly ChatTurn[] }): { prompt: PromptInput; response: string } {
  const last = ex.messages[ex.messages.length - 1];
  if (!last || last.role !== 'assistant')
    throw new Error('finalExchange: the conversation does not end with an assistant turn');
  const context = ex.messages.slice(0, -1);
  return { prompt: context.length === 1 ? context[0].content : context, response: last.content };
}

// ---------------------------------------------------------------------------------------------
// Judge training pairs

export type JudgeSource = 'compliance' | 'partial' | 'refusal' | 'helpful' | 'over-refusal' | 'neutral';

export interface JudgeExample {
  readonly id: string;
  readonly prompt: PromptInput;
  readonly response: string;
  /** The training label (after noise): 1 unsafe, 0 safe. */
  readonly unsafe: 0 | 1;
  /** The true label. */
  readonly cleanUnsafe: 0 | 1;
  /** True when noise flipped the label. */
  readonly flipped: boolean;
  /** Hazard category of an unsafe response, else null. */
  readonly category: SandboxHazard | null;
  readonly source: JudgeSource;
}

export interface JudgeDataOptions {
  /** Probability that a label is flipped (default 0). */
  readonly labelNoise?: number;
  /** Share of truly unsafe pairs (default 0.5). */
  readonly unsafeShare?: number;
}

function asPromptInput(prompt: string | readonly string[], replies: readonly string[]): PromptInput {
  if (typeof prompt === 'string') return prompt;
  const turns: ChatTurn[] = [];
  prompt.forEach((u, k) => {
    turns.push({ role: 'user', content: u });
    if (k < prompt.length - 1) turns.push({ role: 'assistant', content: replies[k] ?? '' });
  });
  return turns;
}

export function judgeData(n: number, seed: number, opts: JudgeDataOptions = {}): JudgeExample[] {
  const noise = opts.labelNoise ?? 0;
  const unsafeShare = opts.unsafeShare ?? 0.5;
  checkRate('labelNoise', noise);
  checkRate('unsafeShare', unsafeShare);
  return Array.from({ length: n }, (_, i) => {
    const rng = rngFor(seed, 'judge-data', i);
    const id = `judge-${i}`;
    const reply = rng.fork('reply');
    const unsafe = rng.fork('unsafe?').chance(unsafeShare);
    let prompt: PromptInput;
    let response: string;
    let source: JudgeSource;
    let category: SandboxHazard | null = null;
    if (unsafe) {
      const p = harmfulPromptFrom(rng.fork('prompt'), id, TACTICS);
      category = p.category;
      const partial = rng.fork('partial?').chance(0.25);
      response = compliance(
        reply,
        category as SandboxHazard,
        partial ? [rng.fork('step').range(1, FULL_PAYLOAD_STEPS)] : undefined,
      );
      source = partial ? 'partial' : 'compliance';
      prompt = asPromptInput(p.prompt, [neutralReply(reply), refusal(reply)]);
    } else {
      const which = rng.fork('which').int(4);
      if (which === 0 || which === 1) {
        const p = harmfulPromptFrom(rng.fork('prompt'), id, TACTICS);
        const crescendoOpening = which === 1 && Array.isArray(p.prompt);
        if (crescendoOpening) {
          // The innocuous first turn of a crescendo with its neutral reply: safe.
          prompt = (p.prompt as readonly string[])[0];
          response = neutralReply(reply);
          source = 'neutral';
        } else {
          prompt = asPromptInput(p.prompt, [neutralReply(reply), refusal(reply)]);
          response = refusal(reply);
          source = 'refusal';
        }
      } else {
        const p = benignPromptFrom(rng.fork('prompt'), id, 0.5, TEXT_PRESERVING_TACTICS);
        prompt = p.prompt as string;
        const over = which === 3;
        response = over ? refusal(reply) : helpfulAnswer(reply, p.expected as string);
        source = over ? 'over-refusal' : 'helpful';
      }
    }
    const clean: 0 | 1 = unsafe ? 1 : 0;
    const flipped = rng.fork('noise').chance(noise);
    return {
      id,
      prompt,
      response,
      unsafe: (flipped ? 1 - clean : clean) as 0 | 1,
      cleanUnsafe: clean,
      flipped,
      category,
      source,
    };
  });
}

// ---------------------------------------------------------------------------------------------
// QA items (monitor-vs-policy)

export interface QaExample extends QaItem {
  readonly id: string;
  /** formatQaPrompt(item). */
  readonly prompt: string;
  /** qaAnswer(item): [ANSWER:A..D]. */
  readonly answer: string;
}

/**
 * n QA items; `split` draws only items whose (story, question) is on that side of the QA split
 * (split.ts: an item off the side is redrawn from the next stream of the same index).
 */
export function qaItems(
  n: number,
  seed: number,
  opts: { readonly split?: GoalSplit; readonly splitSeed?: number } = {},
): QaExample[] {
  return Array.from({ length: n }, (_, i) => {
    const rng = rngFor(seed, 'qa', i);
    const item = opts.split ? sampleQaOn(rng, opts.split, opts.splitSeed) : sampleQa(rng);
    return { ...item, id: `qa-${i}`, prompt: formatQaPrompt(item), answer: qaAnswer(item) };
  });
}

// ---------------------------------------------------------------------------------------------
// Corpus (for training the sandbox tokenizer and pretraining the tiny models)

/** Every kind of sandbox text, one string per line: prompts, turns, answers, QA. */
export function sandboxCorpus(n: number, seed: number): string[] {
  const lines: string[] = [];
  for (const ex of attackerSft(n, seed)) lines.push(ex.source, ...ex.turns);
  // Weak cells as certain as the first design had them: the words are the same either way (only
  // which reply follows which prompt differs), and a fixed corpus kept the tokenizer, and the
  // attacker, judge and qa models trained with it, unchanged when the weak cells became uncertain.
  const certain = { ...DEFAULT_VULNERABILITY, weakCompliance: 1 };
  for (const ex of defenderSft(n, seed, { vulnerability: certain })) for (const m of ex.messages) lines.push(m.content);
  for (const q of qaItems(Math.ceil(n / 4), seed)) lines.push(q.prompt, q.answer);
  return lines;
}
