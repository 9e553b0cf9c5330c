// Binding-size limits of the active WebGPU device, and row chunking that keeps every storage
// binding a kernel touches under them (DESIGN: plan for a 128 MiB binding floor).
import { isWebGPUBackend, webgpuDevice } from './wgslProgram';
import { engineOptions } from '../options';

/** WebGPU's guaranteed minimum for maxStorageBufferBindingSize. */
export const BINDING_FLOOR = 128 * 2 ** 20;

/** The device's storage binding limit, or EngineOptions.bindingLimit where set (tests, or a cautious setting). */
export function maxBindingBytes(): number {
  const override = engineOptions().bindingLimit;
  if (override !== null) return override;
  return isWebGPUBackend() ? webgpuDevice().limits.maxStorageBufferBindingSize : BINDING_FLOOR;
}

/** Split `rows` rows of `bytesPerRow` into the fewest equal-ish chunks that each fit `limit`. */
export function rowChunks(rows: number, bytesPerRow: number, limit = maxBindingBytes()): number[] {
  const perChunk = Math.floor(limit / bytesPerRow);
  if (perChunk < 1) throw new Error(`one row of ${bytesPerRow} bytes exceeds the ${limit}-byte storage binding limit`);
  if (rows <= perChunk) return [rows];
  const n = Math.ceil(rows / perChunk);
  const base = Math.floor(rows / n);
  return Array.from({ length: n }, (_, i) => base + (i < rows % n ? 1 : 0));
}

/**
 * Threads per workgroup for a one-workgroup-per-row reduction over `width` values: a power of two
 * giving each thread at least `perThread` values, between 32 and 256. Small rows (a sandbox
 * vocabulary of a few hundred) then pay for far fewer idle threads at every barrier, which on
 * a software adapter costs more than the arithmetic.
 */
export function rowWorkgroupSize(width: number, perThread = 16): number {
  let wg = 32;
  while (wg < 256 && wg * perThread < width) wg *= 2;
  return wg;
}
