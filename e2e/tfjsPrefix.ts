// The tfjs references of the planned-path tests: last-position logits, and teacher-forced decoding
// in one forward instead of one per prefix.
import { forward, type LlamaModel } from '../src/model/llama';

/**
 * The tfjs path's last-position logits after each prefix of the teacher-forced tokens, [B * V] each:
 * [0] after the left-padded prompts, [t + 1] after forced[0..t] (forced[t][b] is row b's token t).
 * One causal forward over the whole sequence gives them all: position p attends to positions <= p
 * only, and every row keeps the same left pads in every prefix. Measured on tiny-llama-f32 with
 * LoRA (Dawn on SwiftShader): within 6e-6 of a forward per prefix, ~10 from the neighbouring
 * prefix's, and 1.4 s against 11.8 s for 7 prefixes (tfjs compiles its shaders for each new
 * sequence length; over 600-token prompts each forward cost ~20 s).
 */
export async function tfjsPrefixLogits(
  model: LlamaModel,
  prompts: number[][],
  forced: number[][],
): Promise<Float32Array[]> {
  const rows = prompts.map((p, b) => [...p, ...forced.map((f) => f[b])]);
  const P = Math.max(...rows.map((r) => r.length));
  const ids = rows.map((r) => [...Array(P - r.length).fill(0), ...r]);
  const attn = rows.map((r) => [...Array(P - r.length).fill(0), ...Array(r.length).fill(1)]);
  const t = forward(model, ids, { attentionMask: attn });
  const v = (await t.data()) as Float32Array;
  t.dispose();
  const B = rows.length;
  const V = model.config.vocabSize;
  return Array.from({ length: forced.length + 1 }, (_, k) => {
    const pos = P - 1 - forced.length + k;
    const out = new Float32Array(B * V);
    for (let b = 0; b < B; b++) out.set(v.subarray((b * P + pos) * V, (b * P + pos + 1) * V), b * V);
    return out;
  });
}

/** Last-position logits of the tfjs path over each row's full sequence (left-padded), [B * V]. */
export async function tfjsLogits(model: LlamaModel, rows: number[][]): Promise<Float32Array> {
  const P = Math.max(...rows.map((r) => r.length));
  const ids = rows.map((r) => [...Array(P - r.length).fill(0), ...r]);
  const attn = rows.map((r) => [...Array(P - r.length).fill(0), ...Array(r.length).fill(1)]);
  const t = forward(model, ids, { attentionMask: attn, lastOnly: true });
  const v = (await t.data()) as Float32Array;
  t.dispose();
  return v;
}
