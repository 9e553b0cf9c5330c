// Decode on the planned path beside the tfjs op-by-op path, in the same run on the same weights:
// tokens/s, dispatches per token, host milliseconds per token and weight bytes streamed per
// second. Host time is the wall time less the time spent waiting for readbacks (mapAsync), so it
// is the CPU time spent encoding and submitting, on either path.
import { percentOf } from './gpuPeaks';
import { engineOptions, setEngineOptions, type DecodeAttention } from '../../src/engine';
import { countGpuWork } from './gpuCounters';
import { generate } from '../../src/model/generate';
import type { LlamaModel } from '../../src/model/llama';
import { PROJ_NAMES } from '../../src/model/llama';
import { takePlannedGpuMs, takePlannedPrefillGpuMs, type DecodePath } from '../../src/model/planned/decode';
import { median } from './throughput';

export interface DecodeBenchCase {
  batch: number;
  promptLen: number;
  steps: number;
  reps: number;
}

export interface DecodeBenchResult extends DecodeBenchCase {
  path: DecodePath;
  tokPerS: number;
  msPerToken: number;
  hostMsPerToken: number;
  /** GPU time of the decode passes per token (planned path, timestamp queries); null where not measured. */
  gpuMsPerToken: number | null;
  dispatchesPerToken: number;
  /** Weight bytes one decode step reads (projections and LM head), per second of decode. */
  weightGBps: number;
}

/** One generate under the counters: wall, host (wall less readback waits), dispatches, planned GPU ms. */
async function counted(
  fn: () => Promise<unknown>,
): Promise<{ ms: number; hostMs: number; dispatches: number; gpuMs: number }> {
  takePlannedGpuMs();
  const { counts } = await countGpuWork(fn);
  return { ms: counts.ms, hostMs: counts.hostMs, dispatches: counts.dispatches, gpuMs: takePlannedGpuMs() };
}

export function decodeWeightBytes(model: LlamaModel): number {
  let bytes = model.lmHead.weight.bytes;
  for (const l of model.layers) for (const p of PROJ_NAMES) bytes += l[p].weight.bytes;
  return bytes;
}

function benchPrompts(model: LlamaModel, c: DecodeBenchCase): number[][] {
  const V = model.config.vocabSize;
  return Array.from({ length: c.batch }, (_, b) =>
    Array.from({ length: c.promptLen }, (_, t) => (7 + 31 * t + 101 * b) % V),
  );
}

/** One path: per-token figures from (1 + steps tokens) - (1 token), medians over reps. */
async function benchPath(model: LlamaModel, c: DecodeBenchCase, path: DecodePath): Promise<DecodeBenchResult> {
  const before = engineOptions().decodePath;
  setEngineOptions({ decodePath: path });
  try {
    const ps = benchPrompts(model, c);
    const opts = { temperature: 1, seed: 1 };
    await generate(model, ps, { ...opts, maxNewTokens: c.steps + 1 }); // warm-up: shaders, plan, pools
    const wall: number[] = [];
    const host: number[] = [];
    const disp: number[] = [];
    const gpu: number[] = [];
    for (let r = 0; r < c.reps; r++) {
      const one = await counted(() => generate(model, ps, { ...opts, maxNewTokens: 1 }));
      const many = await counted(() => generate(model, ps, { ...opts, maxNewTokens: 1 + c.steps }));
      wall.push((many.ms - one.ms) / c.steps);
      host.push((many.hostMs - one.hostMs) / c.steps);
      disp.push((many.dispatches - one.dispatches) / c.steps);
      gpu.push((many.gpuMs - one.gpuMs) / c.steps);
    }
    const msPerToken = Math.max(median(wall), 1e-6);
    return {
      ...c,
      path,
      tokPerS: (c.batch / msPerToken) * 1000,
      msPerToken,
      // A difference of two noisy runs: on a busy machine it can dip below zero; report 0 then.
      hostMsPerToken: Math.max(0, median(host)),
      gpuMsPerToken: path === 'planned' && median(gpu) > 0 ? median(gpu) : null,
      dispatchesPerToken: median(disp),
      weightGBps: decodeWeightBytes(model) / (msPerToken / 1000) / 1e9,
    };
  } finally {
    setEngineOptions({ decodePath: before });
  }
}

/** Both paths on one case: [planned, tfjs]. */
export async function benchDecodePaths(
  model: LlamaModel,
  c: DecodeBenchCase,
): Promise<[DecodeBenchResult, DecodeBenchResult]> {
  return [await benchPath(model, c, 'planned'), await benchPath(model, c, 'tfjs')];
}

export const DECODE_BENCH_HEADER = [
  'model',
  'weights',
  'batch',
  'path',
  'decode tok/s',
  'ms/token',
  'host ms/token',
  'GPU ms/token',
  'dispatches/token',
  'weight GB/s',
  '% stream',
  '% of peak',
  'speed-up',
  'host ratio',
];

