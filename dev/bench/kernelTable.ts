// The kernel benchmark table: each kernel beside stock tfjs ops, and against the adapter's
// roofline as measured by the benchmark's own probe rows (a stream read and a large matmul).
import type { KernelBenchRow } from '../harness/harnessApi';
import { formatTable } from './table';

/** Kernel rows against the adapter's measured roofline rows (bytes / ms and flops / ms, GPU ms first). */
export function kernelTable(rows: KernelBenchRow[]): string {
  const best = (kind: 'stream' | 'matmul', per: (r: KernelBenchRow) => number) =>
    Math.max(0, ...rows.filter((r) => r.roofline === kind).map(per));
  // Throughput from the GPU's own clock where the adapter has timestamp queries: on a fast GPU
  // the wall time of one small kernel is mostly submission and readback latency.
  const ms = (r: KernelBenchRow) => r.oursGpuMs || r.oursMs;
  const gbs = (r: KernelBenchRow) => r.bytes / ms(r) / 1e6;
  const gflops = (r: KernelBenchRow) => (r.flops ?? 0) / ms(r) / 1e6;
  const peakGbs = best('stream', gbs);
  const peakGflops = best('matmul', gflops);
  const pct = (x: number, peak: number) => (peak > 0 && x > 0 ? `${((100 * x) / peak).toFixed(0)}%` : '');
  const gpu = (ms: number | undefined) => (ms === undefined ? '' : ms);
  return formatTable(
    [
      'kernel',
      'shape',
      'ours ms',
      'stock ms',
      'speed-up',
      'ours GPU ms',
      'stock GPU ms',
      'GB/s',
      '% stream',
      'GFLOP/s',
      '% matmul',
    ],
    rows.map((k) => [
      k.name,
      k.shape,
      k.oursMs,
      k.roofline ? '' : k.stockMs,
      k.roofline ? '' : `${(k.stockMs / k.oursMs).toFixed(2)}x`,
      gpu(k.oursGpuMs),
      k.roofline ? '' : gpu(k.stockGpuMs),
      k.roofline === 'matmul' ? '' : gbs(k),
      k.roofline === 'matmul' ? '' : pct(gbs(k), peakGbs),
      k.flops ? gflops(k) : '',
      k.flops ? pct(gflops(k), peakGflops) : '',
    ]),
  );
}
