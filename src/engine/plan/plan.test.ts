import { describe, expect, it } from 'vitest';
import { checkPlanBuffers } from './plan';

describe('checkPlanBuffers: a plan the device cannot hold is refused before any buffer is made', () => {
  const limits = { maxBinding: 1000, maxBuffer: 4000, budget: null };
  const fix = 'lower the batch';

  it('names the first buffer over the binding limit, its size and where the size comes from', () => {
    const buffers = [
      { name: 'work', bytes: 800 },
      { name: 'k0', bytes: 1200, size: 'batch 3 x capacity 100 x 4' },
      { name: 'k1', bytes: 1200 },
    ];
    expect(() => checkPlanBuffers('decode plan', buffers, limits, fix)).toThrow(
      'decode plan: buffer "k0" needs 1200 bytes (0.0 MiB: batch 3 x capacity 100 x 4), over the storage binding limit of 1000 bytes; lower the batch',
    );
  });

  it("says maxBufferSize where a buffer is over the device's buffer limit too", () => {
    expect(() => checkPlanBuffers('p', [{ name: 'v0', bytes: 5000 }], limits, fix)).toThrow(
      /buffer "v0" needs 5000 bytes .*over the device's buffer limit \(maxBufferSize\) of 4000 bytes/,
    );
  });

  it('over a budget: the total, the budget and the largest buffer; within it and the limits: nothing', () => {
    const buffers = [
      { name: 'a', bytes: 300 },
      { name: 'b', bytes: 900, size: 'the big one' },
      { name: 'c', bytes: 500 },
    ];
    expect(() => checkPlanBuffers('p', buffers, { ...limits, budget: 1500 }, fix)).toThrow(
      'p: its buffers need 1700 bytes (0.0 MiB), over the memory budget of 1500 bytes (0.0 MiB); the largest is "b" of 900 bytes (the big one); lower the batch',
    );
    expect(() => checkPlanBuffers('p', buffers, { ...limits, budget: 1700 }, fix)).not.toThrow();
    expect(() => checkPlanBuffers('p', buffers, limits, fix)).not.toThrow();
  });
});