/** Percent of the measured stream roofline, or '-' without one. */
const streamShare = (gbps: number, streamGBps?: number) =>
  streamGBps ? `${((100 * gbps) / streamGBps).toFixed(1)}%` : '-';

/**
 * Table rows of one case: planned and tfjs, with weight GB/s against `streamGBps` (the measured
 * stream roofline) and `peakGBps` (the GPU's published bandwidth, dev/bench/gpuPeaks.ts) where given.
 */
export function decodeBenchRows(
  name: string,
  weights: string,
  [planned, tfjs]: [DecodeBenchResult, DecodeBenchResult],
  streamGBps?: number,
  peakGBps?: number,
): (string | number)[][] {
  const row = (r: DecodeBenchResult, speed: string, hostRatio: string) => [
    name,
    weights,
    r.batch,
    r.path,
    r.tokPerS,
    r.msPerToken,
    r.hostMsPerToken,
    r.gpuMsPerToken ?? '-',
    r.dispatchesPerToken,
    r.weightGBps,
    streamShare(r.weightGBps, streamGBps),
    percentOf(r.weightGBps, peakGBps),
    speed,
    hostRatio,
  ];
  return [
    row(
      planned,
      `${(planned.tokPerS / tfjs.tokPerS).toFixed(2)}x`,
      planned.hostMsPerToken > 0
        ? `${(tfjs.hostMsPerToken / planned.hostMsPerToken).toFixed(1)}x lower`
        : 'not measurable',
    ),
    row(tfjs, '', ''),
  ];
}

/**
 * The planned path with each decode attention forced (the whole-cache kernel, then split-K
 * flash-decoding), on the same case: what split-K buys at a long cache.
 */
export async function benchPlannedAttention(
  model: LlamaModel,
  c: DecodeBenchCase,
): Promise<{ attention: DecodeAttention; r: DecodeBenchResult }[]> {
  const out: { attention: DecodeAttention; r: DecodeBenchResult }[] = [];
  try {
    for (const attention of ['whole', 'splitk'] as const) {
      setEngineOptions({ plannedAttention: attention });
      out.push({ attention, r: await benchPath(model, c, 'planned') });
    }
  } finally {
    setEngineOptions({ plannedAttention: null });
  }
  return out;
}

export const ATTENTION_BENCH_HEADER = [
  'model',
  'weights',
  'batch',
  'cache',
  'attention',
  'decode tok/s',
  'ms/token',
  'GPU ms/token',
  'dispatches/token',
  'split-K speed-up (wall)',
  'split-K speed-up (GPU)',
];

export function attentionBenchRows(
  name: string,
  weights: string,
  rs: { attention: DecodeAttention; r: DecodeBenchResult }[],
): (string | number)[][] {
  const whole = rs.find((x) => x.attention === 'whole');
  return rs.map(({ attention, r }) => [
    name,
    weights,
    r.batch,
    r.promptLen + 1 + r.steps,
    attention,
    r.tokPerS,
    r.msPerToken,
    r.gpuMsPerToken ?? '-',
    r.dispatchesPerToken,
    attention === 'splitk' && whole ? `${(r.tokPerS / whole.r.tokPerS).toFixed(2)}x` : '',
    // GPU time per token is the steadier figure: the wall difference of two generations carries the long prefill's noise.
    attention === 'splitk' && whole?.r.gpuMsPerToken && r.gpuMsPerToken
      ? `${(whole.r.gpuMsPerToken / r.gpuMsPerToken).toFixed(2)}x`
      : '',
  ]);
}

export interface RolloutBenchCase {
  batch: number;
  promptLen: number;
  newTokens: number;
  reps: number;
}

/** One way of running a rollout: the tfjs path, or the planned decode after a tfjs or a planned prefill. */
export type RolloutWay = 'tfjs' | 'planned, tfjs prefill' | 'planned';

export interface RolloutBenchResult extends RolloutBenchCase {
  way: RolloutWay;
  /** Wall milliseconds of a whole rollout (prefill and every new token; median). */
  ms: number;
  /** GPU milliseconds of the planned prefill pass and of the planned decode passes (timestamp queries; null where not measured). */
  prefillGpuMs: number | null;
  decodeGpuMs: number | null;
  dispatches: number;
}

