// LoRA adapters on the projections of a Llama-family model (Hu et al. 2021; PEFT conventions).
//
//   y = x W^T + s * (drop(x) A^T) B^T        A [r, in], B [out, r], s = alpha / r
//                                            (alpha / sqrt(r) with rsLoRA, Kalajdzievski 2023)
//
// Kept factored (two thin matmuls), never W + s B A rebuilt per call. A is kaiming-uniform as
// PEFT initialises it (kaiming_uniform_ with a = sqrt(5): U(-1/sqrt(in), 1/sqrt(in))), drawn
// from the seed; B starts at zero, so a fresh adapter leaves the model unchanged.
//
// The reference policy of every recipe is the same base with adapters switched off
// (`set.enabled = false` or withAdaptersDisabled): no second copy of the model.
// Dropout (PEFT's lora_dropout on the adapter input) is active only while `set.training`.

import * as tf from '@tensorflow/tfjs';
import { denseWeight, matMul2d, recordingGradients, type LinearAdapter, type Linear } from './linear';
import { PROJ_NAMES, type LlamaModel, type ProjName } from './llama';
import { hash3, mulberry32 } from './random';
import { getFiniteFloat32, type TensorSource } from './safetensors';
import { variableFrom, wasmGemmServes } from '../engine/index';
import { briefShape } from '../contract/brief';

export interface LoraConfig {
  /** Rank r. */
  r: number;
  /** lora_alpha. */
  alpha: number;
  /** Projections to adapt, by short name (q, k, v, o, gate, up, down). */
  targets: ProjName[];
  /** lora_dropout on the adapter input, in [0, 1). Default 0. */
  dropout?: number;
  /** Scale alpha / sqrt(r) instead of alpha / r. Default false. */
  useRslora?: boolean;
  /** Seed of the A initialisation and of dropout masks. Default 0. */
  seed?: number;
  /** Layer indices to adapt (PEFT layers_to_transform). Default all. */
  layers?: number[];
}

/** HF module suffix of each short projection name (PEFT target_modules spelling). */
export const TARGET_MODULE: Record<ProjName, string> = {
  q: 'q_proj',
  k: 'k_proj',
  v: 'v_proj',
  o: 'o_proj',
  gate: 'gate_proj',
  up: 'up_proj',
  down: 'down_proj',
};

let nextSetId = 0;

export class LoraAdapter implements LinearAdapter {
  readonly A: tf.Variable<tf.Rank.R2>;
  readonly B: tf.Variable<tf.Rank.R2>;
  /** Dropout calls so far (each call's mask is seeded by it; checkpoints save it). */
  calls = 0;

  constructor(
    readonly set: LoraSet,
    /** HF module path, e.g. model.layers.0.self_attn.q_proj */
    readonly module: string,
    /** Position in the set (seeds its A and its dropout stream). */
    readonly index: number,
    inFeatures: number,
    outFeatures: number,
  ) {
    const { r } = set.config;
    const rand = mulberry32(hash3(set.seed, index, 0));
    const bound = 1 / Math.sqrt(inFeatures);
    const a = new Float32Array(r * inFeatures);
    for (let i = 0; i < a.length; i++) a[i] = (2 * rand() - 1) * bound;
    const prefix = `lora${set.id}/${module}`;
    this.A = variableFrom(tf.tensor2d(a, [r, inFeatures]), true, `${prefix}.lora_A`);
    this.B = variableFrom(tf.zeros([outFeatures, r]) as tf.Tensor2D, true, `${prefix}.lora_B`);
  }

  delta(x: tf.Tensor2D): tf.Tensor2D | null {
    if (!this.set.enabled) return null;
    const m = this.dropoutMultiplier(x.shape);
    const h: tf.Tensor2D = m ? x.mul(m) : x;
    if (tf.getBackend() === 'wasm' && !recordingGradients()) {
      const [at, bts] = this.turnedFactors();
      return tf.matMul(tf.matMul(h, at), bts);
    }
    if (tf.getBackend() === 'wasm') return this.taped(h, this.A, this.B);
    // Two thin products; on wasm A and B (r x in, out x r) are turned per call by matMul2d, r / N
    // of the products' work, so they keep PEFT's layout for checkpoints, export and the planned paths.
    return matMul2d(matMul2d(h, this.A, false, true), this.B, false, true).mul(this.set.scale);
  }

