// Teaching mode's lesson for `rlhf` (shown beside a run of it; the fields: src/contract/lesson.ts).
import type { Lesson } from '../../contract/lesson';

export const rlhfLesson: Lesson = {
  recipe: 'rlhf',
  title: 'Single-player RLHF baseline',
  what:
    "The min-max game without a trained monitor: the policy learns from the reward model (and an untrained monitor's verdict) alone — the baseline the game is compared with. " +
    'The sandbox monitor has a designed blind spot (it accepts any answer to a count question), the kind of weakness a policy trained ' +
    "against a frozen judge can exploit. Here it is not exploited: the sandbox's rules RM knows the truth, so a wrong count answer " +
    'still pays 7.5 less than a right one, and in three seeds the count accuracy and the monitor score did not rise.',
  formula: 'R = 0.5 · clamp(RM, −15, 15) + 2.5 · J   (J from the untrained monitor, or left out)',
  combine: 'none',
  // The policy's terms; a monitor step's are its payoff (judge) and −λ · F (fidelity).
  termNames: { rm: '0.5 · clamp(RM)', judge: 'J (monitor verdict)', fidelity: '− λ · F', kl: '− β · KL' },
  weights: [],
  watch: [
    { text: 'Policy accuracy.', metric: 'policy/accuracy' },
    { text: 'Reward-model score.', metric: 'policy/rm_mean' },
    {
      text: "The frozen monitor's score: its share of CORRECT on the policy's held-out answers (with evalEvery > 0).",
      metric: 'eval/monitor_says_correct',
    },
    { text: 'Truth accuracy on count, the blind-spot kind (held-out).', metric: 'eval/policy_acc_count' },
  ],
};
