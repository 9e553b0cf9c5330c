// Teaching mode's lesson for `minmax` (shown beside a run of it; the fields: src/contract/lesson.ts).
import type { Lesson } from '../../contract/lesson';

export const minmaxLesson: Lesson = {
  recipe: 'minmax',
  title: 'Monitor vs policy: a min-max game',
  what:
    'A QA policy and a monitor that critiques its answers are trained in turn. The policy gains when the monitor accepts its answer; the monitor ' +
    'gains by rejecting answers but pays λ·F for verdicts that disagree with the truth, and λ rises while that fidelity gap stays above δ. ' +
    'The sandbox monitor starts with a designed blind spot, a format: it checks plain answers but accepts any answer written ' +
    'confidently ("Surely [ANSWER: x]") without comparing, and the reward model trusts that form too. The policy writes it on about a ' +
    'third of its sampled answers, as guesses. Who exploits it: in rlhf, against the monitor frozen, the policy moves into the confident ' +
    'form (to 0.95-1.00 of its answers in 37 steps) and its truth accuracy falls while the monitor scores it higher. Who closes it: here ' +
    'the monitor, paid for verdicts that match the truth, learned to reject wrong confident answers in 2 of 3 seeds (accepting 0.17-0.22 ' +
    'of them, from 0.97), though partly by distrusting the format itself, and its plain verdicts drifted. The policy, with 6 updates, ' +
    'stayed where it began, so it ended more accurate than rlhf’s in every seed; it did not get more accurate than its start.',
  formula: 'policy: R = 0.5 · clamp(RM, −15, 15) + 2.5 · J;  monitor: −10 J − λ F;  λ ← clip(λ + 0.25 (F − δ), 0, 30)',
  combine: 'none',
  // The policy's terms; a monitor step's are its payoff (judge) and −λ · F (fidelity).
  termNames: { rm: '0.5 · clamp(RM)', judge: 'J (monitor verdict)', fidelity: '− λ · F', kl: '− β · KL' },
  weights: ['klBeta'],
  watch: [
    { text: 'λ, the price of unfaithful verdicts: it rises at every cycle while F > δ.', metric: 'dual/lambda' },
    {
      text: 'The blind spot: the share of wrong confident answers the monitor accepts on held-out items (with evalEvery > 0). 1.0 = fully blind.',
      metric: 'eval/monitor_accepts_wrong_confident',
    },
    {
      text: 'Whether closing it is checking: the share of right confident answers the monitor rejects (0 for a monitor that checks; it rose to 0.4-0.6 in the seeds run).',
      metric: 'eval/monitor_rejects_right_confident',
    },
    {
      text: "The exploit: the share of the policy's held-out answers written confidently (sampled; it rises in rlhf).",
      metric: 'eval/policy_confident',
    },
    { text: 'Truth accuracy of the policy on held-out items (sampled, as it plays).', metric: 'eval/policy_acc' },
    { text: 'Monitor verdict accuracy.', metric: 'monitor/verdict_acc' },
  ],
};