  /**
   * s (h A^T) B^T as one taped op with its backward written out, for tfjs-wasm: every
   * product untransposed (tfjs-wasm's XNNPACK form; only r-wide operands are turned) and the
   * scale on the r-wide side. Op by op (two matMul2d and a scale) the delta and its gradients
   * took ~24 tfjs kernels and 9 tape nodes per adapter; this takes 12 and one. (tfjs-cpu keeps the
   * op-by-op form: weightLayout.test's stock reference.)
   */
  private readonly taped = tf.customGrad((h, a, b, save) => {
    const s = this.set.scale;
    // Our GEMM (engine/kernels/wasmGemm.ts) takes transposed operands as they are; tfjs-wasm's
    // stock kernel wants them turned by Transpose kernels first.
    const mm: (x: tf.Tensor2D, y: tf.Tensor2D, tx?: boolean, ty?: boolean) => tf.Tensor2D = wasmGemmServes()
      ? (x: tf.Tensor2D, y: tf.Tensor2D, tx = false, ty = false) => tf.matMul(x, y, tx, ty)
      : (x: tf.Tensor2D, y: tf.Tensor2D, tx = false, ty = false) =>
          tf.matMul(tx ? tf.transpose(x) : x, ty ? tf.transpose(y) : y);
    const t = tf.mul(mm(h as tf.Tensor2D, a as tf.Tensor2D, false, true), s) as tf.Tensor2D; // [N, r]
    (save as tf.GradSaveFunc)([h as tf.Tensor, t]);
    return {
      value: mm(t, b as tf.Tensor2D, false, true),
      gradFunc: (dy, saved) => {
        const [hs, ts] = saved as tf.Tensor2D[];
        const g = dy as tf.Tensor2D; // [N, out]
        const sgB = tf.mul(mm(g, b as tf.Tensor2D), s) as tf.Tensor2D; // [N, r]
        return [
          mm(sgB, a as tf.Tensor2D), // dh [N, in]
          mm(sgB, hs, true), // dA [r, in]
          mm(g, ts, true), // dB [out, r] = g^T t
        ];
      },
    };
  }) as (h: tf.Tensor2D, a: tf.Tensor2D, b: tf.Tensor2D) => tf.Tensor2D;

  /**
   * The dropout multiplier of this adapter's next call on an input of `shape` (0 or 1 / (1 - p),
   * tf.dropout's own formula and random stream), advancing the call counter; null when no dropout
   * applies now (off, or not training). A fresh, seeded mask per call: (seed, adapter, counter).
   * The planned learning step draws its masks here too, so both paths drop the same inputs.
   */
  dropoutMultiplier(shape: [number, number]): tf.Tensor2D | null {
    const p = this.set.dropout;
    if (!this.set.enabled || !this.set.training || !(p > 0)) return null;
    const keep = 1 - p;
    const seed = hash3(this.set.seed, this.index, 1 + this.calls++);
    return tf.tidy(
      () => tf.div(tf.floor(tf.add(tf.randomUniform(shape, 0, 1, 'float32', seed), keep)), keep) as tf.Tensor2D,
    );
  }

  /**
   * A^T and s B^T for Linear.forward's fused product (x W^T and this delta in one kernel, outside
   * a tape on wasm), or null where delta must run: a tape, another backend, dropout, disabled.
   */
  fusedFactors(): [tf.Tensor2D, tf.Tensor2D] | null {
    if (!this.set.enabled || (this.set.training && this.set.dropout > 0)) return null;
    if (tf.getBackend() !== 'wasm' || recordingGradients()) return null;
    return this.turnedFactors();
  }

  /** A, B and s for Linear.forward's one taped op under a tape on wasm, or null where delta must run. */
  tapedFactors(): { a: tf.Tensor2D; b: tf.Tensor2D; scale: number } | null {
    if (!this.set.enabled || (this.set.training && this.set.dropout > 0)) return null;
    if (tf.getBackend() !== 'wasm' || !recordingGradients()) return null;
    return { a: this.A, b: this.B, scale: this.set.scale };
  }

