// GPU memory a piece of work needs, on either path (benchmarks: the learn step's peak memory).
// Two parts, measured separately because they are held differently:
// - buffers created outside tfjs's pool and still alive at the end (a plan's buffers, a planned
//   optimiser's state): created once, held for as long as their plan lives;
// - tfjs's own high-water mark: the most bytes its buffer manager had handed out at once (tensors
//   in use, uniforms awaiting their submit), above what it had handed out at the start. Sampled on
//   every acquire, so it is exact, not a periodic sample; freed-but-pooled buffers are not counted.
import * as tf from '@tensorflow/tfjs';

/** The part of tfjs-backend-webgpu's BufferManager read here. */
export interface PoolLike {
  numBytesUsed: number;
  acquireBuffer(...a: unknown[]): GPUBuffer;
}

/** tfjs's webgpu buffer manager, or null on another backend. */
export function tfjsBufferManager(): PoolLike | null {
  if (tf.getBackend() !== 'webgpu') return null;
  return (tf.backend() as unknown as { bufferManager?: PoolLike }).bufferManager ?? null;
}

/** Runs fn with the pool's acquireBuffer wrapped: the in-use high-water mark above the start. */
export async function tfjsHighWater<T>(
  fn: () => Promise<T>,
  pool: PoolLike | null = tfjsBufferManager(),
): Promise<{ result: T; bytes: number | null }> {
  if (!pool) return { result: await fn(), bytes: null };
  const start = pool.numBytesUsed;
  let peak = start;
  const own = Object.prototype.hasOwnProperty.call(pool, 'acquireBuffer');
  const acquire = pool.acquireBuffer;
  pool.acquireBuffer = function (this: PoolLike, ...a: unknown[]) {
    const b = acquire.apply(this, a);
    if (this.numBytesUsed > peak) peak = this.numBytesUsed;
    return b;
  };
  try {
    const result = await fn();
    return { result, bytes: peak - start };
  } finally {
    if (own) pool.acquireBuffer = acquire;
    else delete (pool as Partial<PoolLike>).acquireBuffer;
  }
}

/**
 * Runs fn counting the bytes of GPU buffers it creates outside tfjs's pool (`pool`'s acquireBuffer)
 * that are not destroyed by its end: what a plan or a planned optimiser built by fn holds.
 */
export async function heldBuffersCreated<T>(
  fn: () => Promise<T>,
  pool: PoolLike | null = tfjsBufferManager(),
): Promise<{ result: T; bytes: number }> {
  const dev = GPUDevice.prototype;
  const buf = GPUBuffer.prototype;
  const create = dev.createBuffer;
  const destroy = buf.destroy;
  const live = new Map<GPUBuffer, number>();
  let inPool = 0;
  dev.createBuffer = function (this: GPUDevice, d: GPUBufferDescriptor) {
    const b = create.call(this, d);
    if (inPool === 0) live.set(b, d.size);
    return b;
  };
  buf.destroy = function (this: GPUBuffer) {
    live.delete(this);
    return destroy.call(this);
  };
  const own = pool && Object.prototype.hasOwnProperty.call(pool, 'acquireBuffer');
  const acquire = pool?.acquireBuffer;
  if (pool && acquire) {
    pool.acquireBuffer = function (this: PoolLike, ...a: unknown[]) {
      inPool++;
      try {
        return acquire.apply(this, a);
      } finally {
        inPool--;
      }
    };
  }
  try {
    const result = await fn();
    return { result, bytes: [...live.values()].reduce((s, n) => s + n, 0) };
  } finally {
    dev.createBuffer = create;
    buf.destroy = destroy;
    if (pool && acquire) {
      if (own) pool.acquireBuffer = acquire;
      else delete (pool as Partial<PoolLike>).acquireBuffer;
    }
  }
}