/** Whole rollouts (prompt + new tokens, as a recipe runs them) each way, on the same prompts and seeds. */
export async function benchRollouts(model: LlamaModel, c: RolloutBenchCase): Promise<RolloutBenchResult[]> {
  const ps = benchPrompts(model, { batch: c.batch, promptLen: c.promptLen, steps: c.newTokens, reps: c.reps });
  const opts = { temperature: 1, seed: 1, maxNewTokens: c.newTokens };
  const before = engineOptions().decodePath;
  const out: RolloutBenchResult[] = [];
  try {
    for (const way of ['tfjs', 'planned, tfjs prefill', 'planned'] as const) {
      setEngineOptions({
        decodePath: way === 'tfjs' ? 'tfjs' : 'planned',
        prefillPath: way === 'planned' ? 'planned' : 'tfjs',
      });
      await generate(model, ps, opts); // warm-up
      const ms: number[] = [];
      const pre: number[] = [];
      const dec: number[] = [];
      const disp: number[] = [];
      for (let r = 0; r < c.reps; r++) {
        takePlannedPrefillGpuMs();
        const one = await counted(() => generate(model, ps, opts));
        ms.push(one.ms);
        dec.push(one.gpuMs);
        pre.push(takePlannedPrefillGpuMs());
        disp.push(one.dispatches);
      }
      out.push({
        ...c,
        way,
        ms: median(ms),
        prefillGpuMs: median(pre) > 0 ? median(pre) : null,
        decodeGpuMs: median(dec) > 0 ? median(dec) : null,
        dispatches: median(disp),
      });
    }
  } finally {
    setEngineOptions({ decodePath: before, prefillPath: 'planned' });
  }
  return out;
}

export const ROLLOUT_BENCH_HEADER = [
  'model',
  'weights',
  'rollout',
  'way',
  'ms',
  'prefill GPU ms',
  'decode GPU ms',
  'dispatches',
  'speed-up vs tfjs',
];

export function rolloutBenchRows(name: string, weights: string, rs: RolloutBenchResult[]): (string | number)[][] {
  const tfjs = rs.find((r) => r.way === 'tfjs')!;
  return rs.map((r) => [
    name,
    weights,
    `${r.batch} x (${r.promptLen} + ${r.newTokens})`,
    r.way,
    r.ms,
    r.prefillGpuMs ?? '-',
    r.decodeGpuMs ?? '-',
    r.dispatches,
    r.way === 'tfjs' ? '' : `${(tfjs.ms / r.ms).toFixed(2)}x`,
  ]);
}

/** One side of the planned GEMM A/B: wall ms of a prefill (a generate of one token) and per decode token. */
export interface PlannedGemmResult extends DecodeBenchCase {
  gemm: 'tiled' | 'gemv';
  prefillMs: number;
  msPerToken: number;
}

/**
 * The planned path with its projections of 32 rows or more on the tiled GEMM and on the GEMV
 * kernels (EngineOptions.plannedGemm), in the same run on the same weights, the two sides
 * alternated rep by rep: prefill wall ms (generate of 1 token: the prefill and one draw) and decode
 * ms per token ((1 + steps tokens) - (1 token), over steps); medians. [tiled, gemv].
 */
export async function benchPlannedGemm(model: LlamaModel, c: DecodeBenchCase): Promise<PlannedGemmResult[]> {
  const { decodePath, plannedGemm } = engineOptions();
  const sides = ['tiled', 'gemv'] as const;
  const ps = benchPrompts(model, c);
  const opts = { temperature: 1, seed: 1 };
  const wall = async (n: number) => {
    const t0 = performance.now();
    await generate(model, ps, { ...opts, maxNewTokens: n });
    return performance.now() - t0;
  };
  setEngineOptions({ decodePath: 'planned' });
  try {
    const pre = sides.map(() => [] as number[]);
    const tok = sides.map(() => [] as number[]);
    for (const g of sides) {
      setEngineOptions({ plannedGemm: g });
      await wall(c.steps + 1); // warm-up: shaders, plan
    }
    for (let r = 0; r < c.reps; r++)
      for (const [i, g] of sides.entries()) {
        setEngineOptions({ plannedGemm: g });
        const one = await wall(1);
        const many = await wall(1 + c.steps);
        pre[i].push(one);
        tok[i].push((many - one) / c.steps);
      }
    return sides.map((gemm, i) => ({ ...c, gemm, prefillMs: median(pre[i]), msPerToken: median(tok[i]) }));
  } finally {
    setEngineOptions({ decodePath, plannedGemm });
  }
}

export const PLANNED_GEMM_HEADER = [
  'model',
  'weights',
  'shape',
  'planned GEMM',
  'prefill ms',
  'ms/token',
  'gemv / tiled',
];

export function plannedGemmRows(name: string, fmt: string, r: PlannedGemmResult[]): (string | number)[][] {
  const gemv = r.find((x) => x.gemm === 'gemv')!;
  return r.map((x) => [
    name,
    fmt,
    `${x.batch} x (${x.promptLen} + ${x.steps})`,
    x.gemm,
    x.prefillMs,
    x.msPerToken,
    x.gemm === 'tiled'
      ? `prefill ${(gemv.prefillMs / x.prefillMs).toFixed(2)}x, decode ${(gemv.msPerToken / x.msPerToken).toFixed(2)}x`
      : '-',
  ]);
}
