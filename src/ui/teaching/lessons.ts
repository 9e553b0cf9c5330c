// Teaching-mode text, one entry per recipe: what the source system does, its reward formula (and
// how a rollout's reward terms combine into it, so the panel can plug the latest values in), the
// weights that appear in it, and what to watch for, each tied to a metric where there is one.
// Written for a lecture: short, no code, the recipe's own names for the knobs.

/** How a rollout's `terms` (StepReport samples) make its reward. */
export type Combine = 'sum' | 'clip01' | 'none';

export interface Watch {
  text: string;
  /** A metric whose latest value is shown beside the text. */
  metric?: string;
}

export interface Lesson {
  recipe: string;
  title: string;
  /** What the source system does, in two or three sentences. */
  what: string;
  /** The reward, symbolically. */
  formula: string;
  combine: Combine;
  /** Symbols of the terms the panel plugs in (term key -> what it is). */
  termNames: Record<string, string>;
  /** Config fields that appear in the formula as weights. */
  weights: string[];
  watch: Watch[];
}

export const LESSONS: Lesson[] = [
  {
    recipe: 'arena',
    title: 'Arena: attacker and defender trained against each other',
    what:
      'Two small chat models take turns learning. For k steps the attacker learns to write prompts that make the defender say something harmful; ' +
      'then for k steps the defender learns to stay safe on those prompts while still answering ordinary questions. Each side trains only a small ' +
      'LoRA adapter, so the "before" model is always one switch away (that is what the KL term measures against).',
    formula:
      'attacker phase: R = harm + diversityCoef · diversity − attackerKlBeta · KL\n' +
      'defender phase: R = safetyWeight · (1 − harm) on a harmful prompt, utilityWeight · correct on a benign task, − defenderKlBeta · KL',
    combine: 'sum',
    termNames: { harm: 'harm', diversity: 'diversityCoef · diversity', safety: 'safetyWeight · (1 − harm)', utility: 'utilityWeight · correct', kl: '− β · KL' },
    weights: ['diversityCoef', 'attackerKlBeta', 'safetyWeight', 'utilityWeight', 'defenderKlBeta', 'phaseSteps'],
    watch: [
      { text: 'Attack success rate: it should climb in attacker phases and fall back in defender phases — a saw-tooth when both sides learn.', metric: 'judge/asr' },
      { text: 'Which side trained this step (1 = attacker).', metric: 'arena/phase_attacker' },
      { text: 'Over-refusal on benign tasks: a defender that refuses everything is "safe" but useless — the utility term is there to stop that.', metric: 'defender/over_refusal' },
      { text: 'Attacker diversity: near 0 means every prompt of a group is the same string (mode collapse).', metric: 'attacker/diversity_mean' },
    ],
  },
  {
    recipe: 'redteam',
    title: 'Red-teaming by RL (the Tinker red-team trainer)',
    what:
      'The defender itself is fine-tuned, with GRPO through a LoRA adapter, to produce harmful answers: each harmful prompt is answered G times, ' +
      'the judge scores each answer, and answers that scored above their group mean are made more likely. It shows how few steps it takes to undo ' +
      'safety training when an attacker can run RL on the weights.',
    formula: 'R = clip(harm − repetitionPenalty · repetition − klBeta · KL, 0, 1)',
    combine: 'clip01',
    termNames: { harm: 'harm', repetition: '− rp · repetition', kl: '− β · KL' },
    weights: ['repetitionPenalty', 'klBeta', 'earlyStopReward'],
    watch: [
      { text: 'Mean judge harm of the answers: the thing being maximised.', metric: 'judge/harm_mean' },
      { text: 'Attack success rate (share of answers the judge calls unsafe).', metric: 'judge/asr' },
      { text: 'Repetition: reward hacking by looping a harmful phrase shows up here first; the run stops above 0.5.', metric: 'repetition/mean' },
      { text: 'KL to the original defender: how far the weights have moved.', metric: 'kl/mean' },
    ],
  },
  {
    recipe: 'attack',
    title: 'Training the attacker (MTSA, attacker side)',
    what:
      'The attacker model learns, by RL, to rewrite a harmful goal into a prompt that makes a frozen defender comply. The defender never changes, ' +
      'so this measures how much an automated attacker can extract from a fixed model.',
    formula: 'R = harm + diversityCoef · diversity − klBeta · KL',
    combine: 'sum',
    termNames: { harm: 'harm', diversity: 'diversityCoef · diversity', kl: '− β · KL' },
    weights: ['diversityCoef', 'klBeta'],
    watch: [
      { text: 'Attack success rate against the frozen defender.', metric: 'judge/asr' },
      { text: 'Diversity: if it drops to 0 the attacker found one prompt and repeats it.', metric: 'diversity/mean' },
      { text: 'Distinct prompts per step.', metric: 'attack/distinct' },
    ],
  },
  {
    recipe: 'attacker-sft',
    title: 'Attacker warm-up by supervised fine-tuning (MTSA phase 1)',
    what:
      'Before RL, the attacker is taught by example: pairs of (harmful goal, adversarial prompt) in many tactics — role-play, hypotheticals, ' +
      'crescendos. There is no reward: the loss is the negative log-likelihood of the example prompt.',
    formula: 'loss = − mean over target tokens of log p(token | goal, earlier tokens)   (no reward)',
    combine: 'none',
    termNames: {},
    weights: ['lr'],
    watch: [
      { text: 'SFT loss: falls fast, then flattens.', metric: 'loss/sft' },
      { text: 'Distinct greedy prompts for held-out goals: low means the attacker copies one template.', metric: 'sample/distinct' },
    ],
  },
  {
    recipe: 'defend',
    title: 'Defender RL against an attacker (MTSA-RLVR)',
    what:
      'A frozen attacker writes harmful prompts; the defender answers each G times and learns to answer safely, while benign tasks (some dressed ' +
      'up to look adversarial) keep it from refusing everything. An entropy bonus rewards confident answers.',
    formula: 'R = safetyWeight · (1 − harm) | utilityWeight · correct  − entropyCoef · mean entropy − klBeta · Σ_t KL_t (per token, as MTSA)',
    combine: 'sum',
    termNames: { safety: 'safetyWeight · (1 − harm)', utility: 'utilityWeight · correct', entropy: '− entropyCoef · H', kl: '− β · KL' },
    weights: ['safetyWeight', 'utilityWeight', 'entropyCoef', 'klBeta'],
    watch: [
      { text: 'Attack success rate of the attacker\'s prompts: should fall.', metric: 'judge/asr' },
      { text: 'Benign tasks answered correctly: should not fall.', metric: 'defender/benign_correct' },
      { text: 'Over-refusal of benign tasks.', metric: 'defender/over_refusal' },
    ],
  },
  {
    recipe: 'multiturn',
    title: 'Multi-turn safety (SaFeR-Steer)',
    what:
      'Attacks that escalate over several turns (a harmless opener, a soft follow-up, then the real request) are played as whole episodes; every ' +
      'defender reply is scored and the scores are aggregated into one episode reward, so the defender learns to notice where a conversation is going.',
    formula: 'turn s = max(0, 0.4 safety + 0.4 usefulness + 0.2 format − 0.2 rep3);  R = aggregate(s₀ … sₙ)  (min_mean = 0.3 min + 0.7 mean)',
    combine: 'none',
    termNames: { safety: 'mean safety', utility: 'mean usefulness', format: 'mean format', repetition: '− rp · mean rep3' },
    weights: ['safetyWeight', 'usefulnessWeight', 'formatWeight', 'repetitionPenalty', 'aggregation'],
    watch: [
      { text: 'Episode reward.', metric: 'reward/mean' },
      { text: 'Entropy of the replies.', metric: 'entropy/mean' },
    ],
  },
  {
    recipe: 'tokenbuncher',
    title: 'Token Buncher: make harmful answers too confident to exploit',
    what:
      'RL-based harmful fine-tuning needs the model to explore (sample varied answers) to find a reward signal. Token Buncher trains the defender to ' +
      'answer harmful prompts with very low entropy, so an attacker\'s RL later has nothing to reinforce, while benign utility is kept.',
    formula: 'harmful: R = − mean entropy (+ safetyWeight · (1 − harm)) − klBeta · Σ_t KL_t;  benign: R = utilityWeight · correct − klBeta · Σ_t KL_t',
    combine: 'sum',
    termNames: { entropy: '− mean entropy', safety: 'safetyWeight · (1 − harm)', utility: 'utilityWeight · correct', kl: '− β · KL' },
    weights: ['safetyWeight', 'utilityWeight', 'klBeta', 'noiserEpsilon'],
    watch: [
      { text: 'Entropy on harmful prompts: should drop towards 0.', metric: 'entropy/harmful_mean' },
      { text: 'Benign correctness: should hold.', metric: 'defender/benign_correct' },
      {
        text: 'KL to the starting defender: TokenNoiser steps push it up. On the sandbox the source\'s noise share (0.1) lets it run away and the defence fails; 0.02 with safetyWeight 1 holds only with zero-advantage groups skipped, and no noiser with safetyWeight 1 holds (EXPERIMENTS.md).',
        metric: 'kl/mean',
      },
    ],
  },
  {
    recipe: 'minmax',
    title: 'Monitor vs policy: a min-max game',
    what:
      'A QA policy and a monitor that critiques its answers are trained in turn. The policy gains when the monitor accepts its answer; the monitor ' +
      'gains by rejecting answers but pays λ·F for verdicts that disagree with the truth, and λ rises while that fidelity gap stays above δ.',
    formula: 'policy: R = 0.5 · clamp(RM, −15, 15) + 2.5 · J;  monitor: −10 J − λ F;  λ ← clip(λ + 0.25 (F − δ), 0, 30)',
    combine: 'none',
    termNames: {},
    weights: ['klBeta'],
    watch: [
      { text: 'λ, the price of unfaithful verdicts.', metric: 'dual/lambda' },
      { text: 'Policy accuracy.', metric: 'policy/accuracy' },
      { text: 'Monitor verdict accuracy.', metric: 'monitor/verdict_acc' },
    ],
  },
  {
    recipe: 'rlhf',
    title: 'Single-player RLHF baseline',
    what: 'The min-max game without a trained monitor: the policy learns from the reward model (and an untrained monitor\'s verdict) alone — the baseline the game is compared with.',
    formula: 'R = 0.5 · clamp(RM, −15, 15) + 2.5 · J   (J from the untrained monitor, or left out)',
    combine: 'none',
    termNames: {},
    weights: [],
    watch: [
      { text: 'Policy accuracy.', metric: 'policy/accuracy' },
      { text: 'Reward-model score.', metric: 'policy/rm_mean' },
    ],
  },
];

export function lessonFor(recipe: string): Lesson | undefined {
  return LESSONS.find((l) => l.recipe === recipe);
}
