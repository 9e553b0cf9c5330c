// What the GPU benchmark checks on the adapter it is about to time, before it times anything: the
// planned path against tfjs op by op on the same weights, with the kernel variants in force (the
// GPU ones on a GPU). Teacher-forced logits after a prompt over 256 tokens (the workgroup attention
// walks more than one 256-slot chunk) and after one over 1024 (a cache where the planner takes
// split-K attention on GPUs; checked where the plan takes it), seeded draws token for token, and one learning step's LoRA update
// (linear in the gradient: learnCheck). A mismatch, or a planned path that would run on tfjs
// instead, is a failure: the figures of a wrong or absent planned path are not worth timing.
import * as tf from '@tensorflow/tfjs';
import { engineOptions, setEngineOptions } from '../../src/engine/index';
import { generate } from '../../src/model/generate';
import { forward, type LlamaModel } from '../../src/model/llama';
import {
  plannedDecodeFor,
  plannedDispatches,
  plannedForcedLogits,
  plannedPrefillLogits,
} from '../../src/model/planned/decode';
import { learnCheck } from './learnBench';
import { SMOLLM2_135M_CONFIG } from './synthetic';

/** A small model with room for long prompts (positions to 2048): the check's cheap case on any adapter. */
export const CHECK_SMALL_CONFIG = {
  ...SMOLLM2_135M_CONFIG,
  hidden_size: 96,
  intermediate_size: 384,
  num_hidden_layers: 3,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: 24,
  vocab_size: 512,
  max_position_embeddings: 2048,
};

export interface CheckLine {
  what: string;
  ok: boolean;
  /** The measured error (or what differed) and the bound. */
  detail: string;
}

/**
 * Bounds: planned and tfjs sum in different orders in float32; over 30 layers of the SmolLM2-135M
 * shape a correct kernel stays within about 1e-5 of the logits' scale (the split GEMV matched tfjs
 * within 2.7e-6 there on SwiftShader), a wrong one is off by the logits' own size.
 */
export const LOGITS_REL_TOL = 1e-3;
export const LEARN_REL_TOL = 1e-3;

function relMax(got: ArrayLike<number>, ref: ArrayLike<number>): number {
  let err = 0;
  let scale = 0;
  for (let i = 0; i < ref.length; i++) {
    err = Math.max(err, Math.abs(got[i] - ref[i]));
    scale = Math.max(scale, Math.abs(ref[i]));
  }
  return (Number.isNaN(err) ? Infinity : err) / Math.max(scale, 1e-6);
}

/**
 * tfjs op by op over each row's whole sequence (left-padded, so the rows end together) in one
 * forward: the logits of the last `n` positions, [n][B * V] (one forward per length: tfjs compiles
 * kernels per shape, which a software adapter pays for in seconds).
 */
async function tfjsLastLogits(model: LlamaModel, rows: number[][], n: number): Promise<Float32Array[]> {
  const P = Math.max(...rows.map((r) => r.length));
  const ids = rows.map((r) => [...Array(P - r.length).fill(0), ...r]);
  const attn = rows.map((r) => [...Array(P - r.length).fill(0), ...Array(r.length).fill(1)]);
  const V = model.config.vocabSize;
  const all = forward(model, ids, { attentionMask: attn });
  const last = tf.slice(all, [0, P - n, 0], [rows.length, n, V]);
  const v = (await last.data()) as Float32Array;
  tf.dispose([all, last]);
  // [B, n, V] -> per position j: [B * V]
  return Array.from({ length: n }, (_, j) => {
    const out = new Float32Array(rows.length * V);
    for (let b = 0; b < rows.length; b++) out.set(v.subarray((b * n + j) * V, (b * n + j + 1) * V), b * V);
    return out;
  });
}

/** Two left-padded rows of prompt tokens, the longer of `len` tokens. */
function promptRows(model: LlamaModel, len: number): number[][] {
  const V = model.config.vocabSize;
  return [len - 5, len].map((n, b) => Array.from({ length: n }, (_, t) => (3 + 7 * t + 11 * b) % V));
}

/** The planned prefill and 2 teacher-forced steps after `len` prompt tokens against tfjs. */
async function logitsLine(model: LlamaModel, name: string, len: number): Promise<CheckLine> {
  const prompts = promptRows(model, len);
  const forced = [
    [5, 6],
    [7, 8],
  ];
  const capacity = len + forced.length + 1;
  const attention = plannedDispatches(model, prompts.length, capacity).attention;
  // tfjs over prompt + every forced token: position -(F + 1) is the prefill's, -(F - t) forced step t's.
  const ref = await tfjsLastLogits(
    model,
    prompts.map((p, b) => [...p, ...forced.map((f) => f[b])]),
    forced.length + 1,
  );
  let worst = relMax(await plannedPrefillLogits(model, prompts), ref[0]);
  const planned = await plannedForcedLogits(model, prompts, forced);
  for (let t = 0; t < forced.length; t++) worst = Math.max(worst, relMax(planned[t], ref[t + 1]));
  return {
    what: `${name}: logits after a ${len}-token prompt (${attention} attention, ${capacity} slots)`,
    ok: worst <= LOGITS_REL_TOL,
    detail: `max |planned - tfjs| / max |tfjs| = ${worst.toExponential(2)} (bound ${LOGITS_REL_TOL})`,
  };
}

