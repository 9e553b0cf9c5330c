// Teaching mode's lesson for `redteam` (shown beside a run of it; the fields: src/contract/lesson.ts).
import type { Lesson } from '../../contract/lesson';

export const redteamLesson: Lesson = {
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
    {
      text: 'Repetition: reward hacking by looping a harmful phrase shows up here first; the run stops above 0.5.',
      metric: 'repetition/mean',
    },
    { text: 'KL to the original defender: how far the weights have moved.', metric: 'kl/mean' },
  ],
};
