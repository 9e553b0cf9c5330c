// minmax's veRL export: the policy's job against a frozen monitor (rlhf's export); the two-player
// game is an outer loop veRL does not run (see unsupported).
import type { ExportRecipe } from '../../export/verl/entry';
import { qaConstants, rlhfExport } from '../rlhf/export';

export const minmaxExport: ExportRecipe = {
  ...rlhfExport,
  name: 'minmax',
  rewardConstants: (c) => ({ ...qaConstants(c), judge: 'monitor' }),
  frozen: () => [{ field: 'monitor', env: 'SPARRING_MONITOR_URL', role: 'monitor' }],
  unsupported: (c) => [
    `Two players: the lab alternates ${c.monitorStepsPerPolicy} monitor updates (lr ${c.monitorLr}) with one policy update (TTUR) and moves lambda by dual ascent on the monitor's fidelity. veRL trains one policy per job, so this export is the POLICY's job against a frozen monitor (as rlhf): to play the game at scale, alternate this job with a monitor job (reward -10 J - lambda F) in an outer loop, serving each side's latest adapter to the other.`,
    ...(Number(c.monitorWarmupSteps) > 0
      ? [
          `monitorWarmupSteps = ${c.monitorWarmupSteps} (the lab's supervised warm-up of the monitor on true verdicts, lr ${c.monitorWarmupLr}, ${c.monitorWarmupItems} items x 2 answers a step) is not part of the policy's veRL job: train the monitor first in an SFT job (verl.trainer.fsdp_sft_trainer on monitor prompt -> critique pairs) and serve that adapter as the frozen monitor.`,
        ]
      : []),
    ...rlhfExport.unsupported(c),
  ],
  trl: false,
};
