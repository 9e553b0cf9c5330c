// Decode on the planned path beside the tfjs op-by-op path, in the same run on the same weights:
// tokens/s, dispatches per token, host milliseconds per token and weight bytes streamed per
// second. Host time is the wall time less the time spent waiting for readbacks (mapAsync), so it
// is the CPU time spent encoding and submitting, on either path.
import { generate } from './generate';
import type { LlamaModel } from './llama';
import { PROJ_NAMES } from './llama';
import { decodePath, plannedDispatches, setDecodePath, takePlannedGpuMs, type DecodePath } from './plannedDecode';
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

interface Counters {
  dispatches: number;
  waitMs: number;
}

/** Counts dispatches and readback waits of whatever runs inside fn (both paths go through these). */
async function counted(fn: () => Promise<unknown>): Promise<Counters & { ms: number; gpuMs: number }> {
  const c: Counters = { dispatches: 0, waitMs: 0 };
  const pass = GPUComputePassEncoder.prototype;
  const buf = GPUBuffer.prototype;
  const dispatch = pass.dispatchWorkgroups;
  const map = buf.mapAsync;
  pass.dispatchWorkgroups = function (this: GPUComputePassEncoder, ...a: Parameters<typeof dispatch>) {
    c.dispatches++;
    return dispatch.apply(this, a);
  };
  buf.mapAsync = async function (this: GPUBuffer, ...a: Parameters<typeof map>) {
    const t0 = performance.now();
    try {
      return await map.apply(this, a);
    } finally {
      c.waitMs += performance.now() - t0;
    }
  };
  takePlannedGpuMs();
  const t0 = performance.now();
  try {
    await fn();
  } finally {
    pass.dispatchWorkgroups = dispatch;
    buf.mapAsync = map;
  }
  return { ...c, ms: performance.now() - t0, gpuMs: takePlannedGpuMs() };
}

export function decodeWeightBytes(model: LlamaModel): number {
  let bytes = model.lmHead.weight.bytes;
  for (const l of model.layers) for (const p of PROJ_NAMES) bytes += l[p].weight.bytes;
  return bytes;
}

function benchPrompts(model: LlamaModel, c: DecodeBenchCase): number[][] {
  const V = model.config.vocabSize;
  return Array.from({ length: c.batch }, (_, b) => Array.from({ length: c.promptLen }, (_, t) => (7 + 31 * t + 101 * b) % V));
}

/** One path: per-token figures from (1 + steps tokens) - (1 token), medians over reps. */
async function benchPath(model: LlamaModel, c: DecodeBenchCase, path: DecodePath): Promise<DecodeBenchResult> {
  const before = decodePath();
  setDecodePath(path);
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
      host.push((many.ms - many.waitMs - (one.ms - one.waitMs)) / c.steps);
      disp.push((many.dispatches - one.dispatches) / c.steps);
      gpu.push((many.gpuMs - one.gpuMs) / c.steps);
    }
    const msPerToken = Math.max(median(wall), 1e-6);
    return {
      ...c,
      path,
      tokPerS: (c.batch / msPerToken) * 1000,
      msPerToken,
      hostMsPerToken: median(host),
      gpuMsPerToken: path === 'planned' && median(gpu) > 0 ? median(gpu) : null,
      dispatchesPerToken: median(disp),
      weightGBps: decodeWeightBytes(model) / (msPerToken / 1000) / 1e9,
    };
  } finally {
    setDecodePath(before);
  }
}

/** Both paths on one case: [planned, tfjs]. */
export async function benchDecodePaths(model: LlamaModel, c: DecodeBenchCase): Promise<[DecodeBenchResult, DecodeBenchResult]> {
  return [await benchPath(model, c, 'planned'), await benchPath(model, c, 'tfjs')];
}

export const DECODE_BENCH_HEADER = ['model', 'weights', 'batch', 'path', 'decode tok/s', 'ms/token', 'host ms/token', 'GPU ms/token', 'dispatches/token', 'weight GB/s', 'speed-up', 'host ratio'];

export function decodeBenchRows(name: string, weights: string, [planned, tfjs]: [DecodeBenchResult, DecodeBenchResult]): (string | number)[][] {
  const row = (r: DecodeBenchResult, speed: string, hostRatio: string) => [name, weights, r.batch, r.path, r.tokPerS, r.msPerToken, r.hostMsPerToken, r.gpuMsPerToken ?? '-', r.dispatchesPerToken, r.weightGBps, speed, hostRatio];
  return [
    row(planned, `${(planned.tokPerS / tfjs.tokPerS).toFixed(2)}x`, `${(tfjs.hostMsPerToken / Math.max(planned.hostMsPerToken, 1e-6)).toFixed(1)}x lower`),
    row(tfjs, '', ''),
  ];
}

/** Planned dispatch counts of a model at a batch (reported beside the measured ones). */
export function plannedBudget(model: LlamaModel, batch: number) {
  return plannedDispatches(model, batch, 64);
}
