// Which CPU Vulkan driver the Dawn e2e files run on, and which kernel variants: SwiftShader with
// the adapter's own variants by default; the lavapipe lane (e2e/vitest.lavapipe.config.ts, run by
// .ci/run) sets SPARRING_VULKAN=lavapipe and SPARRING_KERNELS=gpu, so the GPU kernels (split-K
// GEMVs, workgroup attention) run on a driver that executes workgroups as SIMD lanes with
// subgroups of 8 and offers shader-f16, the nearest CI has to a GPU.
import { parseKernelVariants, parseVulkanDriver, startDawn, useKernelVariants } from '../src/cli/node/dawn';
import type { KernelVariants } from '../src/engine/index';

export const laneVulkan = parseVulkanDriver(process.env.SPARRING_VULKAN ?? 'swiftshader');
export const laneKernels: KernelVariants = parseKernelVariants(process.env.SPARRING_KERNELS ?? 'auto');

/** Starts Dawn on the lane's driver with the lane's kernel variants; returns the adapter's description. */
export async function startLaneDawn(): Promise<string> {
  const adapter = await startDawn({ vulkan: laneVulkan });
  useKernelVariants(laneKernels);
  return adapter;
}

/** The CLI flags that select the lane's driver and kernels (`npm run lab -- ... --backend webgpu`). */
export const laneCliFlags = ['--vulkan', laneVulkan, '--kernels', laneKernels];
