// The planned learning step's Dawn tests share one batch and the same adapters on the tiny-llama
// fixture (e2e/learn.e2e.ts, e2e/learnHandoff.e2e.ts).
import * as tf from '@tensorflow/tfjs';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseModelConfig } from '../src/model/config';
import { loadLlama, type LlamaModel, type LoadOptions } from '../src/model/llama';
import { attachLora, type LoraConfig, type LoraSet } from '../src/model/lora';
import { mulberry32 } from '../src/model/random';
import { parseSafetensors } from '../src/model/safetensors';
import type { ResponseBatch } from '../src/rl/policy';

export function fixture(name: string, opts: LoadOptions = {}): LlamaModel {
  const dir = resolve('..', 'shared', 'fixtures', name);
  return loadLlama(parseModelConfig(readFileSync(resolve(dir, 'config.json'), 'utf8')), parseSafetensors(new Uint8Array(readFileSync(resolve(dir, 'model.safetensors')))), opts);
}

/** Adapters with B drawn too (a fresh B = 0 would leave dA = 0 and hide a wrong dA). */
export function adapters(model: LlamaModel, cfg: Partial<LoraConfig> = {}): LoraSet {
  const set = attachLora(model, { r: 4, alpha: 8, targets: ['q', 'k', 'v', 'o', 'gate', 'up', 'down'], seed: 3, ...cfg });
  const rand = mulberry32(11);
  for (const a of set.adapters) {
    const b = Float32Array.from({ length: a.B.size }, () => (rand() * 2 - 1) * 0.2);
    a.B.assign(tf.tensor2d(b, a.B.shape as [number, number]));
  }
  return set;
}

// Three rows: prompts of 3, 5 and 2 tokens (left padding), 4 response tokens, row 1 stopped after 2.
export const BATCH: ResponseBatch = {
  prompts: [[5, 9, 17], [3, 44, 12, 8, 30], [61, 2]],
  responses: [[7, 21, 33, 4], [50, 6, 0, 0], [13, 13, 40, 9]],
  mask: [[1, 1, 1, 1], [1, 1, 0, 0], [1, 1, 1, 1]],
};
export const B = 3;
export const T = 4;
export const TEMP = 0.7;
export const OLD = [[-3.1, -2.0, -4.2, -3.3], [-2.5, -3.9, 0, 0], [-4.0, -1.2, -3.0, -2.2]];
export const ADV = [[0.8, 0.8, 0.8, 0.8], [-1.1, -1.1, -1.1, -1.1], [0.3, 0.3, 0.3, 0.3]];
