// Teaching mode's lesson for `rlhf` (shown beside a run of it; the fields: src/contract/lesson.ts).
import type { Lesson } from '../../contract/lesson';

export const rlhfLesson: Lesson = {
  recipe: 'rlhf',
  title: 'Single-player RLHF baseline',
  what: "The min-max game without a trained monitor: the policy learns from the reward model (and an untrained monitor's verdict) alone — the baseline the game is compared with.",
  formula: 'R = 0.5 · clamp(RM, −15, 15) + 2.5 · J   (J from the untrained monitor, or left out)',
  combine: 'none',
  // The policy's terms; a monitor step's are its payoff (judge) and −λ · F (fidelity).
  termNames: { rm: '0.5 · clamp(RM)', judge: 'J (monitor verdict)', fidelity: '− λ · F', kl: '− β · KL' },
  weights: [],
  watch: [
    { text: 'Policy accuracy.', metric: 'policy/accuracy' },
    { text: 'Reward-model score.', metric: 'policy/rm_mean' },
  ],
};
