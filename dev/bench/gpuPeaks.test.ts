import { describe, expect, it } from 'vitest';
import { GPU_PEAKS, peakFor, percentOf } from './gpuPeaks';

describe('published GPU peaks by adapter description', () => {
  it('names the H100 and H200 parts as their drivers report them, the specific form factor first', () => {
    // nvidia-smi / Vulkan device names of the parts.
    expect(peakFor('NVIDIA H100 80GB HBM3')?.name).toBe('NVIDIA H100 SXM');
    expect(peakFor('NVIDIA H100 PCIe')?.name).toBe('NVIDIA H100 PCIe');
    expect(peakFor('NVIDIA H100 NVL')?.name).toBe('NVIDIA H100 NVL');
    expect(peakFor('NVIDIA H200')?.name).toBe('NVIDIA H200 SXM');
    expect(peakFor('NVIDIA H200 NVL')?.name).toBe('NVIDIA H200 NVL');
    expect(peakFor('NVIDIA A100-SXM4-80GB')?.name).toBe('NVIDIA A100 80GB SXM');
    expect(peakFor('NVIDIA A100 80GB PCIe')?.name).toBe('NVIDIA A100 80GB PCIe');
    expect(peakFor('NVIDIA A100-PCIE-40GB')?.name).toBe('NVIDIA A100 40GB');
    expect(peakFor('NVIDIA L4')?.name).toBe('NVIDIA L4');
    expect(peakFor('NVIDIA L40S')?.name).toBe('NVIDIA L40S');
  });

  it('the datasheet figures: H100 SXM 3.35 TB/s and 67 TFLOP/s f32, H100 PCIe 2.0 TB/s and 51, H200 4.8 TB/s and 67', () => {
    expect(peakFor('NVIDIA H100 80GB HBM3')).toMatchObject({ bandwidthGBps: 3350, f32Gflops: 67_000 });
    expect(peakFor('NVIDIA H100 PCIe')).toMatchObject({ bandwidthGBps: 2000, f32Gflops: 51_000 });
    expect(peakFor('NVIDIA H200')).toMatchObject({ bandwidthGBps: 4800, f32Gflops: 67_000 });
  });

  it('no peak for a software adapter or an unknown GPU; every row names a source', () => {
    expect(peakFor('SwiftShader Device (Subzero) (0x0000C0DE)')).toBeNull();
    expect(peakFor('llvmpipe (LLVM 19.1.7, 256 bits)')).toBeNull();
    expect(peakFor('AMD Radeon Pro W7900')).toBeNull();
    expect(peakFor('NVIDIA T400')).toBeNull(); // not a T4
    for (const [, p] of GPU_PEAKS) {
      expect(p.source.length).toBeGreaterThan(10);
      expect(p.bandwidthGBps).toBeGreaterThan(0);
      expect(p.f32Gflops).toBeGreaterThan(0);
    }
  });

  it('percentOf: the share of a peak, or - without one', () => {
    expect(percentOf(1675, 3350)).toBe('50.0%');
    expect(percentOf(10, null)).toBe('-');
  });
});
