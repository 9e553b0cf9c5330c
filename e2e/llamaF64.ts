// A float64 forward of a small Llama fixture (its f32 weights read from model.safetensors) with
// LoRA adapters, on the host: the per-token log-probs and entropies of a left-padded response batch
// the way src/rl/policy.ts defines them (HF semantics: RoPE position = real tokens before it in the
// row, pads and masked tokens never attended to, logits / temperature). Written out loop by loop,
// independently of tfjs and of the plan, for finite differences of the loss in float64.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseModelConfig, ropeInvFreq, type ModelConfig } from '../src/contract/modelConfig';
import { getFiniteFloat32, parseSafetensors } from '../src/model/safetensors';

export interface F64Model {
  cfg: ModelConfig;
  w: (name: string) => Float64Array;
}

/**
 * The model in `dir`; `projection` maps each projection's weight [out, in] as the loader's quantise
 * hook stores it (quantised and decoded back: the values the int8 / int4 kernels compute with).
 */
export function loadF64(
  dir: string,
  projection?: (w: Float32Array, shape: [number, number]) => Float32Array,
): F64Model {
  const cfg = parseModelConfig(readFileSync(resolve(dir, 'config.json'), 'utf8'));
  const st = parseSafetensors(new Uint8Array(readFileSync(resolve(dir, 'model.safetensors'))));
  const cache = new Map<string, Float64Array>();
  return {
    cfg,
    w: (name) => {
      if (!cache.has(name)) {
        const w = getFiniteFloat32(st, name);
        const shape = st.info(name).shape as [number, number];
        cache.set(name, Float64Array.from(projection && name.endsWith('_proj.weight') ? projection(w, shape) : w));
      }
      return cache.get(name)!;
    },
  };
}

/** LoRA factors by HF module path (`model.layers.0.self_attn.q_proj`): A [r, in], B [out, r] row-major. */
export type F64Lora = Map<string, { A: Float64Array; B: Float64Array; r: number; scale: number }>;

/** y [n, out] = x [n, in] W^T (+ scale (x A^T) B^T). */
function linear(m: F64Model, lora: F64Lora, module: string, x: Float64Array, n: number, inF: number): Float64Array {
  const W = m.w(`${module}.weight`);
  const outF = W.length / inF;
  const y = new Float64Array(n * outF);
  const ad = lora.get(module);
  for (let i = 0; i < n; i++) {
    const xi = x.subarray(i * inF, (i + 1) * inF);
    const xa = ad ? new Float64Array(ad.r) : null;
    if (ad) for (let k = 0; k < ad.r; k++) for (let j = 0; j < inF; j++) xa![k] += xi[j] * ad.A[k * inF + j];
    for (let o = 0; o < outF; o++) {
      let s = 0;
      for (let j = 0; j < inF; j++) s += xi[j] * W[o * inF + j];
      if (ad) for (let k = 0; k < ad.r; k++) s += ad.scale * xa![k] * ad.B[o * ad.r + k];
      y[i * outF + o] = s;
    }
  }
  return y;
}

function rmsNorm(x: Float64Array, n: number, H: number, w: Float64Array, eps: number): Float64Array {
  const y = new Float64Array(n * H);
  for (let i = 0; i < n; i++) {
    let ss = 0;
    for (let j = 0; j < H; j++) ss += x[i * H + j] ** 2;
    const inv = 1 / Math.sqrt(ss / H + eps);
    for (let j = 0; j < H; j++) y[i * H + j] = x[i * H + j] * inv * w[j];
  }
  return y;
}

/** In place: rotate_half RoPE of each head of row i at position pos[i]. */
function rope(x: Float64Array, n: number, heads: number, D: number, pos: number[], inv: Float64Array): void {
  const half = D / 2;
  for (let i = 0; i < n; i++) {
    for (let h = 0; h < heads; h++) {
      const o = (i * heads + h) * D;
      for (let j = 0; j < half; j++) {
        const a = pos[i] * inv[j];
        const [c, s] = [Math.cos(a), Math.sin(a)];
        const [x1, x2] = [x[o + j], x[o + half + j]];
        x[o + j] = x1 * c - x2 * s;
        x[o + half + j] = x2 * c + x1 * s;
      }
    }
  }
}

