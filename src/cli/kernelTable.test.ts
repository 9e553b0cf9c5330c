import { describe, expect, it } from 'vitest';
import { kernelTable } from './kernelTable';

describe('kernelTable', () => {
  it('puts each kernel against the measured stream and matmul rooflines', () => {
    const table = kernelTable([
      // 64e6 bytes in 4 ms = 16 GB/s; 2e9 flop in 10 ms = 200 GFLOP/s.
      { name: 'roofline: stream read (sum)', shape: 'n', oursMs: 4, stockMs: 4, bytes: 64e6, roofline: 'stream' },
      { name: 'roofline: matmul', shape: 'm', oursMs: 10, stockMs: 10, bytes: 0, flops: 2e9, roofline: 'matmul' },
      // 8e6 bytes in 2 ms = 4 GB/s = 25% of 16; 1e8 flop in 2 ms = 50 GFLOP/s = 25% of 200; 6/2 = 3x.
      { name: 'k', shape: 's', oursMs: 2, stockMs: 6, bytes: 8e6, flops: 1e8, oursGpuMs: 1.5, stockGpuMs: 5 },
    ]);
    const lines = table.split('\n');
    expect(lines[0]).toMatch(/kernel .*% stream .*% matmul/);
    const cells = lines[4].trim().split(/\s{2,}/);
    expect(cells).toEqual(['k', 's', '2', '6', '3.00x', '1.50', '5', '4', '25%', '50', '25%']);
    // Roofline rows are 100% of themselves and have no speed-up.
    expect(lines[2]).toMatch(/\s16\s+100%/);
    expect(lines[2]).not.toMatch(/x\s/);
  });
});