/** Seeded sampling (temperature 1, top-k, top-p) on both paths: the same tokens, draw for draw. */
async function drawsLine(model: LlamaModel, name: string): Promise<CheckLine> {
  const prompts = promptRows(model, 24).concat(promptRows(model, 17));
  const opts = { maxNewTokens: 16, temperature: 1, topK: 40, topP: 0.95, seed: 7 };
  const path = engineOptions().decodePath;
  try {
    setEngineOptions({ decodePath: 'tfjs' });
    const ref = await generate(model, prompts, opts);
    setEngineOptions({ decodePath: 'planned' });
    const got = await generate(model, prompts, opts);
    const differ = got.tokens
      .flatMap((r, b) => r.map((t, i) => [b, i, t, ref.tokens[b][i]]))
      .filter(([, , a, c]) => a !== c);
    return {
      what: `${name}: seeded draws, ${prompts.length} rows x ${opts.maxNewTokens} tokens`,
      ok: differ.length === 0,
      detail:
        differ.length === 0
          ? 'identical'
          : `${differ.length} differ, first at row ${differ[0][0]} token ${differ[0][1]}: planned ${differ[0][2]}, tfjs ${differ[0][3]}`,
    };
  } finally {
    setEngineOptions({ decodePath: path });
  }
}

/** One learning step's adapter update and loss on both paths; the planned one must really run planned. */
export async function learnLine(model: LlamaModel, name: string): Promise<CheckLine> {
  const c = { prompts: 2, groupSize: 2, promptLen: 12, newTokens: 6, rank: 4 };
  const ref = await learnCheck(model, 'tfjs', c);
  const got = await learnCheck(model, 'planned', c);
  const what = `${name}: one learning step's LoRA update, ${c.prompts * c.groupSize} rows x (${c.promptLen} + ${c.newTokens})`;
  if (got.plannedMicroBatches === 0)
    return { what, ok: false, detail: 'the planned learning step fell back to tfjs (no micro-batch ran planned)' };
  const update = relMax(got.deltas, ref.deltas);
  const loss = relMax([got.metrics['loss/total']], [ref.metrics['loss/total']]);
  return {
    what,
    ok: update <= LEARN_REL_TOL && loss <= LEARN_REL_TOL,
    detail: `update ${update.toExponential(2)}, loss ${loss.toExponential(2)} relative to tfjs (bound ${LEARN_REL_TOL}); ${got.plannedMicroBatches} micro-batch(es) planned`,
  };
}

/** The prompt whose cache passes 1024 slots (SPLITK_MIN_CAPACITY): split-K attention on the GPU layout. */
export const LONG_PROMPT = 1030;

/**
 * Every check on one model; `long`: the prompt over 256 tokens too, and where the plan would take
 * split-K attention for it, the one over 1024 (the model's positions must reach them). Returns one
 * line per check, failures included (the caller decides).
 */
export async function checkModel(
  model: LlamaModel,
  name: string,
  long: boolean,
  progress: (l: CheckLine) => void = () => {},
): Promise<CheckLine[]> {
  if (tf.getBackend() !== 'webgpu') throw new Error('the planned-vs-tfjs check needs the webgpu backend');
  if (!plannedDecodeFor(model))
    return [{ what: `${name}: planned decode`, ok: false, detail: 'the planned decode would fall back to tfjs' }];
  const checks = [
    () => logitsLine(model, name, 16),
    ...(long ? [() => logitsLine(model, name, 300)] : []),
    // Over 1024 slots where that takes split-K attention (the GPU layout); a software layout keeps the
    // whole-cache kernel there, already checked at 300, and a 1030-token prompt costs SwiftShader minutes.
    ...(long && plannedDispatches(model, 2, LONG_PROMPT + 3).attention === 'splitk'
      ? [() => logitsLine(model, name, LONG_PROMPT)]
      : []),
    () => drawsLine(model, name),
    () => learnLine(model, name),
  ];
  const lines: CheckLine[] = [];
  for (const c of checks) {
    lines.push(await c());
    progress(lines[lines.length - 1]);
  }
  return lines;
}
