// Reads this context's WebGPU adapter into a GpuProbe (the plain record in contract/gpuProbe.ts).
import { describeAdapter, unavailableProbe, type AdapterLike, type GpuProbe } from '../contract/gpuProbe';

/** Probe the WebGPU adapter of this context (window or worker). Never throws. */
export async function probeWebGPU(gpu: GPU | undefined = globalThis.navigator?.gpu): Promise<GpuProbe> {
  if (!gpu) return unavailableProbe('navigator.gpu is missing: this browser or context has no WebGPU');
  try {
    const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
    if (!adapter) return unavailableProbe('requestAdapter() returned no adapter (GPU blocklisted or disabled)');
    return describeAdapter(adapter as unknown as AdapterLike);
  } catch (err) {
    return unavailableProbe(`requestAdapter() failed: ${(err as Error).message}`);
  }
}
