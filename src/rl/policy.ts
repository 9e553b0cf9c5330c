// The policy side of the learning step: per-token log-probs and entropies of sampled responses,
// recomputed with one batched forward over prompt + response, under the current LoRA weights
// (differentiable) or under the reference policy (the same base with the adapters switched off:
// no second copy of the model). Plus the PPO value head, a linear layer on the final hidden state.
//
// Layout. Prompts (unpadded, lengths differ) are left-padded to P, responses (from generate:
// tokens + mask, all of length T) appended:
//
//     [pad pad p0 p1 p2 | r0 r1 r2 r3]        attention 0 on pads and on response tokens after a stop
//      0   1   2  3  4    5  6  7  8          P = 5, T = 4
//
// Response token t is predicted by the output at position P - 1 + t, so the forward runs on the
// first P + T - 1 columns and the LM head runs only on the T response-predicting rows of each
// sequence (the prompt rows' vocabulary-sized logits are never built). Per-token log-prob and
// entropy come from the engine's tokenStats op (one fused WGSL pass and its backward on WebGPU),
// under softmax(logits / temperature) over the full vocabulary: the distribution generate()
// reports, so rollout and training log-probs agree up to float error.
import * as tf from '@tensorflow/tfjs';
import { variableFrom, tokenStats } from '../engine/index';
import { forward, type LlamaModel } from '../model/llama';
import { withAdaptersDisabled, type LoraSet } from '../model/lora';

/** Prompts and the responses sampled for them (one response per row; repeat a prompt for G samples). */
export interface ResponseBatch {
  /** [B][P_b] prompt ids, unpadded. */
  prompts: number[][];
  /** [B][T] sampled ids (generate's `tokens`). */
  responses: number[][];
  /** [B][T] 1 for a generated token, 0 after the row stopped (generate's `mask`). */
  mask: number[][];
}

/** The left-padded [B, P + T] sequence and its attention mask. */
export interface PackedBatch {
  ids: number[][];
  attentionMask: number[][];
  /** P: longest prompt. */
  promptLength: number;
  /** T: response columns. */
  responseLength: number;
}

export interface PolicyStatsOptions {
  /** Sampling temperature of the rollout: logits are divided by it. Default 1. */
  temperature?: number;
  /** Id written into prompt padding. Default 0. */
  padTokenId?: number;
  /** Also return the final hidden state at the response-predicting positions ([B, T, H]). */
  withHidden?: boolean;
  /** Run the LM head + token stats over at most this many rows at a time (large vocabularies). */
  chunkRows?: number;
}

// A type alias (not an interface) so it is a tf.TensorContainer that tf.tidy can return.
export type PolicyStats = {
  /** [B, T] log p(response token) under the policy (0 is not forced on masked positions). */
  logp: tf.Tensor2D;
  /** [B, T] full-vocabulary entropy of each response position's next-token distribution. */
  entropy: tf.Tensor2D;
  /** [B, T, H] final normed hidden state at position P - 1 + t (when withHidden). */
  hidden?: tf.Tensor3D;
};

/** Checks shapes and builds the left-padded [B, P + T] sequence with its attention mask. */
export function packSequences(batch: ResponseBatch, padTokenId = 0): PackedBatch {
  const { prompts, responses, mask } = batch;
  const B = prompts.length;
  if (B === 0) throw new Error('policy: empty batch');
  if (responses.length !== B || mask.length !== B) {
    throw new Error(`policy: ${B} prompts but ${responses.length} responses and ${mask.length} mask rows`);
  }
  const T = responses[0].length;
  if (T === 0) throw new Error('policy: responses are empty (T = 0)');
  prompts.forEach((p, b) => {
    if (p.length === 0) throw new Error(`policy: prompt ${b} is empty`);
    if (responses[b].length !== T || mask[b].length !== T) {
      throw new Error(
        `policy: row ${b} has ${responses[b].length} response ids and ${mask[b].length} mask entries, row 0 has ${T}`,
      );
    }
  });
  const P = Math.max(...prompts.map((p) => p.length));
  const ids: number[][] = [];
  const attentionMask: number[][] = [];
  for (let b = 0; b < B; b++) {
    const pad = P - prompts[b].length;
    ids.push([...Array<number>(pad).fill(padTokenId), ...prompts[b], ...responses[b]]);
    attentionMask.push([
      ...Array<number>(pad).fill(0),
      ...Array<number>(prompts[b].length).fill(1),
      ...mask[b].map((m) => (m > 0 ? 1 : 0)),
    ]);
  }
  return { ids, attentionMask, promptLength: P, responseLength: T };
}

