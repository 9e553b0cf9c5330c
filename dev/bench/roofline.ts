// The adapter's measured roofline, in the same run as the benchmark that is read against it:
// - matmul: a large square f32 product C = A B (n x n x n, 2 n^3 FLOPs) by each GEMM the engine
//   has, the learning plan's own kernel in both layouts (learnKernels' gemmKernel: direct, what
//   the planned step runs on software adapters, and tiled, on GPUs) and tfjs's matMul (what the
//   tfjs path runs); the fastest is the roofline.
// - stream: x * 2 over 16M floats (64 MiB read, 64 MiB written) by tfjs, the bytes an elementwise
//   pass moves per second.
// Each is the median over reps after a warm-up, timed by timestamp queries around the pass where
// the device has them ("GPU"), else by wall time from submit to onSubmittedWorkDone ("wall").
// Where the adapter is a GPU with published figures (dev/bench/gpuPeaks.ts), each row also reads
// as a share of that peak: how far the project's own roofline is from the hardware's.
import * as tf from '@tensorflow/tfjs';
import { webgpuDevice } from '../../src/engine/webgpu/wgslProgram';
import { gemmKernel, gemmWorkgroups, packGemm, type GemmLayout } from '../../src/engine/plan/learnKernels';
import { GpuPlan } from '../../src/engine/plan/plan';
import { flushTfjs } from '../../src/engine/plan/tfjsInterop';
import { peakFor, percentOf, type GpuPeak } from './gpuPeaks';

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export interface RooflineRow {
  name: string;
  shape: string;
  ms: number;
  /** How ms was taken: timestamp queries ('GPU') or submit-to-done wall time ('wall'). */
  clock: 'GPU' | 'wall';
  /** GFLOP/s for a matmul, GB/s for the stream. */
  rate: number;
  unit: 'GFLOP/s' | 'GB/s';
}

export interface Roofline {
  rows: RooflineRow[];
  /** The faster GEMM's GFLOP/s. */
  matmulGflops: number;
  streamGBps: number;
  /** The adapter's published peak, where dev/bench/gpuPeaks.ts knows it. */
  peak: GpuPeak | null;
}

/** The device's adapter description as Dawn and Chromium give it (vendor, architecture, description). */
export function adapterDescription(device: GPUDevice): string {
  const i = (device as GPUDevice & { adapterInfo?: GPUAdapterInfo }).adapterInfo;
  return i ? `${i.vendor} ${i.architecture} ${i.description}`.replace(/\s+/g, ' ').trim() : '';
}

/** Median ms of `run` (which encodes and submits its work) after a warm-up; GPU time where the device times passes. */
async function timeSubmitted(
  reps: number,
  run: (timestamps?: GPUComputePassTimestampWrites) => void,
): Promise<{ ms: number; clock: 'GPU' | 'wall' }> {
  const device = webgpuDevice();
  const timed = device.features.has('timestamp-query');
  const set = timed ? device.createQuerySet({ type: 'timestamp', count: 2 }) : null;
  const resolve = timed
    ? device.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC })
    : null;
  const read = timed
    ? device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST })
    : null;
  try {
    const once = async (): Promise<number> => {
      const t0 = performance.now();
      run(set ? { querySet: set, beginningOfPassWriteIndex: 0, endOfPassWriteIndex: 1 } : undefined);
      if (set && resolve && read) {
        const enc = device.createCommandEncoder();
        enc.resolveQuerySet(set, 0, 2, resolve, 0);
        enc.copyBufferToBuffer(resolve, 0, read, 0, 16);
        device.queue.submit([enc.finish()]);
        await read.mapAsync(GPUMapMode.READ);
        const t = new BigUint64Array(read.getMappedRange().slice(0));
        read.unmap();
        return Number(t[1] - t[0]) / 1e6;
      }
      await device.queue.onSubmittedWorkDone();
      return performance.now() - t0;
    };
    await once();
    const ms: number[] = [];
    for (let r = 0; r < reps; r++) ms.push(await once());
    return { ms: median(ms), clock: timed ? 'GPU' : 'wall' };
  } finally {
    set?.destroy();
    resolve?.destroy();
    read?.destroy();
  }
}

