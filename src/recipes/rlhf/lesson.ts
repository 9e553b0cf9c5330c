// Teaching mode's lesson for `rlhf` (shown beside a run of it; the fields: src/contract/lesson.ts).
import type { Lesson } from '../../contract/lesson';

export const rlhfLesson: Lesson = {
  recipe: 'rlhf',
  title: 'Single-player RLHF baseline',
  what:
    "The min-max game without a trained monitor: the policy learns from the reward model (and an untrained monitor's verdict) alone — the baseline the game is compared with. " +
    'The sandbox monitor has a designed blind spot (it accepts count answers it cannot check), the kind of weakness a policy trained ' +
    "against a frozen judge can exploit, and the default reward model (blind) shares it: on count only the monitor's verdict carries " +
    'the truth. In three seeds of 37 steps the policy barely moved (1-3 held-out answers changed): count accuracy stayed flat, but the ' +
    "monitor's score did not rise either: the frozen monitor, noisy on color, scored the policy's color gains lower.",
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
