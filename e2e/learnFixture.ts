// The planned learning step's Dawn tests share one batch and the same adapters on the tiny-llama
// fixture (learn, learnHandoff, learnDropout, rowBlocks), and the PPO loss's gradients by tfjs
// autodiff and by the plan.
import * as tf from '@tensorflow/tfjs';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseModelConfig } from '../src/contract/modelConfig';
import { loadLlama, type LlamaModel, type LoadOptions, type ProjName } from '../src/model/llama';
import { attachLora, type LoraConfig, type LoraSet } from '../src/model/lora';
import { mulberry32 } from '../src/model/random';
import { parseSafetensors } from '../src/model/safetensors';
import { packSequences, policyStats, type ResponseBatch } from '../src/rl/policy';
import { plannedLearnForward } from '../src/model/planned/learn';
import { ppoClipLoss } from '../src/rl/policyLoss';
import { lossGradsAt } from '../src/rl/plannedLearn';
import { type StatTensors } from '../src/model/planned/learnStep';

export const ALL: ProjName[] = ['q', 'k', 'v', 'o', 'gate', 'up', 'down'];

export function fixture(name: string, opts: LoadOptions = {}): LlamaModel {
  const dir = resolve('dev', 'fixtures', name);
  return loadLlama(
    parseModelConfig(readFileSync(resolve(dir, 'config.json'), 'utf8')),
    parseSafetensors(new Uint8Array(readFileSync(resolve(dir, 'model.safetensors')))),
    opts,
  );
}

/** Adapters with B drawn too (a fresh B = 0 would leave dA = 0 and hide a wrong dA). */
export function adapters(model: LlamaModel, cfg: Partial<LoraConfig> = {}): LoraSet {
  const set = attachLora(model, { r: 4, alpha: 8, targets: ALL, seed: 3, ...cfg });
  const rand = mulberry32(11);
  for (const a of set.adapters) {
    const b = Float32Array.from({ length: a.B.size }, () => (rand() * 2 - 1) * 0.2);
    a.B.assign(tf.tensor2d(b, a.B.shape as [number, number]));
  }
  return set;
}

// Three rows: prompts of 3, 5 and 2 tokens (left padding), 4 response tokens, row 1 stopped after 2.
export const BATCH: ResponseBatch = {
  prompts: [
    [5, 9, 17],
    [3, 44, 12, 8, 30],
    [61, 2],
  ],
  responses: [
    [7, 21, 33, 4],
    [50, 6, 0, 0],
    [13, 13, 40, 9],
  ],
  mask: [
    [1, 1, 1, 1],
    [1, 1, 0, 0],
    [1, 1, 1, 1],
  ],
};
export const B = 3;
export const T = 4;
export const TEMP = 0.7;
export const OLD = [
  [-3.1, -2.0, -4.2, -3.3],
  [-2.5, -3.9, 0, 0],
  [-4.0, -1.2, -3.0, -2.2],
];
export const ADV = [
  [0.8, 0.8, 0.8, 0.8],
  [-1.1, -1.1, -1.1, -1.1],
  [0.3, 0.3, 0.3, 0.3],
];

export const maxAbs = (a: ArrayLike<number>, b: ArrayLike<number>) =>
  Array.from(a).reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);

/** PPO's clipped policy loss of the batch (token-mean). */
export const pgLoss = (s: StatTensors): tf.Scalar =>
  ppoClipLoss({ logp: s.logp, oldLogp: tf.tensor2d(OLD), advantages: tf.tensor2d(ADV), mask: tf.tensor2d(BATCH.mask) })
    .loss;

/** tfjs autodiff of pgLoss over the op-by-op forward (the reference): statistics [B T] and each LoRA variable's gradient. */
export async function tfjsPgGrads(
  model: LlamaModel,
  set: LoraSet,
): Promise<{ logp: Float32Array; entropy: Float32Array; grads: Float32Array[] }> {
  let kept: tf.Tensor[] = [];
  const vars = set.variables();
  const { value, grads } = tf.variableGrads(() => {
    const s = policyStats(model, BATCH, { temperature: TEMP });
    kept = [tf.keep(s.logp), tf.keep(s.entropy)];
    return pgLoss(s);
  }, vars);
  const out = {
    logp: (await kept[0].data()) as Float32Array,
    entropy: (await kept[1].data()) as Float32Array,
    grads: await Promise.all(vars.map(async (v) => (await grads[v.name].data()) as Float32Array)),
  };
  tf.dispose([value, ...kept, ...Object.values(grads)]);
  return out;
}

/** The planned forward and backward of pgLoss: statistics [B T] and the flat LoRA gradient. */
export async function plannedPgGrads(
  model: LlamaModel,
  set: LoraSet,
): Promise<{ logp: Float32Array; entropy: Float32Array; flat: Float32Array }> {
  const got = await plannedLearnForward(model, set, packSequences(BATCH), TEMP);
  if (!got) throw new Error('the planned forward was refused');
  const lg = await lossGradsAt(got.logp, got.entropy, B, T, pgLoss);
  got.plan.backward(lg.dlogp, lg.dentropy);
  return { logp: got.logp, entropy: got.entropy, flat: await got.plan.readGrads() };
}

/** Per variable, max |flat - want| / max |want| (flat: the plan's gradient buffer, variables in order). */
export function relErrors(flat: Float32Array, want: Float32Array[]): number[] {
  let at = 0;
  return want.map((g) => {
    const den = Math.max(...Array.from(g).map(Math.abs));
    const r = maxAbs(flat.subarray(at, at + g.length), g) / den;
    at += g.length;
    return r;
  });
}