/** The learning plan's GEMM kernel (either layout) on an n x n x n f32 product. */
async function planGemm(n: number, reps: number, layout: GemmLayout): Promise<RooflineRow> {
  const device = webgpuDevice();
  const plan = new GpuPlan(device, 1, 'roofline gemm');
  try {
    const fill = (name: string, seed: number) => {
      const b = plan.buffer(name, n * n * 4);
      const x = new Float32Array(n * n);
      for (let i = 0; i < x.length; i++) x[i] = (((i * 2654435761 + seed) >>> 0) % 2001) / 1000 - 1;
      device.queue.writeBuffer(b, 0, x);
      return b;
    };
    const a = fill('A', 1);
    const b = fill('B', 2);
    const c = plan.buffer('C', n * n * 4);
    const dummy = plan.buffer('dummy', 16);
    const op = { off: 0, s0: n, s1: 1 };
    plan.add(
      'mm',
      gemmKernel('buf', 0, layout),
      [
        { uniform: packGemm({ M: n, N: n, K: n, a: op, b: op, c: op }) },
        { buffer: a },
        { buffer: b },
        { buffer: c },
        { buffer: dummy },
        { buffer: dummy },
      ],
      gemmWorkgroups(n, n),
    );
    plan.finalize();
    const t = await timeSubmitted(reps, (timestampWrites) => {
      const enc = device.createCommandEncoder();
      const pass = enc.beginComputePass(timestampWrites ? { timestampWrites } : undefined);
      plan.encode(pass, 'mm', 0);
      pass.end();
      device.queue.submit([enc.finish()]);
    });
    return {
      name: `matmul, learn plan GEMM (${layout})`,
      shape: `${n}^3`,
      ...t,
      rate: (2 * n ** 3) / (t.ms / 1000) / 1e9,
      unit: 'GFLOP/s',
    };
  } finally {
    plan.dispose();
  }
}

interface TimedBackend {
  supportTimestampQuery?: boolean;
}

/** A tfjs op's median time: tf.time's kernel ms where tfjs has timestamps, else submit-to-done wall time. */
async function tfjsTime(reps: number, fn: () => tf.Tensor): Promise<{ ms: number; clock: 'GPU' | 'wall' }> {
  const gpu = (tf.backend() as unknown as TimedBackend).supportTimestampQuery === true;
  const device = webgpuDevice();
  const once = async (): Promise<number> => {
    if (gpu) {
      let out: tf.Tensor | null = null;
      const info = await tf.time(() => {
        out = fn();
      });
      (out as tf.Tensor | null)?.dispose();
      if (typeof info.kernelMs === 'number') return info.kernelMs;
    }
    const t0 = performance.now();
    const out = fn();
    flushTfjs();
    await device.queue.onSubmittedWorkDone();
    const ms = performance.now() - t0;
    out.dispose();
    return ms;
  };
  await once();
  const ms: number[] = [];
  for (let r = 0; r < reps; r++) ms.push(await once());
  return { ms: median(ms), clock: gpu ? 'GPU' : 'wall' };
}

/**
 * The matmul roofline (both GEMMs on an n^3 f32 product) and the stream roofline (x * 2 over
 * `streamFloats` floats), medians of `reps`. Needs the webgpu backend.
 */
export async function measureRoofline(n: number, reps: number, streamFloats = 16 * 2 ** 20): Promise<Roofline> {
  const rows: RooflineRow[] = [await planGemm(n, reps, 'direct'), await planGemm(n, reps, 'tiled')];
  const [a, b] = [tf.randomUniform([n, n], -1, 1, 'float32', 2), tf.randomUniform([n, n], -1, 1, 'float32', 3)];
  try {
    const t = await tfjsTime(reps, () => tf.matMul(a, b));
    rows.push({
      name: 'matmul, tfjs matMul',
      shape: `${n}^3`,
      ...t,
      rate: (2 * n ** 3) / (t.ms / 1000) / 1e9,
      unit: 'GFLOP/s',
    });
  } finally {
    tf.dispose([a, b]);
  }
  const x = tf.randomUniform([streamFloats], -1, 1, 'float32', 1);
  try {
    const t = await tfjsTime(reps, () => tf.mul(x, 2));
    rows.push({
      name: 'stream, tfjs x * 2',
      shape: `${streamFloats}`,
      ...t,
      rate: (2 * streamFloats * 4) / (t.ms / 1000) / 1e9,
      unit: 'GB/s',
    });
  } finally {
    x.dispose();
  }
  const mm = rows.filter((r) => r.unit === 'GFLOP/s');
  return {
    rows,
    matmulGflops: Math.max(...mm.map((r) => r.rate)),
    streamGBps: rows.find((r) => r.unit === 'GB/s')!.rate,
    peak: peakFor(adapterDescription(webgpuDevice())),
  };
}

export const ROOFLINE_HEADER = ['roofline', 'shape', 'ms', 'clock', 'rate', 'unit', '% of peak'];
/** Rows of the measured roofline, each as a share of the published peak (f32 or bandwidth) where known. */
export const rooflineRows = (r: Roofline): (string | number)[][] =>
  r.rows.map((x) => [
    x.name,
    x.shape,
    x.ms,
    x.clock,
    x.rate,
    x.unit,
    percentOf(x.rate, x.unit === 'GB/s' ? r.peak?.bandwidthGBps : r.peak?.f32Gflops),
  ]);

/** A line naming the peak the '% of peak' columns read against, or saying there is none. */
export function peakNote(r: Roofline): string {
  return r.peak
    ? `% of peak: of the ${r.peak.name}'s published ${r.peak.bandwidthGBps} GB/s and ${r.peak.f32Gflops / 1000} TFLOP/s f32 (${r.peak.source}).`
    : '% of peak: - (no published peak for this adapter: a software adapter, or a GPU dev/bench/gpuPeaks.ts does not list).';
}
