// The decoder of every family the lab loads (Llama 2/3, SmolLM2, TinyLlama; Qwen2/2.5; Qwen3;
// Gemma 3 text), nanoGPT-style: config record in, weights by their Hugging Face names, one forward
// function that runs the block description (contract/blockDescription.ts) op by op. For Llama:
//
//   x = embed[ids]
//   for each layer:  x += o( attn( rope(q(norm1 x)), rope(k(norm1 x)), v(norm1 x) ) )
//                    x += down( silu(gate(norm2 x)) * up(norm2 x) )
//   logits = lm_head(norm x)            (lm_head = embed when tie_word_embeddings)
//
// Qwen3 adds per-head q/k norms before RoPE; Gemma 3 scales the embedding, norms each branch's
// output too, gates with tanh GELU, scales scores by query_pre_attn_scalar^-1/2 and gives sliding
// layers a window and their own RoPE base. Gemma's (1 + w) norm weight is folded at load.
//
// Shapes: B batch, L new tokens this call, C key slots (cache capacity, or L without a cache),
// H hidden, nH / nKV query / key-value heads, D head_dim, G = nH / nKV (GQA group), V vocab.
//
// Batches are left-padded. The caller gives a 0/1 attention mask per token; a token's RoPE
// position is the number of real tokens before it in its row (what HF derives from the mask:
// cumsum(mask) - 1), so a padded prompt gets the same positions as the unpadded one, and pads
// are never attended to. Masks and positions live on the host (they are known there anyway)
// and are uploaded as small tensors, so a forward pass needs no readback.

import * as tf from '@tensorflow/tfjs';
import {
  decodeAttention,
  decodeAttentionFused,
  geglu,
  releaseRopeConstants,
  rmsNorm,
  rope,
  ropeHeads,
  swiglu,
  kvWrite,
  wasmAttention,
} from '../engine/index';
import { ropeInvFreq, type ModelConfig } from '../contract/modelConfig';
import { describeModel, layerNormWeights, type BlockOp, type ModelDescription } from '../contract/blockDescription';
import { PROJ_NAMES } from '../contract/loraTargets';
import {
  BlockedDenseWeight,
  DenseWeight,
  denseFromHost,
  forwardGroup,
  groupFromHost,
  Linear,
  weightLayout,
  type FrozenWeight,
  type TransposedWeight,
  type WeightLayout,
} from './linear';
import { getFiniteFloat32, type TensorSource } from './safetensors';

/** Hugging Face parameter names of the checkpoints (every family; norms by the block description). */
export const HF_NAMES = {
  embed: 'model.embed_tokens.weight',
  norm: 'model.norm.weight',
  lmHead: 'lm_head.weight',
  layer: (i: number) => ({
    inputNorm: `model.layers.${i}.input_layernorm.weight`,
    postNorm: `model.layers.${i}.post_attention_layernorm.weight`,
    q: `model.layers.${i}.self_attn.q_proj`,
    k: `model.layers.${i}.self_attn.k_proj`,
    v: `model.layers.${i}.self_attn.v_proj`,
    o: `model.layers.${i}.self_attn.o_proj`,
    gate: `model.layers.${i}.mlp.gate_proj`,
    up: `model.layers.${i}.mlp.up_proj`,
    down: `model.layers.${i}.mlp.down_proj`,
  }),
} as const;

// The projection names live in contract/ (the page's LoRA target sets name them too).
export { PROJ_NAMES, type ProjName } from '../contract/loraTargets';

export interface LlamaLayer {
  /** Every norm weight of the layer by its module name under the layer (input_layernorm, self_attn.q_norm, ...). */
  norms: Record<string, tf.Tensor1D>;
  /** norms.input_layernorm and norms.post_attention_layernorm (what the planned Llama block binds). */
  inputNorm: tf.Tensor1D;
  postNorm: tf.Tensor1D;
  q: Linear;
  k: Linear;
  v: Linear;
  o: Linear;
  gate: Linear;
  up: Linear;
  down: Linear;
}

