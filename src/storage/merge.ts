// Merged-model export without tfjs: every tensor of the base checkpoint, with each adapted
// projection replaced by W + s B A (s = alpha / r, or alpha / sqrt(r) with rsLoRA), float32.
// Works on the base model's safetensors as read from its folder, so the worker does not need a
// second copy of the model on the GPU, and the page could do it as well.
import type { TensorSource } from '../model/safetensors';
import {
  exportMergedSafetensors,
  hfWeightName,
  PeftError,
  projDims,
  PROJS,
  validateAdapter,
  type BaseDims,
  type MergedTensor,
  type PlainLoraAdapter,
} from './peft';

/** The scale PEFT applies to B A. */
export const loraScale = (a: Pick<PlainLoraAdapter, 'r' | 'alpha' | 'useRslora'>): number =>
  a.useRslora ? a.alpha / Math.sqrt(a.r) : a.alpha / a.r;

/** W + s B A for one projection: W [out, in], A [r, in], B [out, r], all row-major. */
export function mergeProjection(
  W: Float32Array,
  A: Float32Array,
  B: Float32Array,
  out: number,
  inn: number,
  r: number,
  s: number,
): Float32Array {
  if (W.length !== out * inn || A.length !== r * inn || B.length !== out * r) {
    throw new PeftError(
      `merge: sizes disagree (W ${W.length} for [${out}, ${inn}], A ${A.length} for [${r}, ${inn}], B ${B.length} for [${out}, ${r}])`,
    );
  }
  const M = Float32Array.from(W);
  for (let o = 0; o < out; o++) {
    const row = o * inn;
    for (let k = 0; k < r; k++) {
      const b = B[o * r + k] * s;
      if (b === 0) continue;
      const ak = k * inn;
      for (let i = 0; i < inn; i++) M[row + i] += b * A[ak + i];
    }
  }
  return M;
}

/** Every base tensor by its HF name, adapted projections merged (float32). */
export function mergeAdapterWeights(
  base: TensorSource,
  a: PlainLoraAdapter,
  dims: BaseDims,
): Map<string, MergedTensor> {
  validateAdapter(a, dims);
  const s = loraScale(a);
  const merged = new Map<string, Float32Array>();
  for (const [layer, projs] of a.layers) {
    for (const p of PROJS) {
      const pair = projs[p];
      if (!pair) continue;
      const name = hfWeightName(layer, p);
      if (!base.has(name))
        throw new PeftError(
          `merge: the base model (${base.fileName}) has no tensor "${name}" for the adapter's ${name.replace(/\.weight$/, '')}`,
        );
      const d = projDims(dims, p);
      merged.set(name, mergeProjection(base.getFloat32(name), pair.A, pair.B, d.out, d.in, a.r, s));
    }
  }
  const out = new Map<string, MergedTensor>();
  for (const name of base.names()) {
    out.set(name, { shape: base.info(name).shape.slice(), data: merged.get(name) ?? base.getFloat32(name) });
  }
  return out;
}

/** What a merged export says about a run whose base was quantised (null for an f32 base). */
export function quantisedBaseNote(baseWeights: string): string | null {
  if (baseWeights === 'f32') return null;
  return `the adapter was trained on the base quantised to ${baseWeights}; this file merges it into the base's float weights, so its outputs differ slightly from the run's`;
}

/**
 * model.safetensors bytes of the merged model. `baseWeights` is the format the run loaded the base
 * in (a recipe's weights field); the header records it, with a note when it was quantised.
 */
export function exportMergedModel(
  base: TensorSource,
  a: PlainLoraAdapter,
  dims: BaseDims,
  baseModel: string,
  baseWeights = 'f32',
): Uint8Array {
  const note = quantisedBaseNote(baseWeights);
  const metadata: Record<string, string> = {
    merged_from: baseModel,
    lora_r: String(a.r),
    lora_alpha: String(a.alpha),
    base_weights: baseWeights,
  };
  if (note) metadata.base_quantised = note;
  return exportMergedSafetensors(mergeAdapterWeights(base, a, dims), { dims, metadata });
}
