// The learning step both tfjs-side bench scripts run (wasmWorker.ts, opProfile.ts): B rows of
// P prompt + T response ids, PPO loss, advantages +1 / -1 by row.
import type { Learner } from '../../../src/rl/trainer';
import { learnStep } from '../../../src/rl/trainer';
import { fromRows } from '../../../src/rl/types';
import { benchPrompts } from './work';

export async function benchLearnStep(learner: Learner, B: number, P: number, T: number, V: number): Promise<void> {
  const rows = benchPrompts(B, P + T, V);
  const responses = rows.map((r) => r.slice(P));
  await learnStep(
    learner,
    {
      prompts: rows.map((r) => r.slice(0, P)),
      responses,
      mask: responses.map((r) => r.map(() => 1)),
      oldLogp: fromRows(responses.map((r) => r.map(() => -Math.log(V)))),
      advantages: fromRows(responses.map((r, b) => r.map(() => (b % 2 === 0 ? 1 : -1)))),
    },
    { policyLoss: 'ppo' },
  );
}