  /** A^T and s B^T for products outside a tape on wasm (decode), remade when A or B is assigned. */
  private turned: { a: object; b: object; at: tf.Tensor2D; bts: tf.Tensor2D } | null = null;

  /**
   * A^T [in, r] and s B^T [r, out], turned once per value of A and B instead of on every call:
   * at batch-1 decode the two transposes and the scale were 63 of ~420 tfjs ops per token (sandbox
   * defender), and a tensor that lives on keeps XNNPACK's packing of it cached.
   */
  private turnedFactors(): [tf.Tensor2D, tf.Tensor2D] {
    const t = this.turned;
    if (t && t.a === this.A.dataId && t.b === this.B.dataId) return [t.at, t.bts];
    if (t) tf.dispose([t.at, t.bts]);
    const at = tf.keep(tf.transpose(this.A));
    const bts = tf.keep(tf.tidy(() => tf.transpose(this.B).mul(this.set.scale) as tf.Tensor2D));
    this.turned = { a: this.A.dataId, b: this.B.dataId, at, bts };
    return [at, bts];
  }

  /** s * B A as a dense [out, in] tensor (caller disposes). */
  deltaWeight(): tf.Tensor2D {
    return tf.tidy(() => tf.matMul(this.B, this.A).mul(this.set.scale));
  }

  dispose(): void {
    if (this.turned) tf.dispose([this.turned.at, this.turned.bts]);
    this.turned = null;
    this.A.dispose();
    this.B.dispose();
  }
}

/** The adapters attached to one model. */
export class LoraSet {
  readonly id = nextSetId++;
  /** Global switch: false turns every adapter of the set off (reference policy = base model). */
  enabled = true;
  /** Dropout is applied only while training. */
  training = false;
  readonly scale: number;
  readonly seed: number;
  readonly dropout: number;
  /** In model order: layer by layer, projections in q k v o gate up down order. */
  readonly adapters: LoraAdapter[] = [];
  private readonly linears: Linear[] = [];

  constructor(readonly config: LoraConfig) {
    const { r, alpha } = config;
    if (!Number.isInteger(r) || r <= 0) throw new Error(`LoRA: r must be a positive integer, got ${r}`);
    if (!(alpha > 0)) throw new Error(`LoRA: alpha must be positive, got ${alpha}`);
    this.dropout = config.dropout ?? 0;
    if (!(this.dropout >= 0 && this.dropout < 1))
      throw new Error(`LoRA: dropout must be in [0, 1), got ${this.dropout}`);
    this.scale = config.useRslora ? alpha / Math.sqrt(r) : alpha / r;
    this.seed = config.seed ?? 0;
  }

  /** Trainable variables in a fixed order (A then B per adapter): keep it for Adam state. */
  variables(): tf.Variable[] {
    return this.adapters.flatMap((a) => [a.A, a.B]);
  }

  /** @internal */
  add(linear: Linear, adapter: LoraAdapter): void {
    this.linears.push(linear);
    this.adapters.push(adapter);
    linear.adapter = adapter;
  }

  /** Detaches every adapter from its layer and frees its variables. */
  dispose(): void {
    for (const l of this.linears) l.adapter = null;
    for (const a of this.adapters) a.dispose();
    this.linears.length = 0;
    this.adapters.length = 0;
  }
}

/** Attaches fresh adapters (A kaiming-uniform, B zero) to the model's target projections. */
export function attachLora(model: LlamaModel, config: LoraConfig): LoraSet {
  for (const t of config.targets) {
    if (!PROJ_NAMES.includes(t)) throw new Error(`LoRA: unknown target "${t}" (targets: ${PROJ_NAMES.join(', ')})`);
  }
  if (config.targets.length === 0) throw new Error('LoRA: no target projections');
  const layers = config.layers ?? model.layers.map((_, i) => i);
  for (const i of layers) {
    if (!Number.isInteger(i) || i < 0 || i >= model.layers.length)
      throw new Error(`LoRA: layer ${i} does not exist (model has ${model.layers.length})`);
  }
  const set = new LoraSet(config);
  try {
    for (const li of [...layers].sort((a, b) => a - b)) {
      for (const p of PROJ_NAMES) {
        if (!config.targets.includes(p)) continue;
        const lin = model.layers[li][p];
        if (lin.adapter) throw new Error(`LoRA: ${lin.name} already has an adapter`);
        set.add(lin, new LoraAdapter(set, lin.name, set.adapters.length, lin.inFeatures, lin.outFeatures));
      }
    }
  } catch (e) {
    set.dispose();
    throw e;
  }
  return set;
}

