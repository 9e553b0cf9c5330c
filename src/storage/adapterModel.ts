// The model work on a LoRA adapter that the run's adapter export, import and preview do (moved out
// of the worker, issue 45): its tensors as plain arrays under PEFT names, whether an imported
// adapter fits the run's (rank, alpha, targets, layers) and holds finite weights, and a greedy
// continuation by a model with an adapter loaded. recipes/kit/adapterIo.ts applies them to a run.
import { generate } from '../model/generate';
import type { LlamaModel } from '../model/llama';
import { attachLora, loadPeftTensors, LoraSet, peftTensors, TARGET_MODULE } from '../model/lora';
import { findNonFinite } from '../contract/namedTensor';
import type { AdapterOutputs } from '../contract/workerApi';
import {
  adapterTargets,
  adapterTensorSource,
  fromPeftTensors,
  HF_PROJ,
  peftTensorMap,
  PeftError,
  toLoraConfig,
  type BaseDims,
  type PlainLoraAdapter,
} from './peft';

/** The adapter as plain typed arrays under PEFT names. */
export async function plainAdapter(lora: LoraSet): Promise<PlainLoraAdapter> {
  return fromPeftTensors(await peftTensors(lora), lora.config);
}

/** Why an adapter cannot replace the run's one (rank, alpha, targets, layers), or null. */
export function structureMismatch(a: PlainLoraAdapter, lora: LoraSet, dims: BaseDims): string | null {
  const c = lora.config;
  if (a.r !== c.r) return `rank r = ${a.r}, but this run's adapter has r = ${c.r} (field "loraRank")`;
  if (a.alpha !== c.alpha)
    return `lora_alpha = ${a.alpha}, but this run's adapter has ${c.alpha} (field "loraAlpha"); the outputs would differ`;
  if (a.useRslora !== (c.useRslora ?? false))
    return `use_rslora = ${a.useRslora}, this run's adapter has ${c.useRslora ?? false}`;
  const mine = c.targets
    .map((t) => TARGET_MODULE[t])
    .sort()
    .join(', ');
  const theirs = adapterTargets(a)
    .map((p) => HF_PROJ[p].module)
    .sort()
    .join(', ');
  if (mine !== theirs) return `target_modules [${theirs}], but this run adapts [${mine}] (field "loraTargets")`;
  const myLayers = (c.layers ?? Array.from({ length: dims.numLayers }, (_, i) => i)).join(',');
  const theirLayers = [...a.layers.keys()].sort((x, y) => x - y).join(',');
  if (myLayers !== theirLayers) return `adapted layers [${theirLayers}], this run adapts [${myLayers}]`;
  return null;
}

/** Throws, naming the tensor and the index, if an adapter weight is NaN or +-Infinity (before anything is assigned). */
export function checkFiniteAdapter(a: PlainLoraAdapter, dims: BaseDims, fileName: string): void {
  for (const [name, t] of peftTensorMap(a, dims)) {
    const bad = findNonFinite([{ name, dtype: 'float32', shape: t.shape, data: t.data as Float32Array }]);
    if (bad)
      throw new PeftError(
        `${fileName}: tensor "${name}" holds ${bad.value} at index ${bad.index}; adapter weights must be finite numbers`,
      );
  }
}

/** What greedyWithAdapter needs of a codec: the chat encoding, the stop and pad ids, the decoding. */
export interface AdapterCodec {
  encodeChat(messages: { role: string; content: string }[], opts: { addGenerationPrompt: boolean }): number[];
  eos: Iterable<number>;
  pad: number;
  decode(ids: number[]): string;
}

/** Greedy continuation of `prompt` by `model` with adapter `a` attached (detached again after). */
export async function greedyWithAdapter(
  model: LlamaModel,
  codec: AdapterCodec,
  a: PlainLoraAdapter,
  dims: BaseDims,
  prompt: string,
  maxNewTokens: number,
): Promise<AdapterOutputs> {
  let set: LoraSet | null = null;
  try {
    set = attachLora(model, toLoraConfig(a));
    loadPeftTensors(set, adapterTensorSource(a, dims));
    const ids = codec.encodeChat([{ role: 'user', content: prompt }], { addGenerationPrompt: true });
    const out = await generate(model, [ids], {
      maxNewTokens,
      greedy: true,
      stopTokens: [...codec.eos],
      padTokenId: codec.pad,
    });
    const n = out.lengths[0];
    const gen = out.tokens[0].slice(0, n);
    return { ids: gen, text: codec.decode(gen), logprobs: out.logprobs[0].slice(0, n) };
  } finally {
    set?.dispose();
  }
}
