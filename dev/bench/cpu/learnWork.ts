// The learning step both tfjs-side bench scripts run (wasmWorker.ts, opProfile.ts): B rows of
// P prompt + T response ids, PPO loss, advantages +1 / -1 by row.
import { readFileSync } from 'node:fs';
import { useTrainingBackend } from '../../../src/cli/nodeBackend';
import { parseModelConfig, type ModelConfig } from '../../../src/contract/modelConfig';
import { loadLlama, PROJ_NAMES } from '../../../src/model/llama';
import { attachLora } from '../../../src/model/lora';
import { parseSafetensors } from '../../../src/model/safetensors';
import { AdamW } from '../../../src/rl/optim';
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

/** The model in `dir` on tfjs-wasm with LoRA r16 on every projection and AdamW (the profiling scripts' learner). */
export async function wasmBenchLearner(dir: string): Promise<Learner & { cfg: ModelConfig }> {
  await useTrainingBackend('wasm');
  const cfg = parseModelConfig(readFileSync(`${dir}/config.json`, 'utf8'), 'config.json');
  const model = loadLlama(
    cfg,
    parseSafetensors(new Uint8Array(readFileSync(`${dir}/model.safetensors`)), 'model.safetensors'),
  );
  const lora = attachLora(model, { r: 16, alpha: 32, targets: [...PROJ_NAMES], seed: 1 });
  return { cfg, model, lora, optimizer: new AdamW({ lr: 1e-3 }) };
}