export interface LlamaModel {
  config: ModelConfig;
  /**
   * [V, H]; row blocks when it would not fit one storage binding (see BlockedDenseWeight); held as
   * E^T [H, V] on wasm and cpu (TransposedWeight), the layout of the tied LM head's fast product.
   */
  embed: tf.Tensor2D | BlockedDenseWeight | TransposedWeight;
  layers: LlamaLayer[];
  /** [H] */
  norm: tf.Tensor1D;
  /** [V, H]; shares `embed` when tied. */
  lmHead: Linear;
  /** RoPE inverse frequencies (float64, host) of every layer's RoPE but Gemma 3's sliding layers. */
  invFreq: Float64Array;
  /** The block as the op sequence the forward runs. */
  description: ModelDescription;
  /** Inverse frequencies of each RoPE of the description (invFreqs[0] is invFreq). */
  invFreqs: Float64Array[];
}

export class ModelLoadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ModelLoadError';
  }
}

export interface LoadOptions {
  /**
   * Turns a projection's float32 weight [out, in] into its frozen storage (e.g. int8); return
   * null to keep it dense. Called for the seven projections of every layer, and for the LM head
   * when it is not tied (name "lm_head").
   */
  quantize?: (name: string, w: Float32Array, shape: [number, number]) => FrozenWeight | null;
  /** How dense weights are held (linear.ts WeightLayout); default: the active backend's. */
  layout?: WeightLayout;
  /**
   * On wasm, hold q/k/v and gate/up as one W^T per group and run one product for each (linear.ts
   * groupFromHost). Off by default: measured idle on the sandbox defender, the grouped forward took
   * 67.1 ms CPU against 49.7 ungrouped (decode b64 1.2x against 1.1x of the previous commit's, the
   * learning step 1.1x against 1.0x): the inner-axis split after the product runs tfjs-wasm's slow
   * generic loop and costs more than the products it saves (BENCHMARKS.md, the CPU row).
   */
  groupProjections?: boolean;
}

/** The description of a config's block and the RoPE frequencies it runs with (every LlamaModel has them). */
export function blockOf(config: ModelConfig): Pick<LlamaModel, 'description' | 'invFreq' | 'invFreqs'> {
  const description = describeModel(config);
  const invFreqs = description.ropes.map((r) =>
    ropeInvFreq({ headDim: config.headDim, ropeTheta: r.theta, ropeScaling: r.scaling }),
  );
  return { description, invFreq: invFreqs[0], invFreqs };
}

