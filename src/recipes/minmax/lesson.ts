// Teaching mode's lesson for `minmax` (shown beside a run of it; the fields: src/contract/lesson.ts).
import type { Lesson } from '../../contract/lesson';

export const minmaxLesson: Lesson = {
  recipe: 'minmax',
  title: 'Monitor vs policy: a min-max game',
  what:
    'A QA policy and a monitor that critiques its answers are trained in turn. The policy gains when the monitor accepts its answer; the monitor ' +
    'gains by rejecting answers but pays λ·F for verdicts that disagree with the truth, and λ rises while that fidelity gap stays above δ. ' +
    'The sandbox monitor starts with a designed blind spot: it accepts count answers it cannot check (soft: sampled, it rejects about ' +
    'one wrong count answer in eight), and the reward model shares it, so on count only the monitor can tell the policy it is wrong. ' +
    'In rlhf the policy trains against that monitor frozen; here the monitor may close it. In three seeds of 37 steps it did not: ' +
    'where the game raised INCORRECT on count it did so for right and wrong answers alike (the monitor barely compares counts), ' +
    'the monitor lost accuracy on the kinds it checked, F never came within δ, and neither player ended more accurate.',
  formula: 'policy: R = 0.5 · clamp(RM, −15, 15) + 2.5 · J;  monitor: −10 J − λ F;  λ ← clip(λ + 0.25 (F − δ), 0, 30)',
  combine: 'none',
  // The policy's terms; a monitor step's are its payoff (judge) and −λ · F (fidelity).
  termNames: { rm: '0.5 · clamp(RM)', judge: 'J (monitor verdict)', fidelity: '− λ · F', kl: '− β · KL' },
  weights: ['klBeta'],
  watch: [
    { text: 'λ, the price of unfaithful verdicts: it rises at every cycle while F > δ.', metric: 'dual/lambda' },
    {
      text: 'The blind spot: the share of wrong count answers the monitor accepts on held-out items (with evalEvery > 0). 1.0 = fully blind.',
      metric: 'eval/monitor_accepts_wrong_count',
    },
    {
      text: "Whether closing it is verification: the count verdict's balanced accuracy (0.5 = it treats right and wrong count answers alike; it stayed near 0.5 in the seeds run).",
      metric: 'eval/monitor_acc_balanced_count',
    },
    {
      text: 'Truth accuracy on count questions, the kind the monitor cannot check (held-out).',
      metric: 'eval/policy_acc_count',
    },
    { text: 'Policy accuracy.', metric: 'policy/accuracy' },
    { text: 'Monitor verdict accuracy.', metric: 'monitor/verdict_acc' },
  ],
};