/** Runs fn with every adapter of the set off (the reference policy), restoring the switch after. */
export function withAdaptersDisabled<T>(set: LoraSet, fn: () => T): T {
  const was = set.enabled;
  set.enabled = false;
  try {
    return fn();
  } finally {
    set.enabled = was;
  }
}

/**
 * Merged weights for export: HF name ("...q_proj.weight") -> W + s B A, dense float32 [out, in],
 * for every adapted projection (the caller disposes the tensors). The model is not modified.
 */
export function mergeLora(model: LlamaModel, set: LoraSet): Map<string, tf.Tensor2D> {
  const out = new Map<string, tf.Tensor2D>();
  for (const l of model.layers) {
    for (const p of PROJ_NAMES) {
      const lin = l[p];
      const a = set.adapters.find((x) => x.module === lin.name);
      if (!a) continue;
      out.set(
        `${lin.name}.weight`,
        tf.tidy(() => lin.weight.toDense().add(a.deltaWeight()) as tf.Tensor2D),
      );
    }
  }
  return out;
}

/** Folds the adapters into the base weights for good (dense float32) and detaches them. */
export function mergeLoraInPlace(model: LlamaModel, set: LoraSet): void {
  const merged = mergeLora(model, set);
  for (const l of model.layers) {
    for (const p of PROJ_NAMES) {
      const w = merged.get(`${l[p].name}.weight`);
      if (!w) continue;
      l[p].weight.dispose();
      l[p].weight = denseWeight(w);
    }
  }
  set.dispose();
}

// ---------------------------------------------------------------------------------------------
// PEFT naming (the storage layer writes these with writeSafetensors)

/** PEFT tensor name of an adapter matrix. */
export function peftTensorName(module: string, which: 'A' | 'B'): string {
  return `base_model.model.${module}.lora_${which}.weight`;
}

// adapter_config.json has one writer: storage/peft.ts peftAdapterConfigJson.

/** Adapter tensors under PEFT names, read back from the device (float32). */
export async function peftTensors(
  set: LoraSet,
): Promise<Record<string, { dtype: 'F32'; shape: number[]; data: Float32Array }>> {
  const out: Record<string, { dtype: 'F32'; shape: number[]; data: Float32Array }> = {};
  for (const a of set.adapters) {
    out[peftTensorName(a.module, 'A')] = { dtype: 'F32', shape: a.A.shape, data: (await a.A.data()) as Float32Array };
    out[peftTensorName(a.module, 'B')] = { dtype: 'F32', shape: a.B.shape, data: (await a.B.data()) as Float32Array };
  }
  return out;
}

/** Loads PEFT adapter tensors into the set's variables (shapes checked, names as peftTensorName). */
export function loadPeftTensors(set: LoraSet, source: TensorSource): void {
  // Every tensor is read and checked (shape, finite values) before any variable is assigned, so a
  // bad file leaves the set as it was.
  const loads: { v: tf.Variable; data: Float32Array }[] = [];
  for (const a of set.adapters) {
    for (const [which, v] of [
      ['A', a.A],
      ['B', a.B],
    ] as const) {
      const name = peftTensorName(a.module, which);
      if (!source.has(name)) throw new Error(`${source.fileName}: missing tensor "${name}"`);
      const shape = source.info(name).shape;
      if (shape.length !== 2 || shape[0] !== v.shape[0] || shape[1] !== v.shape[1]) {
        throw new Error(
          `${source.fileOf(name)}: tensor "${name}" has shape ${briefShape(shape)}, the adapter needs [${v.shape.join(', ')}]`,
        );
      }
      loads.push({ v, data: getFiniteFloat32(source, name) });
    }
  }
  for (const { v, data } of loads) tf.tidy(() => v.assign(tf.tensor2d(data, v.shape as [number, number])));
}