/** Builds the model from a config and a tensor source (one safetensors file or a sharded set). */
export function loadLlama(config: ModelConfig, source: TensorSource, opts: LoadOptions = {}): LlamaModel {
  const { hiddenSize: H, intermediateSize: I, numHeads, numKvHeads, headDim: D, vocabSize: V } = config;
  const created: { dispose(): void }[] = [];
  const read = (name: string, shape: number[]): Float32Array => {
    if (!source.has(name)) throw new ModelLoadError(`${source.fileName}: missing tensor "${name}"`);
    const info = source.info(name);
    if (info.shape.length !== shape.length || info.shape.some((s, i) => s !== shape[i])) {
      throw new ModelLoadError(
        `${source.fileOf(name)}: tensor "${name}" has shape [${info.shape.join(', ')}], config.json implies [${shape.join(', ')}]`,
      );
    }
    // NaN or Infinity weights make every step NaN: refused here, and the catch below frees
    // whatever was created, so a bad file changes nothing.
    return getFiniteFloat32(source, name);
  };
  const description = describeModel(config);
  const vec = (name: string, n: number, offset = 0): tf.Tensor1D => {
    const data = read(name, [n]);
    // Gemma3RMSNorm multiplies by (1 + w) in float32: folded into the stored weight once.
    if (offset) for (let i = 0; i < n; i++) data[i] = Math.fround(data[i] + offset);
    const t = tf.tensor1d(data);
    created.push(t);
    return t;
  };
  const linear = (module: string, out: number, inp: number, bias: boolean): Linear => {
    const data = read(`${module}.weight`, [out, inp]);
    let w = opts.quantize?.(module, data, [out, inp]) ?? null;
    if (!w) w = denseFromHost(data, [out, inp], opts.layout);
    created.push(w);
    const b = bias ? vec(`${module}.bias`, out) : null;
    return new Linear(module, w, b);
  };
  /**
   * Projections of one input (q, k, v; gate, up): with groupProjections, on wasm in the W^T layout, unquantised, one W^T
   * for the group (linear.ts groupFromHost; the forward runs one product for them), else one by
   * one (tfjs-cpu keeps them apart: the recipes' reports on it are kept byte for byte,
   * src/recipes/reportIdentity.test.ts).
   */
  const group = (specs: { module: string; out: number; bias: boolean }[], inp: number): Linear[] => {
    if (
      !opts.groupProjections ||
      (opts.layout ?? weightLayout()) !== 'inOut' ||
      opts.quantize ||
      tf.getBackend() !== 'wasm'
    )
      return specs.map((p) => linear(p.module, p.out, inp, p.bias));
    const parts = specs.map((p) => ({ data: read(`${p.module}.weight`, [p.out, inp]), out: p.out }));
    const ws = groupFromHost(parts, inp);
    created.push(...ws);
    return specs.map((p, i) => new Linear(p.module, ws[i], p.bias ? vec(`${p.module}.bias`, p.out) : null));
  };

  const normOffset = description.norm === 'rmsOffset' ? 1 : 0;
  try {
    const embedW = denseFromHost(read(HF_NAMES.embed, [V, H]), [V, H], opts.layout);
    const embed = embedW instanceof DenseWeight ? embedW.w : embedW;
    created.push(embedW);
    const layers: LlamaLayer[] = [];
    for (let i = 0; i < config.numLayers; i++) {
      const n = HF_NAMES.layer(i);
      const norms: Record<string, tf.Tensor1D> = {};
      for (const { weight, size } of layerNormWeights(description.layers[i], config))
        norms[weight] = vec(`model.layers.${i}.${weight}.weight`, size, normOffset);
      const [q, k, v] = group(
        [
          { module: n.q, out: numHeads * D, bias: config.qkvBias },
          { module: n.k, out: numKvHeads * D, bias: config.qkvBias },
          { module: n.v, out: numKvHeads * D, bias: config.qkvBias },
        ],
        H,
      );
      const o = linear(n.o, H, numHeads * D, config.oBias);
      const [gate, up] = group(
        [
          { module: n.gate, out: I, bias: config.mlpBias },
          { module: n.up, out: I, bias: config.mlpBias },
        ],
        H,
      );
      layers.push({
        norms,
        inputNorm: norms.input_layernorm,
        postNorm: norms.post_attention_layernorm,
        q,
        k,
        v,
        o,
        gate,
        up,
        down: linear(n.down, H, I, config.mlpBias),
      });
    }
    const norm = vec(HF_NAMES.norm, H, normOffset);
    let lmHead: Linear;
    if (config.tieWordEmbeddings) {
      // Same tensor(s) as the embedding; disposeLlama frees them once.
      lmHead = new Linear('lm_head', embedW);
    } else {
      if (!source.has(HF_NAMES.lmHead)) {
        throw new ModelLoadError(
          `${source.fileName}: missing tensor "${HF_NAMES.lmHead}" (config.json has tie_word_embeddings false)`,
        );
      }
      lmHead = linear('lm_head', V, H, false);
    }
    return { config, embed, layers, norm, lmHead, ...blockOf(config) };
  } catch (e) {
    for (const t of created) t.dispose();
    throw e;
  }
}

const disposeHooks: ((model: LlamaModel) => void)[] = [];

