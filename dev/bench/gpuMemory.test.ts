import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { heldBuffersCreated, tfjsHighWater, type PoolLike } from './gpuMemory';

// Stand-ins for the WebGPU classes the counters wrap (Node has none).
class FakeBuffer {
  destroyed = false;
  constructor(readonly size: number) {}
  destroy() {
    this.destroyed = true;
  }
}
class FakeDevice {
  createBuffer(d: { size: number }) {
    return new FakeBuffer(d.size);
  }
}
/** A pool like tfjs's: reuses a free buffer of the same size, counts bytes handed out. */
class FakePool implements PoolLike {
  numBytesUsed = 0;
  free: FakeBuffer[] = [];
  constructor(private readonly device: FakeDevice) {}
  acquireBuffer(size: unknown) {
    const i = this.free.findIndex((b) => b.size === size);
    const b = i >= 0 ? this.free.splice(i, 1)[0] : this.device.createBuffer({ size: size as number });
    this.numBytesUsed += b.size;
    return b as unknown as GPUBuffer;
  }
  release(b: GPUBuffer) {
    this.numBytesUsed -= b.size;
    this.free.push(b as unknown as FakeBuffer);
  }
}

const g = globalThis as Record<string, unknown>;
beforeAll(() => {
  g.GPUDevice = FakeDevice;
  g.GPUBuffer = FakeBuffer;
});
afterAll(() => {
  delete g.GPUDevice;
  delete g.GPUBuffer;
});

describe('GPU memory counters', () => {
  it('tfjs high-water: the most bytes in use at once above the start, not the sum acquired', async () => {
    const pool = new FakePool(new FakeDevice());
    const held = pool.acquireBuffer(1000); // in use before: not counted
    const { bytes } = await tfjsHighWater(async () => {
      const a = pool.acquireBuffer(100);
      const b = pool.acquireBuffer(300); // 400 in use
      pool.release(a);
      pool.release(b);
      const c = pool.acquireBuffer(100); // reused: 100 in use
      const d = pool.acquireBuffer(200); // 300
      pool.release(c);
      pool.release(d);
    }, pool);
    expect(bytes).toBe(400);
    expect(pool.numBytesUsed).toBe(1000);
    pool.release(held);
    // The wrapper is gone after the call: acquiring no longer moves a mark.
    expect(Object.prototype.hasOwnProperty.call(pool, 'acquireBuffer')).toBe(false);
  });

  it('held buffers: created outside the pool and alive at the end, pool buffers and destroyed ones left out', async () => {
    const device = new FakeDevice();
    const pool = new FakePool(device);
    const { bytes } = await heldBuffersCreated(async () => {
      const plan = [device.createBuffer({ size: 64 }), device.createBuffer({ size: 256 })];
      const scratch = device.createBuffer({ size: 4096 });
      scratch.destroy();
      pool.acquireBuffer(512);
      return plan;
    }, pool);
    expect(bytes).toBe(320);
    expect(FakeDevice.prototype.createBuffer.name).toBe('createBuffer');
  });

  it('no pool (another backend): no high-water figure', async () => {
    expect((await tfjsHighWater(async () => 1, null)).bytes).toBeNull();
  });
});
