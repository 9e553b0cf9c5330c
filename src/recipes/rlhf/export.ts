// rlhf's veRL / TRL export (monitor-vs-LLM's policy against a frozen monitor): the sandbox's QA
// items, scored by reward.py (this folder). minmax's export is this one with the game noted.
import { qaItems, type QaExample } from '../../data/sandbox/index';
import {
  KL_IN_REWARD_NOTE,
  n,
  POLICY_LOSS_NOTES,
  type Cfg,
  type DatasetItem,
  type ExportRecipe,
} from '../../export/verl/entry';
import computeScore from './reward.py?raw';

export function qaDataset(c: Cfg, seed: number) {
  const item = (q: QaExample): DatasetItem => ({
    id: q.id,
    text: q.prompt,
    groundTruth: {
      kind: 'qa',
      family: q.family,
      story: q.story,
      question: q.question,
      choices: q.choices,
      correct: q.correct,
    },
  });
  return {
    train: qaItems(n(c, 'itemPool'), seed, { split: 'train' }).map(item),
    val: qaItems(32, seed + 9001, { split: 'eval' }).map(item),
  };
}

export const qaConstants = (c: Cfg) => ({
  rm: c.rm,
  judge: c.judge ?? 'monitor',
  monitor: c.monitor,
  monitorMaxTokens: c.monitorMaxTokens,
  temperature: c.temperature,
  topP: c.topP,
  klBeta: c.klBeta,
});

export const rlhfExport: ExportRecipe = {
  name: 'rlhf',
  modelField: 'policy',
  batchPrompts: (c) => n(c, 'items'),
  dataset: qaDataset,
  rewardConstants: qaConstants,
  computeScore,
  frozen: (c) => (c.judge === 'monitor' ? [{ field: 'monitor', env: 'SPARRING_MONITOR_URL', role: 'monitor' }] : []),
  verl: (c) => ({ 'data.max_response_length': c.policyMaxTokens }),
  unsupported: (c) => [
    ...(c.judge === 'monitor'
      ? [
          `The frozen monitor critiques every answer inside reward.py (README: "Frozen models" says how to serve it); it samples at temperature ${c.temperature} / top_p ${c.topP}, unseeded.`,
        ]
      : []),
    ...(c.rm === 'rules' || c.rm === 'blind' || c.rm === 'blind-neutral'
      ? []
      : [
          `The RM "${c.rm}" is a model: reward.py asks it through the http judge protocol (SPARRING_JUDGE_URL), as the lab's judge RM does.`,
        ]),
    KL_IN_REWARD_NOTE(n(c, 'klBeta')),
    ...POLICY_LOSS_NOTES(c),
  ],
  trl: true,
};