/** The response-predicting hidden rows [B * T, H] of the packed batch (and [B, T, H] for the caller). */
function responseHidden(model: LlamaModel, packed: PackedBatch): { rows: tf.Tensor2D; hidden: tf.Tensor3D } {
  const { promptLength: P, responseLength: T } = packed;
  const B = packed.ids.length;
  const H = model.config.hiddenSize;
  const L = P + T - 1; // the last response token is never an input that predicts a response token
  const hiddenAll = forward(
    model,
    packed.ids.map((r) => r.slice(0, L)),
    { attentionMask: packed.attentionMask.map((r) => r.slice(0, L)), output: 'hidden' },
  ); // [B, L, H]
  const hidden = hiddenAll.slice([0, P - 1, 0], [B, T, H]) as tf.Tensor3D;
  return { rows: hidden.reshape([B * T, H]) as tf.Tensor2D, hidden };
}

function checkBatch(
  model: LlamaModel,
  batch: ResponseBatch,
  opts: PolicyStatsOptions,
): { packed: PackedBatch; temperature: number } {
  const temperature = opts.temperature ?? 1;
  if (!(temperature > 0)) throw new Error(`policy: temperature must be > 0, got ${temperature}`);
  const packed = packSequences(batch, opts.padTokenId ?? 0);
  const V = model.config.vocabSize;
  batch.responses.forEach((row, b) => {
    for (const id of row) {
      if (!Number.isInteger(id) || id < 0 || id >= V)
        throw new Error(`policy: response id ${id} in row ${b} is outside the vocabulary [0, ${V})`);
    }
  });
  return { packed, temperature };
}

/**
 * LM head + token stats over the response rows, chunked: [B * T, 2] (logp, H), or [B * T, 3] with
 * the reference rows' log-prob as the third column (one fused pass per chunk on WebGPU).
 */
function statsOfRows(
  model: LlamaModel,
  rows: tf.Tensor2D,
  refRows: tf.Tensor2D | null,
  ids: tf.Tensor1D,
  temperature: number,
  chunkRows?: number,
): tf.Tensor2D {
  const [N, H] = rows.shape;
  const chunk = Math.max(1, Math.floor(chunkRows ?? N));
  const head = (h: tf.Tensor2D) => {
    const logits = model.lmHead.forward(h) as tf.Tensor2D; // [n, V]
    return temperature !== 1 ? (logits.div(temperature) as tf.Tensor2D) : logits;
  };
  const parts: tf.Tensor2D[] = [];
  for (let r0 = 0; r0 < N; r0 += chunk) {
    const n = Math.min(chunk, N - r0);
    const slice = (t: tf.Tensor2D) => (n === N ? t : t.slice([r0, 0], [n, H]));
    parts.push(
      tokenStats(head(slice(rows)), n === N ? ids : ids.slice([r0], [n]), refRows ? head(slice(refRows)) : undefined),
    );
  }
  return parts.length === 1 ? parts[0] : (tf.concat(parts, 0) as tf.Tensor2D);
}

/**
 * Per-token log-probs and entropies of the responses under the model as it is now (adapters as
 * switched), differentiable with respect to the LoRA variables: call it inside tf.variableGrads.
 * Returns [B, T] tensors (the caller disposes them).
 */
export function policyStats(model: LlamaModel, batch: ResponseBatch, opts: PolicyStatsOptions = {}): PolicyStats {
  const { packed, temperature } = checkBatch(model, batch, opts);
  const B = packed.ids.length;
  const T = packed.responseLength;
  return tf.tidy(() => {
    const { rows, hidden } = responseHidden(model, packed);
    const ids = tf.tensor1d(batch.responses.flat(), 'int32');
    const [lp, ent] = tf.split(statsOfRows(model, rows, null, ids, temperature, opts.chunkRows), 2, 1);
    const out: PolicyStats = { logp: lp.reshape([B, T]), entropy: ent.reshape([B, T]) };
    if (opts.withHidden) out.hidden = hidden;
    return out;
  });
}

