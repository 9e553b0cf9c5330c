// The Dawn e2e files' shared setup: Dawn on the lane's CPU Vulkan driver (SwiftShader, or lavapipe
// in the lavapipe lane: e2e/dawnLane.ts) before the file's tests,
// every uncaptured WebGPU error collected, none allowed at the end. `reset` puts back the engine
// options (learn path, optimiser path ...) the file's tests may leave changed.
import { afterAll, beforeAll, expect } from 'vitest';
import { startLaneDawn } from './dawnLane';
import { webgpuDevice } from '../src/engine/webgpu/wgslProgram';

export function useDawn(reset: () => void = () => {}): void {
  const gpuErrors: string[] = [];
  beforeAll(async () => {
    await startLaneDawn();
    webgpuDevice().addEventListener('uncapturederror', (e) =>
      gpuErrors.push((e as GPUUncapturedErrorEvent).error.message),
    );
  });
  afterAll(() => {
    reset();
    expect(gpuErrors).toEqual([]);
  });
}
