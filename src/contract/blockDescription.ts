// The decoder described once, as the sequence of operations of its embedding, each block and its
// head, from a parsed config and its family's declaration (modelFamily.ts). The tfjs forward
// (src/model/llama.ts) interprets it op by op; the loader reads the tensors it names; the fit check
// and the memory planner count its norms. No tensors here: pure data, importable from every layer.
//
// A block works on the residual stream x and one branch value h:
//   norm      h = norm(x) ('residual') or h = norm(h) ('branch'), weight `model.layers.{i}.{weight}`
//   attention h = o(attend(rope(qNorm(q h)), rope(kNorm(k h)), v h))
//   mlp       h = down(act(gate h) * up h)
//   add       x = x + h

import { FAMILIES, type ModelFamily, type MlpActivation, type NormKind } from './modelFamily';
import type { ModelConfig, RopeScaling } from './modelConfig';

export type NormSource = 'residual' | 'branch';

/** The RoPE of a layer: base and scaling (modelConfig.ts ropeInvFreq turns it into frequencies). */
export interface RopeSpec {
  theta: number;
  scaling: RopeScaling;
}

export type BlockOp =
  | { op: 'norm'; weight: string; of: NormSource }
  | {
      op: 'attention';
      /** Bias on q/k/v and on o. */
      qkvBias: boolean;
      oBias: boolean;
      /** Per-head norms (weights `self_attn.q_norm` / `self_attn.k_norm`, [head_dim]) before RoPE, or null. */
      qkNorm: { q: string; k: string } | null;
      /** Index into ModelDescription.ropes. */
      rope: number;
      /** Key slots a query sees (itself included); null: every earlier slot. */
      window: number | null;
      /** Multiplies q.k before the softmax. */
      scale: number;
    }
  | { op: 'mlp'; activation: MlpActivation; bias: boolean }
  | { op: 'add' };

export interface ModelDescription {
  family: ModelFamily;
  /** How every norm applies its weight (the loader folds Gemma's 1 + w into the stored weight). */
  norm: NormKind;
  eps: number;
  /** x = embed[ids] * scale (1, or float32 sqrt(hidden) for Gemma 3). */
  embedScale: number;
  /** The distinct RoPE settings; each attention op names one. */
  ropes: RopeSpec[];
  /** One op list per layer (layers differ in window and RoPE only). */
  layers: BlockOp[][];
  /** The final norm's weight (`model.norm.weight`) and whether the head reads the embedding. */
  finalNorm: string;
  tiedHead: boolean;
}

/** The model of a config as the op sequence every path runs. */
export function describeModel(cfg: ModelConfig): ModelDescription {
  const decl = FAMILIES[cfg.family];
  const ropes: RopeSpec[] = [{ theta: cfg.ropeTheta, scaling: cfg.ropeScaling }];
  // Gemma 3: sliding layers use rope_local_base_freq with plain RoPE, full layers rope_theta with
  // rope_scaling (Gemma3RotaryEmbedding keeps one inv_freq per layer type).
  if (cfg.ropeLocalTheta !== null) ropes.push({ theta: cfg.ropeLocalTheta, scaling: { type: 'default' } });
  const scale = (cfg.queryPreAttnScalar ?? cfg.headDim) ** -0.5;
  const layers = cfg.layerWindows.map((window): BlockOp[] => {
    const ops: BlockOp[] = [];
    for (const b of decl.branches) {
      ops.push({ op: 'norm', weight: b.pre, of: 'residual' });
      ops.push(
        b.body === 'attention'
          ? {
              op: 'attention',
              qkvBias: cfg.qkvBias,
              oBias: cfg.oBias,
              qkNorm: cfg.qkNorm ? { q: 'self_attn.q_norm', k: 'self_attn.k_norm' } : null,
              rope: window !== null && cfg.ropeLocalTheta !== null ? 1 : 0,
              window,
              scale,
            }
          : { op: 'mlp', activation: cfg.activation, bias: cfg.mlpBias },
      );
      if (b.post) ops.push({ op: 'norm', weight: b.post, of: 'branch' });
      ops.push({ op: 'add' });
    }
    return ops;
  });
  return {
    family: cfg.family,
    norm: decl.norm,
    eps: cfg.rmsNormEps,
    embedScale: decl.embedScaledBySqrtHidden ? Math.fround(Math.sqrt(cfg.hiddenSize)) : 1,
    ropes,
    layers,
    finalNorm: 'model.norm.weight',
    tiedHead: cfg.tieWordEmbeddings,
  };
}

/** Every norm weight of layer `ops` with its length: the branch norms [hidden], q/k norms [head_dim]. */
export function layerNormWeights(ops: readonly BlockOp[], cfg: Pick<ModelConfig, 'hiddenSize' | 'headDim'>) {
  const out: { weight: string; size: number }[] = [];
  for (const op of ops) {
    if (op.op === 'norm') out.push({ weight: op.weight, size: cfg.hiddenSize });
    if (op.op === 'attention' && op.qkNorm)
      out.push({ weight: op.qkNorm.q, size: cfg.headDim }, { weight: op.qkNorm.k, size: cfg.headDim });
  }
  return out;
}

type AttentionOp = Extract<BlockOp, { op: 'attention' }>;
type MlpOp = Extract<BlockOp, { op: 'mlp' }>;

/**
 * A layer in the planned decode's shape, `x += post1(attention(pre1 x)); x += post2(mlp(pre2 x))`:
 * the weights of its norms (post norms null where the block has none) and its two bodies.
 */
export interface PlannedLayer {
  pre1: string;
  attention: AttentionOp;
  post1: string | null;
  pre2: string;
  mlp: MlpOp;
  post2: string | null;
}

/** A layer's ops read into the planned shape, or what does not fit it. */
export function plannedLayer(ops: readonly BlockOp[]): PlannedLayer | string {
  const branch = (i: number) => {
    const pre = ops[i];
    const body = ops[i + 1];
    if (pre?.op !== 'norm' || pre.of !== 'residual' || !body) return null;
    const post = ops[i + 2]?.op === 'norm' ? (ops[i + 2] as Extract<BlockOp, { op: 'norm' }>) : null;
    if (post && post.of !== 'branch') return null;
    const add = i + (post ? 3 : 2);
    if (ops[add]?.op !== 'add') return null;
    return { pre: pre.weight, body, post: post?.weight ?? null, next: add + 1 };
  };
  const a = branch(0);
  const m = a && branch(a.next);
  const kinds = ops.map((o) => (o.op === 'norm' ? `norm:${o.of}` : o.op)).join(',');
  if (!a || !m || m.next !== ops.length || a.body.op !== 'attention' || m.body.op !== 'mlp')
    return `a block of ${kinds}`;
  return { pre1: a.pre, attention: a.body, post1: a.post, pre2: m.pre, mlp: m.body, post2: m.post };
}

/**
 * Whether the planned decode and learning step run the model's block (every layer in the planned
 * shape); null if so, else what differs. They fall back to tfjs with this reason.
 */
export function plannedMismatch(d: ModelDescription): string | null {
  for (const ops of d.layers) {
    const l = plannedLayer(ops);
    if (typeof l === 'string') return `${d.family}: ${l}`;
  }
  return null;
}