/**
 * The same statistics under the reference policy: the frozen base with every adapter of `lora`
 * switched off. No gradient reaches the adapters (they are off). [B, T] tensors; caller disposes.
 */
export function referenceStats(
  model: LlamaModel,
  lora: LoraSet,
  batch: ResponseBatch,
  opts: PolicyStatsOptions = {},
): PolicyStats {
  return withAdaptersDisabled(lora, () => policyStats(model, batch, { ...opts, withHidden: false }));
}

/**
 * policyStats and the reference log-probs together, for a caller that needs both of the same
 * batch (PPO with a value head and a KL term): two forwards, but one LM-head pair and one fused
 * token-stats pass per chunk (the reference's entropy, never used, is not computed). [B, T]
 * tensors; caller disposes.
 */
export function policyAndReferenceStats(
  model: LlamaModel,
  lora: LoraSet,
  batch: ResponseBatch,
  opts: PolicyStatsOptions = {},
): PolicyStats & { refLogp: tf.Tensor2D } {
  const { packed, temperature } = checkBatch(model, batch, opts);
  const B = packed.ids.length;
  const T = packed.responseLength;
  return tf.tidy(() => {
    const ref = withAdaptersDisabled(lora, () => responseHidden(model, packed));
    const { rows, hidden } = responseHidden(model, packed);
    const ids = tf.tensor1d(batch.responses.flat(), 'int32');
    const [lp, ent, refLp] = tf.split(statsOfRows(model, rows, ref.rows, ids, temperature, opts.chunkRows), 3, 1);
    const out: PolicyStats & { refLogp: tf.Tensor2D } = {
      logp: lp.reshape([B, T]),
      entropy: ent.reshape([B, T]),
      refLogp: refLp.reshape([B, T]),
    };
    if (opts.withHidden) out.hidden = hidden;
    return out;
  });
}

/**
 * Identity forward, zero gradient (torch .detach()): tfjs has no stop-gradient op. Use it where a
 * branch must read a tensor without sending gradient back along it (the value head's features).
 */
export function stopGradient<T extends tf.Tensor>(x: T): T {
  const f = tf.customGrad((...args: (tf.Tensor | tf.GradSaveFunc)[]) => {
    const t = args[0] as tf.Tensor;
    return { value: t.clone(), gradFunc: (dy: tf.Tensor | tf.Tensor[]) => tf.zerosLike(dy as tf.Tensor) };
  });
  return f(x) as T;
}

let nextValueHeadId = 0;

/**
 * PPO value head: V = h w + b on the final normed hidden state h [.., H] -> [..]. w starts at zero,
 * so V = b = 0 at first (GAE then reduces to whitened returns) and the critic learns from the value
 * loss alone. Variables are named `value_head{id}.weight` / `.bias` (AdamW keys state by name).
 */
export class ValueHead {
  readonly id = nextValueHeadId++;
  readonly w: tf.Variable<tf.Rank.R2>;
  readonly b: tf.Variable<tf.Rank.R1>;

  constructor(readonly hiddenSize: number) {
    this.w = variableFrom(tf.zeros([hiddenSize, 1]) as tf.Tensor2D, true, `value_head${this.id}.weight`);
    this.b = variableFrom(tf.zeros([1]) as tf.Tensor1D, true, `value_head${this.id}.bias`);
  }

  /** hidden [B, T, H] -> values [B, T]. */
  forward(hidden: tf.Tensor3D): tf.Tensor2D {
    const [B, T, H] = hidden.shape;
    if (H !== this.hiddenSize) throw new Error(`value head: hidden size ${H}, head built for ${this.hiddenSize}`);
    return tf.tidy(
      () =>
        tf
          .matMul(hidden.reshape([B * T, H]) as tf.Tensor2D, this.w)
          .add(this.b)
          .reshape([B, T]) as tf.Tensor2D,
    );
  }

  variables(): tf.Variable[] {
    return [this.w, this.b];
  }

  dispose(): void {
    this.w.dispose();
    this.b.dispose();
  }
}