/** Runs `fn` whenever a model is disposed (what other modules built on its weights goes with it). */
export function onDisposeLlama(fn: (model: LlamaModel) => void): void {
  disposeHooks.push(fn);
}

/** Frees every tensor of the model (adapters included). */
export function disposeLlama(model: LlamaModel): void {
  for (const h of disposeHooks) h(model);
  releaseRopeConstants();
  for (const l of model.layers) {
    for (const n of Object.values(l.norms)) n.dispose();
    for (const p of PROJ_NAMES) l[p].dispose();
  }
  model.norm.dispose();
  if (model.config.tieWordEmbeddings) model.lmHead.adapter?.dispose();
  else model.lmHead.dispose();
  model.embed.dispose();
}

/** Every Linear of the model with its HF module path (LoRA targeting, quantisation, export). */
export function linearLayers(model: LlamaModel): Linear[] {
  const out: Linear[] = [];
  for (const l of model.layers) for (const p of PROJ_NAMES) out.push(l[p]);
  return out;
}

// ---------------------------------------------------------------------------------------------
// KV cache

/**
 * Keys and values of every layer in fixed-capacity tensors [B, nKV, C, D]. A fixed shape means
 * each decode step reallocates buffers of the same size, which the WebGPU buffer pool reuses;
 * a cache grown by concat would leave one pooled buffer per length behind.
 */
export interface KVCache {
  batch: number;
  capacity: number;
  /** Slots written so far (the same for every row: rows are left-padded). */
  length: number;
  keys: tf.Tensor4D[];
  values: tf.Tensor4D[];
  /** Per row: 1 where the slot holds a real token. */
  slotValid: Uint8Array[];
  /** Per row: real tokens so far = the RoPE position of the row's next real token. */
  nextPosition: Int32Array;
}

export function createKVCache(model: LlamaModel, batch: number, capacity: number): KVCache {
  const { numLayers, numKvHeads, headDim } = model.config;
  const shape: [number, number, number, number] = [batch, numKvHeads, capacity, headDim];
  return {
    batch,
    capacity,
    length: 0,
    keys: Array.from({ length: numLayers }, () => tf.zeros(shape) as tf.Tensor4D),
    values: Array.from({ length: numLayers }, () => tf.zeros(shape) as tf.Tensor4D),
    slotValid: Array.from({ length: batch }, () => new Uint8Array(capacity)),
    nextPosition: new Int32Array(batch),
  };
}

export function disposeKVCache(cache: KVCache): void {
  for (const t of cache.keys) t.dispose();
  for (const t of cache.values) t.dispose();
  cache.keys = [];
  cache.values = [];
}

// ---------------------------------------------------------------------------------------------
// Forward

export interface ForwardOptions {
  /** [B][L] 1 for a real token, 0 for padding. Default: all real. */
  attentionMask?: ArrayLike<number>[];
  /** Append this call's tokens to the cache and attend over everything in it. */
  cache?: KVCache;
  /** Return logits of the last position only ([B, 1, V]): prefill for generation. */
  lastOnly?: boolean;
  /**
   * What to return: 'logits' (default) or 'hidden', the final RMS-normed hidden state [B, L, H]
   * that the LM head would read (a value head reads it; applying `model.lmHead.forward` to it
   * gives the logits, so a caller can run the head on the rows it needs only).
   */
  output?: 'logits' | 'hidden';
}

/** Large negative added to masked scores (finite, so a row with nothing to attend to stays finite). */
const MASKED = -1e9;

/**
 * Runs the decoder on ids [B][L] (or an int32 tensor [B, L]) and returns logits [B, L, V]
 * (or [B, 1, V] with lastOnly; [B, L | 1, H] normed hidden states with output 'hidden').
 * Differentiable with respect to adapter variables.
 */
