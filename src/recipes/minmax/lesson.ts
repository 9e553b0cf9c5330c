// Teaching mode's lesson for `minmax` (shown beside a run of it; the fields: src/contract/lesson.ts).
import type { Lesson } from '../../contract/lesson';

export const minmaxLesson: Lesson = {
  recipe: 'minmax',
  title: 'Monitor vs policy: a min-max game',
  what:
    'A QA policy and a monitor that critiques its answers are trained in turn. The policy gains when the monitor accepts its answer; the monitor ' +
    'gains by rejecting answers but pays λ·F for verdicts that disagree with the truth, and λ rises while that fidelity gap stays above δ.',
  formula: 'policy: R = 0.5 · clamp(RM, −15, 15) + 2.5 · J;  monitor: −10 J − λ F;  λ ← clip(λ + 0.25 (F − δ), 0, 30)',
  combine: 'none',
  // The policy's terms; a monitor step's are its payoff (judge) and −λ · F (fidelity).
  termNames: { rm: '0.5 · clamp(RM)', judge: 'J (monitor verdict)', fidelity: '− λ · F', kl: '− β · KL' },
  weights: ['klBeta'],
  watch: [
    { text: 'λ, the price of unfaithful verdicts.', metric: 'dual/lambda' },
    { text: 'Policy accuracy.', metric: 'policy/accuracy' },
    { text: 'Monitor verdict accuracy.', metric: 'monitor/verdict_acc' },
  ],
};
