// The worker's loaded models, by name. Loading goes through exactly the path hub models take
// (a URL source over a Hugging Face-layout folder), whether the folder is the hub, the built-in
// sandbox under public/models/, or a test fixture server.
import * as tf from '@tensorflow/tfjs';
import { generate, type GenerateOptions, type GenerateResult } from '../../src/model/generate';
import { hubSource } from '../../src/model/hub';
import { disposeLlama, forward, type LlamaModel } from '../../src/model/llama';
import { loadModel } from '../../src/model/load';
import { urlSource, type ModelSource } from '../../src/model/sources';
import { SMOLLM2_135M_CONFIG, syntheticModel } from '../bench/synthetic';
import { profileDecode } from '../bench/profile';
import { measureThroughput, type ThroughputCase, type ThroughputResult } from '../bench/throughput';
import { f16Quantizer, int4Quantizer, int8Quantizer } from '../../src/model/quant';
import type { LoadModelOptions, ModelInfo, ModelRef } from './harnessApi';

const models = new Map<string, LlamaModel>();

function sourceOf(ref: ModelRef): ModelSource {
  if (ref.kind === 'url') return urlSource(new URL(ref.baseUrl, self.location.href).href);
  return hubSource(ref.id, { endpoint: ref.endpoint });
}

export function namedModel(name: string): LlamaModel {
  return get(name);
}

function get(name: string): LlamaModel {
  const m = models.get(name);
  if (!m) throw new Error(`no model named "${name}" is loaded (loaded: ${[...models.keys()].join(', ') || 'none'})`);
  return m;
}

function register(name: string, label: string, model: LlamaModel): ModelInfo {
  const old = models.get(name);
  if (old) disposeLlama(old);
  models.set(name, model);
  const c = model.config;
  return {
    name,
    label,
    family: c.family,
    layers: c.numLayers,
    hidden: c.hiddenSize,
    vocab: c.vocabSize,
  };
}

export async function loadNamedModel(name: string, ref: ModelRef, options: LoadModelOptions = {}): Promise<ModelInfo> {
  const source = sourceOf(ref);
  const q = options.quantize;
  const quantize = !q
    ? undefined
    : q.kind === 'f16'
      ? f16Quantizer(name)
      : q.kind === 'int8'
        ? int8Quantizer({ groupSize: q.groupSize })
        : int4Quantizer(q.groupSize);
  return register(name, source.label, await loadModel(source, { quantize }));
}

export async function loadSyntheticNamedModel(name: string, shape: 'smollm2-135m'): Promise<ModelInfo> {
  if (shape !== 'smollm2-135m') throw new Error(`unknown synthetic model shape ${shape}`);
  return register(name, `synthetic ${shape}`, await syntheticModel(SMOLLM2_135M_CONFIG));
}

export function benchNamedModel(name: string, c: ThroughputCase): Promise<ThroughputResult> {
  return measureThroughput(get(name), c);
}

export function unloadNamedModel(name: string): void {
  const m = models.get(name);
  if (m) disposeLlama(m);
  models.delete(name);
}

/** Logits of every position and the entropy of each next-token distribution, for one sequence. */
export async function modelLogits(name: string, ids: number[]): Promise<{ logits: number[][]; entropy: number[] }> {
  const model = get(name);
  const logits = tf.tidy(() => tf.squeeze(forward(model, [ids]), [0]) as tf.Tensor2D);
  const entropy = tf.tidy(() => {
    const logp = tf.logSoftmax(logits);
    return tf.neg(tf.sum(tf.mul(tf.exp(logp), logp), 1));
  });
  const out = { logits: (await logits.array()) as number[][], entropy: Array.from(await entropy.data()) };
  tf.dispose([logits, entropy]);
  return out;
}

export async function profileDecodeStep(name: string, ids: number[]) {
  return profileDecode(get(name), ids);
}

export async function modelGenerate(name: string, prompts: number[][], opts: GenerateOptions): Promise<GenerateResult> {
  return generate(get(name), prompts, opts);
}
