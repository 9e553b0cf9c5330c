import { describe, expect, it } from 'vitest';
import { BINDING_FLOOR, maxBindingBytes, rowChunks, rowWorkgroupSize } from './limits';
import { setEngineOptions } from '../options';

describe('binding limits', () => {
  it('uses the 128 MiB floor off WebGPU, and an override when set', () => {
    expect(maxBindingBytes()).toBe(BINDING_FLOOR);
    setEngineOptions({ bindingLimit: 1000 });
    expect(maxBindingBytes()).toBe(1000);
    setEngineOptions({ bindingLimit: null });
    expect(maxBindingBytes()).toBe(BINDING_FLOOR);
  });

  it('splits rows into the fewest balanced chunks under the limit', () => {
    // 10 rows of 100 bytes under 350 bytes: at most 3 rows a chunk -> 4 chunks of 3,3,2,2.
    expect(rowChunks(10, 100, 350)).toEqual([3, 3, 2, 2]);
    expect(rowChunks(3, 100, 350)).toEqual([3]);
    // A 151,936-entry f32 row is 607,744 bytes: 256 rows need 2 chunks under 128 MiB.
    expect(rowChunks(256, 151936 * 4, BINDING_FLOOR)).toEqual([128, 128]);
    expect(() => rowChunks(1, 500, 100)).toThrow(/exceeds the 100-byte/);
  });
});

describe('row workgroup size', () => {
  it('gives each thread at least 16 values, as a power of two in [32, 256]', () => {
    expect(rowWorkgroupSize(64)).toBe(32); // the fixture's vocabulary
    expect(rowWorkgroupSize(512)).toBe(32); // 32 x 16 = 512 already
    expect(rowWorkgroupSize(513)).toBe(64);
    expect(rowWorkgroupSize(3000)).toBe(256); // 128 x 16 = 2048 < 3000
    expect(rowWorkgroupSize(151936)).toBe(256);
  });
});