/** Per-token log-probs and entropies [B][T] of the responses after their left-padded prompts. */
export function f64Stats(
  m: F64Model,
  lora: F64Lora,
  batch: { prompts: number[][]; responses: number[][]; mask: number[][] },
  temperature: number,
): { logp: number[][]; entropy: number[][] } {
  const { cfg } = m;
  if (!cfg.tieWordEmbeddings) throw new Error('llamaF64: only tied heads (the tiny fixtures)');
  const [H, nH, nKV, D, I, V] = [
    cfg.hiddenSize,
    cfg.numHeads,
    cfg.numKvHeads,
    cfg.headDim,
    cfg.intermediateSize,
    cfg.vocabSize,
  ];
  const inv = ropeInvFreq(cfg);
  const embed = m.w('model.embed_tokens.weight');
  const T = batch.responses[0].length;
  const out = { logp: [] as number[][], entropy: [] as number[][] };
  for (let b = 0; b < batch.prompts.length; b++) {
    // Only the real tokens matter: pads come first and nothing attends to them, and masked response
    // tokens only follow the row's real ones (a stopped row), so each row runs alone over its real tokens.
    if (batch.mask[b].some((x, t) => x > 0 && t > 0 && !(batch.mask[b][t - 1] > 0)))
      throw new Error('llamaF64: a response mask must be ones then zeros');
    const ids = [...batch.prompts[b], ...batch.responses[b].filter((_, t) => batch.mask[b][t] > 0)];
    const n = ids.length;
    const pos = ids.map((_, i) => i);
    let x = new Float64Array(n * H);
    ids.forEach((id, i) => x.set(embed.subarray(id * H, (id + 1) * H), i * H));
    for (let l = 0; l < cfg.numLayers; l++) {
      const p = `model.layers.${l}`;
      const h = rmsNorm(x, n, H, m.w(`${p}.input_layernorm.weight`), cfg.rmsNormEps);
      const q = linear(m, lora, `${p}.self_attn.q_proj`, h, n, H);
      const k = linear(m, lora, `${p}.self_attn.k_proj`, h, n, H);
      const v = linear(m, lora, `${p}.self_attn.v_proj`, h, n, H);
      rope(q, n, nH, D, pos, inv);
      rope(k, n, nKV, D, pos, inv);
      const a = new Float64Array(n * nH * D);
      for (let hd = 0; hd < nH; hd++) {
        const kv = Math.floor(hd / (nH / nKV));
        for (let i = 0; i < n; i++) {
          const sc = new Float64Array(i + 1);
          let mx = -Infinity;
          for (let j = 0; j <= i; j++) {
            let s = 0;
            for (let d = 0; d < D; d++) s += q[(i * nH + hd) * D + d] * k[(j * nKV + kv) * D + d];
            sc[j] = s / Math.sqrt(D);
            mx = Math.max(mx, sc[j]);
          }
          let z = 0;
          for (let j = 0; j <= i; j++) z += sc[j] = Math.exp(sc[j] - mx);
          for (let j = 0; j <= i; j++)
            for (let d = 0; d < D; d++) a[(i * nH + hd) * D + d] += (sc[j] / z) * v[(j * nKV + kv) * D + d];
        }
      }
      const o = linear(m, lora, `${p}.self_attn.o_proj`, a, n, nH * D);
      x = x.map((xi, i) => xi + o[i]);
      const h2 = rmsNorm(x, n, H, m.w(`${p}.post_attention_layernorm.weight`), cfg.rmsNormEps);
      const g = linear(m, lora, `${p}.mlp.gate_proj`, h2, n, H);
      const u = linear(m, lora, `${p}.mlp.up_proj`, h2, n, H);
      const act = g.map((gi, i) => (gi / (1 + Math.exp(-gi))) * u[i]);
      const dn = linear(m, lora, `${p}.mlp.down_proj`, act, n, I);
      x = x.map((xi, i) => xi + dn[i]);
    }
    const hN = rmsNorm(x, n, H, m.w('model.norm.weight'), cfg.rmsNormEps);
    const P = batch.prompts[b].length;
    const lp: number[] = [];
    const ent: number[] = [];
    for (let t = 0; t < T; t++) {
      if (!(batch.mask[b][t] > 0)) {
        lp.push(0);
        ent.push(0);
        continue;
      }
      const row = P - 1 + t; // the hidden row that predicts response token t
      const z = new Float64Array(V);
      for (let c = 0; c < V; c++) {
        let s = 0;
        for (let j = 0; j < H; j++) s += hN[row * H + j] * embed[c * H + j];
        z[c] = s / temperature;
      }
      const mx = Math.max(...z);
      let se = 0;
      for (const zc of z) se += Math.exp(zc - mx);
      const lse = mx + Math.log(se);
      let e = 0;
      for (const zc of z) e -= Math.exp(zc - lse) * (zc - lse);
      lp.push(z[batch.responses[b][t]] - lse);
      ent.push(e);
    }
    out.logp.push(lp);
    out.entropy.push(ent);
  }
  return out;
}
