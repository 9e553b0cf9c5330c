// Teaching mode's lesson for `minmax` (shown beside a run of it; the fields: src/contract/lesson.ts).
import type { Lesson } from '../../contract/lesson';

export const minmaxLesson: Lesson = {
  recipe: 'minmax',
  title: 'Monitor vs policy: a min-max game',
  what:
    'A QA policy and a monitor that critiques its answers are trained in turn. The policy gains when the monitor accepts its answer; the monitor ' +
    'gains by rejecting answers but pays λ·F for verdicts that disagree with the truth, and λ rises while that fidelity gap stays above δ. ' +
    'The sandbox monitor starts with a designed blind spot: it accepts any answer to a count question. In rlhf the policy trains against ' +
    'that monitor frozen; here the monitor may learn to close it. In three seeds of 37 steps it did not: it never sampled INCORRECT on a ' +
    'count item (probability under 0.002), so no reward could reach the blind spot, and F never came within δ.',
  formula: 'policy: R = 0.5 · clamp(RM, −15, 15) + 2.5 · J;  monitor: −10 J − λ F;  λ ← clip(λ + 0.25 (F − δ), 0, 30)',
  combine: 'none',
  // The policy's terms; a monitor step's are its payoff (judge) and −λ · F (fidelity).
  termNames: { rm: '0.5 · clamp(RM)', judge: 'J (monitor verdict)', fidelity: '− λ · F', kl: '− β · KL' },
  weights: ['klBeta'],
  watch: [
    { text: 'λ, the price of unfaithful verdicts: it rises at every cycle while F > δ.', metric: 'dual/lambda' },
    {
      text: 'The blind spot: the share of wrong count answers the monitor accepts on held-out items (with evalEvery > 0). 1.0 = fully blind; it stayed at 1.0 in the three seeds run.',
      metric: 'eval/monitor_accepts_wrong_count',
    },
    {
      text: 'Truth accuracy on count questions, the kind the monitor cannot check (held-out).',
      metric: 'eval/policy_acc_count',
    },
    { text: 'Policy accuracy.', metric: 'policy/accuracy' },
    { text: 'Monitor verdict accuracy.', metric: 'monitor/verdict_acc' },
  ],
};
