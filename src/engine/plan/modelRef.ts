// The description of a decoder-only model as the plans bind it: dimensions, the GPU buffers of its
// weights, norms and biases, each layer's block read into the planned shape, and the LoRA shapes.
// It knows no model names: src/model/planned/decode.ts reads a loaded model and its block
// description (contract/blockDescription.ts) into it, and the decode plan, the learning plan and
// their tests take it.
import type { WeightKind } from '../../contract/weightFormat';
import type { MlpActivation } from '../../contract/modelFamily';

/** A weight matrix [rows, cols] (PyTorch nn.Linear layout) on the device. */
export type WeightRef =
  | { kind: 'f32'; rows: number; cols: number; buffer: GPUBuffer }
  | {
      kind: Exclude<WeightKind, 'f32'>;
      rows: number;
      cols: number;
      groupSize: number;
      words: GPUBuffer;
      scales: GPUBuffer;
    };

/** A float32 vector on the device (a norm weight or a bias). */
export interface VectorRef {
  buffer: GPUBuffer;
  length: number;
}

/** A LoRA branch: A [r, in], B [out, r] (float32 device buffers), scale s. */
export interface LoraRef {
  A: GPUBuffer;
  B: GPUBuffer;
  r: number;
  scale: number;
}

export interface ProjectionRef {
  weight: WeightRef;
  bias?: VectorRef;
  /** All row blocks of a weight held in several (`weight` is the first); the learn plan takes them, the decode plan does not. */
  blocks?: WeightRef[];
}

export type ProjKey = 'q' | 'k' | 'v' | 'o' | 'gate' | 'up' | 'down';
export const PROJ_KEYS: readonly ProjKey[] = ['q', 'k', 'v', 'o', 'gate', 'up', 'down'];

/**
 * A layer as the planner runs it: the block of the model's description (contract/blockDescription.ts)
 * read into the planned shape `x += post1(attention(pre1 x)); x += post2(mlp(pre2 x))`. The
 * optional parts are absent on the Llama block, whose dispatches they leave unchanged.
 */
export interface DecodeLayerRef extends Record<ProjKey, ProjectionRef> {
  /** The pre-norms of the attention and the MLP branch. */
  inputNorm: VectorRef;
  postNorm: VectorRef;
  /** Norms of each branch's output before its residual add (Gemma 3); absent: none. */
  attnOutNorm?: VectorRef;
  mlpOutNorm?: VectorRef;
  /** Per-head q and k norms ([head_dim]) before RoPE (Qwen3, Gemma 3); absent: none. */
  qNorm?: VectorRef;
  kNorm?: VectorRef;
  /** Index into DecodeModelRef.invFreqs (default 0). */
  rope?: number;
  /** Key slots a query sees, itself included (null / absent: all). */
  window?: number | null;
  /** Multiplies q.k (default head_dim^-1/2). */
  attnScale?: number;
}

export interface DecodeModelRef {
  hidden: number;
  intermediate: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  vocab: number;
  eps: number;
  /** RoPE inverse frequencies (float64). */
  invFreq: Float64Array;
  /** Every RoPE the layers name (DecodeLayerRef.rope); absent: [invFreq]. */
  invFreqs?: Float64Array[];
  /** x = embed[ids] * embedScale (default 1). */
  embedScale?: number;
  /** The MLP's gate activation (default SiLU). */
  activation?: MlpActivation;
  /** Embedding table [vocab, hidden] in row blocks (float32). */
  embed: { rowStart: number; rows: number; buffer: GPUBuffer }[];
  layers: DecodeLayerRef[];
  norm: VectorRef;
  /** LM head [vocab, hidden] in row blocks. */
  head: WeightRef[];
  /** Rank and scale of the LoRA branch per layer and projection (absent: none); fixes the layout. */
  lora: Partial<Record<ProjKey, { r: number; scale: number }>>[];
}
