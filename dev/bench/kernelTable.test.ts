import { describe, expect, it } from 'vitest';
import { kernelTable } from './kernelTable';

describe('kernelTable', () => {
  it('puts each kernel against the measured stream and matmul rooflines', () => {
    const table = kernelTable([
      // 64e6 bytes in 4 ms = 16 GB/s; 2e9 flop in 10 ms = 200 GFLOP/s.
      { name: 'roofline: stream', shape: 'n', oursMs: 4, stockMs: 4, bytes: 64e6, roofline: 'stream' },
      { name: 'roofline: matmul', shape: 'm', oursMs: 10, stockMs: 10, bytes: 0, flops: 2e9, roofline: 'matmul' },
      // Throughput from the 1.5 GPU ms: 8e6 bytes = 5.33 GB/s = 33% of 16; 1e8 flop = 66.67 GFLOP/s
      // = 33% of 200 (the rooflines have no GPU ms, so their wall ms count); 6/2 = 3x.
      { name: 'k', shape: 's', oursMs: 2, stockMs: 6, bytes: 8e6, flops: 1e8, oursGpuMs: 1.5, stockGpuMs: 5 },
    ]);
    const lines = table.split('\n');
    expect(lines[0]).toMatch(/kernel .*% stream .*% matmul/);
    const cells = lines[4].trim().split(/\s{2,}/);
    expect(cells).toEqual(['k', 's', '2', '6', '3.00x', '1.50', '5', '5.33', '33%', '66.67', '33%']);
    // Roofline rows are 100% of themselves and have no speed-up.
    expect(lines[2]).toMatch(/\s16\s+100%/);
    expect(lines[2]).not.toMatch(/x\s/);
  });
});

describe('kernelTable with GPU timestamps', () => {
  it('computes throughput from GPU ms when the row has it', () => {
    const table = kernelTable([
      { name: 'roofline: stream', shape: 'n', oursMs: 10, stockMs: 10, bytes: 100e6, oursGpuMs: 1, roofline: 'stream' },
      // 25e6 bytes over 0.5 GPU ms = 50 GB/s = 50% of the 100 GB/s stream; the 5 ms wall time is latency.
      { name: 'k', shape: 's', oursMs: 5, stockMs: 10, bytes: 25e6, oursGpuMs: 0.5, stockGpuMs: 1 },
    ]);
    const cells = table
      .split('\n')[3]
      .trim()
      .split(/\s{2,}/);
    expect(cells.slice(7, 9)).toEqual(['50', '50%']);
  });
});
