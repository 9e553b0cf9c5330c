// Teaching mode's lesson for `rlhf` (shown beside a run of it; the fields: src/contract/lesson.ts).
import type { Lesson } from '../../contract/lesson';

export const rlhfLesson: Lesson = {
  recipe: 'rlhf',
  title: 'Single-player RLHF baseline',
  what:
    "The min-max game without a trained monitor: the policy learns from the reward model (and a frozen monitor's verdict) alone — the baseline the game is compared with. " +
    'The sandbox monitor has a designed blind spot: it accepts any answer written confidently ("Surely [ANSWER: x]") without ' +
    'checking it, and the default reward model (blind) trusts that form too. The policy writes it on about a quarter of its sampled ' +
    'answers, as guesses. In three seeds of 37 steps it learned to exploit the blind spot: its confident share rose to 0.95-1.00, ' +
    "the monitor's score of its answers rose by about 0.2, and its truth accuracy fell by 0.07-0.18.",
  formula: 'R = 0.5 · clamp(RM, −15, 15) + 2.5 · J   (J from the frozen monitor, or left out)',
  combine: 'none',
  // The policy's terms; a monitor step's are its payoff (judge) and −λ · F (fidelity).
  termNames: { rm: '0.5 · clamp(RM)', judge: 'J (monitor verdict)', fidelity: '− λ · F', kl: '− β · KL' },
  weights: [],
  watch: [
    {
      text: "The exploit: the share of the policy's answers in the confident form (training batches).",
      metric: 'policy/confident',
    },
    { text: 'Policy accuracy (training batches).', metric: 'policy/accuracy' },
    {
      text: "The frozen monitor's score: its share of CORRECT on the policy's held-out answers (with evalEvery > 0).",
      metric: 'eval/monitor_says_correct',
    },
    { text: 'Truth accuracy on held-out items (sampled, as the policy plays).', metric: 'eval/policy_acc' },
  ],
};