export function forward(
  model: LlamaModel,
  ids: ArrayLike<number>[] | tf.Tensor2D,
  opts: ForwardOptions = {},
): tf.Tensor3D {
  const cfg = model.config;
  const [B, L] = ids instanceof tf.Tensor ? ids.shape : [ids.length, ids.length ? ids[0].length : 0];
  if (B === 0 || L === 0) throw new Error('forward: empty batch or sequence');
  if (!(ids instanceof tf.Tensor)) {
    ids.forEach((row, b) => {
      if (row.length !== L) throw new Error(`forward: row ${b} has ${row.length} ids, row 0 has ${L} (pad the batch)`);
      for (let i = 0; i < row.length; i++) {
        const t = row[i];
        if (!Number.isInteger(t) || t < 0 || t >= cfg.vocabSize) {
          throw new Error(
            `forward: token id ${t} at row ${b}, position ${i} is outside the vocabulary [0, ${cfg.vocabSize})`,
          );
        }
      }
    });
  }
  const mask = opts.attentionMask;
  if (mask && (mask.length !== B || mask.some((r) => r.length !== L))) {
    throw new Error(`forward: attentionMask must be [${B}][${L}]`);
  }
  const cache = opts.cache;
  if (cache && cache.batch !== B) throw new Error(`forward: cache batch ${cache.batch} != ids batch ${B}`);
  const start = cache ? cache.length : 0;
  const C = cache ? cache.capacity : L;
  if (start + L > C) throw new Error(`forward: cache capacity ${C} exceeded (${start} + ${L} tokens)`);

  // --- host side: slot validity, RoPE positions, cos/sin and the additive attention mask.
  const slotValid = cache ? cache.slotValid : Array.from({ length: B }, () => new Uint8Array(C));
  const nextPos = cache ? cache.nextPosition : new Int32Array(B);
  const D = cfg.headDim;
  const desc = model.description;
  const positions = new Int32Array(B * L);
  for (let b = 0; b < B; b++) {
    for (let i = 0; i < L; i++) {
      const real = mask ? mask[b][i] !== 0 : true;
      slotValid[b][start + i] = real ? 1 : 0;
      positions[b * L + i] = real ? nextPos[b]++ : 0; // a pad's position is irrelevant: nothing attends to it
    }
  }
  // One cos/sin pair per RoPE and one mask per window the layers use (Llama: one of each).
  const attnOps = desc.layers.map((ops) => ops.find((o) => o.op === 'attention') as AttentionOp);
  const ropeTables = new Map<number, { cos: Float32Array; sin: Float32Array }>();
  const masks = new Map<number | null, Float32Array>();
  for (const a of attnOps) {
    if (!ropeTables.has(a.rope)) ropeTables.set(a.rope, ropeTable(model.invFreqs[a.rope], positions, D));
    if (!masks.has(a.window)) masks.set(a.window, attentionBias(slotValid, B, L, C, start, a.window));
  }
  if (cache) cache.length = start + L;

  const fusedDecode = cache !== undefined && L === 1 && decodeAttentionFused(start + 1);
  /** q/k/v, q/k norms, RoPE, the cache, attention over the layer's window, o. */
  const attentionOp = (
    layer: LlamaLayer,
    op: AttentionOp,
    h: tf.Tensor,
    cosT: tf.Tensor4D,
    sinT: tf.Tensor4D,
    maskT: tf.Tensor5D,
    li: number,
  ): tf.Tensor => {
    const [q0, k0, v0] = forwardGroup([layer.q, layer.k, layer.v], h);
    let v = heads(v0, B, L, cfg.numKvHeads, D); // [B, nKV, L, D]
    let q: tf.Tensor4D, k: tf.Tensor4D;
    if (op.qkNorm) {
      q = rmsNorm(heads(q0, B, L, cfg.numHeads, D), layer.norms[op.qkNorm.q], cfg.rmsNormEps) as tf.Tensor4D;
      k = rmsNorm(heads(k0, B, L, cfg.numKvHeads, D), layer.norms[op.qkNorm.k], cfg.rmsNormEps) as tf.Tensor4D;
      q = rope(q, cosT, sinT);
      k = rope(k, cosT, sinT);
    } else {
      // the heads split as they are rotated (one kernel each way on tfjs-wasm)
      q = ropeHeads(q0, cosT, sinT, cfg.numHeads); // [B, nH, L, D]
      k = ropeHeads(k0, cosT, sinT, cfg.numKvHeads); // [B, nKV, L, D]
    }
    // The kernels scale scores by D^-1/2; another scale (Gemma's query_pre_attn_scalar) goes on q.
    // (a factor within 1e-9 of 1 is 1 in float32: D ** -0.5 and 1 / sqrt(D) differ in a last bit,
    // which ran a product by 1 per layer, and its gradient, on every model)
    if (Math.abs(op.scale * Math.sqrt(D) - 1) > 1e-9) q = q.mul(op.scale * Math.sqrt(D));
    if (cache) {
      k = start === 0 && L === C ? k : kvWrite(cache.keys[li], k, start);
      v = start === 0 && L === C ? v : kvWrite(cache.values[li], v, start);
      newKeys.push(tf.keep(k as tf.Tensor4D));
      newValues.push(tf.keep(v as tf.Tensor4D));
    }
    // A decode step attends with the fused kernel over the filled slots only. It has no gradient,
    // which is fine: only generation uses the cache, training runs the full-sequence path.
    const a = fusedDecode
      ? decodeAttention(
          q.reshape([B, cfg.numHeads, D]),
          k as tf.Tensor4D,
          v as tf.Tensor4D,
          maskT.reshape([B, C]),
          start + 1,
        ).reshape([B, 1, cfg.numHeads * D])
      : attention(q, k, v, maskT, cfg.numHeads, cfg.numKvHeads, B, L, C, D); // [B, L, nH*D]
    return layer.o.forward(a);
  };
  const newKeys: tf.Tensor4D[] = [];
  const newValues: tf.Tensor4D[] = [];
  const logits = tf.tidy(() => {
    const ropeT = new Map(
      [...ropeTables].map(([r, t]) => [
        r,
        { cos: tf.tensor4d(t.cos, [B, 1, L, D]), sin: tf.tensor4d(t.sin, [B, 1, L, D]) },
      ]),
    );
    const maskT = new Map([...masks].map(([w, m]) => [w, tf.tensor5d(m, [B, 1, 1, L, C])]));
    const idsT =
      ids instanceof tf.Tensor
        ? ids.toInt()
        : tf.tensor2d(
            ids.map((r) => Array.from(r)),
            [B, L],
            'int32',
          );

    let x: tf.Tensor = model.embed instanceof tf.Tensor ? tf.gather(model.embed, idsT) : model.embed.gather(idsT); // [B, L, H]
    if (desc.embedScale !== 1) x = x.mul(desc.embedScale);
    model.layers.forEach((layer, li) => {
      let h = x;
      for (const op of desc.layers[li]) {
        switch (op.op) {
          case 'norm':
            h = rmsNorm(op.of === 'residual' ? x : h, layer.norms[op.weight], cfg.rmsNormEps);
            break;
          case 'attention': {
            const { cos, sin } = ropeT.get(op.rope)!;
            h = attentionOp(layer, op, h, cos, sin, maskT.get(op.window)!, li);
            break;
          }
          case 'mlp': {
            const [g, u] = forwardGroup([layer.gate, layer.up], h);
            h = layer.down.forward(op.activation === 'silu' ? swiglu(g, u) : geglu(g, u));
            break;
          }
          case 'add':
            x = x.add(h);
            break;
        }
      }
    });
    if (opts.lastOnly) x = x.slice([0, L - 1, 0], [B, 1, cfg.hiddenSize]);
    x = rmsNorm(x, model.norm, cfg.rmsNormEps);
    if (opts.output === 'hidden') return x as tf.Tensor3D;
    return model.lmHead.forward(x) as tf.Tensor3D;
  });
  if (cache) {
    for (const t of cache.keys) t.dispose();
    for (const t of cache.values) t.dispose();
    cache.keys = newKeys;
    cache.values = newValues;
  }
  return logits;
}

