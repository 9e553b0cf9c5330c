// Published peaks of the GPUs a benchmark may run on: memory bandwidth and f32 (non-tensor-core)
// throughput, so a table can say "% of peak" beside "% of measured roofline" (the roofline is
// the project's own copy and GEMM kernels, which may themselves be far from the hardware). Values
// are the vendor's datasheet figures (dense, no sparsity, boost clock); each row names its source.
// Looked up by the adapter's description (Dawn reports the Vulkan device name, e.g. "NVIDIA H100
// 80GB HBM3"); the first matching row wins, so specific names (PCIe, NVL) come before the plain one.

export interface GpuPeak {
  name: string;
  /** Memory bandwidth, GB/s (10^9 bytes). */
  bandwidthGBps: number;
  /** f32 throughput without tensor cores, GFLOP/s. */
  f32Gflops: number;
  source: string;
}

const H100 = 'NVIDIA H100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h100)';
const H200 = 'NVIDIA H200 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/h200)';
const A100 = 'NVIDIA A100 Tensor Core GPU datasheet (nvidia.com/en-us/data-center/a100)';

/** [pattern over the adapter description, peak]; order matters (first match). */
export const GPU_PEAKS: readonly (readonly [RegExp, GpuPeak])[] = [
  [/H100.*PCIe/i, { name: 'NVIDIA H100 PCIe', bandwidthGBps: 2000, f32Gflops: 51_000, source: H100 }],
  [/H100.*NVL/i, { name: 'NVIDIA H100 NVL', bandwidthGBps: 3900, f32Gflops: 60_000, source: H100 }],
  // The SXM part reports itself as "NVIDIA H100 80GB HBM3" (no form factor in the name).
  [/H100/i, { name: 'NVIDIA H100 SXM', bandwidthGBps: 3350, f32Gflops: 67_000, source: H100 }],
  [/H200.*NVL/i, { name: 'NVIDIA H200 NVL', bandwidthGBps: 4800, f32Gflops: 60_000, source: H200 }],
  [/H200/i, { name: 'NVIDIA H200 SXM', bandwidthGBps: 4800, f32Gflops: 67_000, source: H200 }],
  [
    /A100.*80\s?GB.*PCIe|A100-PCIE-80GB/i,
    { name: 'NVIDIA A100 80GB PCIe', bandwidthGBps: 1935, f32Gflops: 19_500, source: A100 },
  ],
  [
    /A100.*80\s?GB|A100-SXM4-80GB/i,
    { name: 'NVIDIA A100 80GB SXM', bandwidthGBps: 2039, f32Gflops: 19_500, source: A100 },
  ],
  [/A100/i, { name: 'NVIDIA A100 40GB', bandwidthGBps: 1555, f32Gflops: 19_500, source: A100 }],
  [
    /L40S/i,
    {
      name: 'NVIDIA L40S',
      bandwidthGBps: 864,
      f32Gflops: 91_600,
      source: 'NVIDIA L40S datasheet (nvidia.com/en-us/data-center/l40s)',
    },
  ],
  [
    /\bL4\b/i,
    {
      name: 'NVIDIA L4',
      bandwidthGBps: 300,
      f32Gflops: 30_300,
      source: 'NVIDIA L4 datasheet (nvidia.com/en-us/data-center/l4)',
    },
  ],
  [
    /\bA10\b/i,
    {
      name: 'NVIDIA A10',
      bandwidthGBps: 600,
      f32Gflops: 31_200,
      source: 'NVIDIA A10 datasheet (nvidia.com/en-us/data-center/products/a10-gpu)',
    },
  ],
  [
    /\bT4\b/i,
    {
      name: 'NVIDIA T4',
      bandwidthGBps: 320,
      f32Gflops: 8_100,
      source: 'NVIDIA T4 datasheet (nvidia.com/en-us/data-center/tesla-t4)',
    },
  ],
  [
    /RTX 4090/i,
    {
      name: 'NVIDIA GeForce RTX 4090',
      bandwidthGBps: 1008,
      f32Gflops: 82_600,
      source: 'NVIDIA Ada Lovelace architecture whitepaper, v1.0 (2022), table 1',
    },
  ],
];

/** The published peak of the GPU an adapter description names, or null (software adapters, GPUs not listed). */
export function peakFor(description: string): GpuPeak | null {
  if (/swiftshader|llvmpipe|lavapipe/i.test(description)) return null;
  for (const [re, peak] of GPU_PEAKS) if (re.test(description)) return peak;
  return null;
}

/** `value` as a percentage of `peak`, or '-' without a peak. */
export function percentOf(value: number, peak: number | null | undefined): string {
  return peak ? `${((100 * value) / peak).toFixed(1)}%` : '-';
}