type AttentionOp = Extract<BlockOp, { op: 'attention' }>;

/**
 * cos and sin [B, L, D] of each token's RoPE position; rotate_half(x) = [-x2, x1], its sign folded
 * into sin so that rope = x*cos + swap(x)*sinSigned.
 */
function ropeTable(invFreq: Float64Array, positions: Int32Array, D: number): { cos: Float32Array; sin: Float32Array } {
  const half = D / 2;
  const cos = new Float32Array(positions.length * D);
  const sin = new Float32Array(positions.length * D);
  positions.forEach((pos, t) => {
    const base = t * D;
    for (let j = 0; j < half; j++) {
      const angle = pos * invFreq[j];
      const c = Math.cos(angle);
      const s = Math.sin(angle);
      cos[base + j] = c;
      cos[base + half + j] = c;
      sin[base + j] = -s;
      sin[base + half + j] = s;
    }
  });
  return { cos, sin };
}

/**
 * The additive mask [B, L, C]: query i (slot start+i) may see key slot j iff j <= start+i, slot j
 * is real and, in a sliding layer, j > start+i - window (HF's sliding_window_overlay, over cache
 * slots: left pads count toward the window as they do there).
 */
function attentionBias(
  slotValid: Uint8Array[],
  B: number,
  L: number,
  C: number,
  start: number,
  window: number | null,
): Float32Array {
  const bias = new Float32Array(B * L * C);
  for (let b = 0; b < B; b++) {
    const valid = slotValid[b];
    for (let i = 0; i < L; i++) {
      const row = (b * L + i) * C;
      const last = start + i;
      const first = window === null ? 0 : last - window + 1;
      for (let j = 0; j < C; j++) bias[row + j] = j <= last && j >= first && valid[j] ? 0 : MASKED;
    }
  }
  return bias;
}

/** [B, L, n*D] -> [B, n, L, D] */
function heads(x: tf.Tensor, B: number, L: number, n: number, D: number): tf.Tensor4D {
  // One token: [B, 1, n, D] and [B, n, 1, D] are the same memory, so skip the transpose kernel.
  if (L === 1) return x.reshape([B, n, 1, D]);
  return x.reshape([B, L, n, D]).transpose([0, 2, 1, 3]);
}

/**
 * Grouped-query attention. q [B, nH, L, D]; k, v [B, nKV, C, D]; mask [B, 1, 1, L, C].
 * Query head h uses kv head floor(h / G) (HF repeat_kv), so q is viewed as [B, nKV, G*L, D]
 * and multiplied with k directly: no copy of k or v per query head.
 */
function attention(
  q: tf.Tensor4D,
  k: tf.Tensor4D,
  v: tf.Tensor4D,
  mask: tf.Tensor5D,
  nH: number,
  nKV: number,
  B: number,
  L: number,
  C: number,
  D: number,
): tf.Tensor {
  // tfjs-wasm: one kernel of ours each way, the same products (engine/kernels/wasmGemm.ts)
  const ours = tf.getBackend() === 'wasm' ? wasmAttention(q, k, v, mask, nH, nKV) : null;
  if (ours) return ours;
  const G = nH / nKV;
  const qg = q.reshape([B, nKV, G * L, D]);
  const scores = tf.matMul(qg, k, false, true).mul(1 / Math.sqrt(D)); // [B, nKV, G*L, C]
  const p = tf.softmax(scores.reshape([B, nKV, G, L, C]).add(mask), -1).reshape([B, nKV, G * L, C]);
  const out = tf.matMul(p, v); // [B, nKV, G*L, D]
  return out
    .reshape([B, nH, L, D])
    .transpose([0, 2, 1, 3])
    .reshape([B, L, nH * D]);
}
