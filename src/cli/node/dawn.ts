// WebGPU in Node through Dawn (the `webgpu` npm package), with tfjs's webgpu backend on it: the
// GPU benchmark and the Node kernel tests run the lab's WGSL kernels this way. On a machine with
// no GPU a CPU Vulkan driver stands in, so the Node path is tested where CI runs, not only on a
// lent GPU machine: Chromium's SwiftShader (Debian's chromium ships it; subgroups of 4, threads run
// one after another) or Mesa's lavapipe (bookworm-backports' mesa-vulkan-drivers, Mesa 25.0:
// workgroups as SIMD lanes, subgroups of 8, shader-f16, timestamp queries; Debian 12's own Mesa
// 22.3 is refused by Dawn for lack of shaderUniform*ArrayDynamicIndexing).
import * as tf from '@tensorflow/tfjs';
import { existsSync } from 'node:fs';
import { constants } from 'node:os';
import { registerWebGPUBackend, setEngineOptions, webgpuDevice, type KernelVariants } from '../../engine/index';
import { softwareAdapterName } from '../../contract/backends';

/** Chromium's SwiftShader Vulkan driver (a CPU implementation), as Debian installs it. */
export const SWIFTSHADER_VULKAN_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';
/** Mesa's lavapipe Vulkan driver (a CPU implementation), as Debian's mesa-vulkan-drivers installs it. */
export const LAVAPIPE_VULKAN_ICD = '/usr/share/vulkan/icd.d/lvp_icd.json';
/** The Vulkan loader Chromium ships beside it (Debian's chromium does not pull in libvulkan1). */
export const CHROMIUM_VULKAN_LOADER = '/usr/lib/chromium/libvulkan.so.1';
// glibc's RTLD_NODELETE; Node's os.constants.dlopen does not list it.
const RTLD_NODELETE = 0x1000;

/**
 * Maps Chromium's Vulkan loader into this process and keeps it there, so Dawn's own
 * dlopen("libvulkan.so.1") finds it by soname on machines without the system loader.
 * process.dlopen is the one way to dlopen from Node without an addon: it loads the library, then
 * throws because it is not a Node module, and its dlclose is a no-op under RTLD_NODELETE.
 */
function preloadChromiumVulkanLoader(): void {
  if (!existsSync(CHROMIUM_VULKAN_LOADER)) return;
  try {
    process.dlopen(
      { exports: {} } as NodeJS.Module,
      CHROMIUM_VULKAN_LOADER,
      constants.dlopen.RTLD_NOW | constants.dlopen.RTLD_GLOBAL | RTLD_NODELETE,
    );
  } catch (e) {
    if (!/did not self-register/.test((e as Error).message)) throw e;
  }
}

interface DawnModule {
  create(flags: string[]): GPU;
  globals: Record<string, unknown>;
}

/** The Vulkan driver Dawn runs on: a CPU one, or whatever the machine's loader finds (its GPU). */
export type VulkanDriver = 'swiftshader' | 'lavapipe' | 'system';
export const VULKAN_DRIVERS: readonly VulkanDriver[] = ['swiftshader', 'lavapipe', 'system'];
export const KERNEL_VARIANTS: readonly KernelVariants[] = ['auto', 'gpu', 'software'];

export interface DawnOptions {
  /** The Vulkan driver (default 'system'). */
  vulkan?: VulkanDriver;
  /** Shorthand for vulkan: 'swiftshader'. */
  swiftshader?: boolean;
  /** Where the `webgpu` package is, when not resolvable from here (a carried copy). */
  module?: string;
}

/** The adapter Dawn gave: its one-line description and, for a CPU driver, that driver's name. */
export interface DawnAdapter {
  description: string;
  software: string | null;
  features: string[];
}
let started: DawnAdapter | null = null;

/** The adapter of the last startDawn (null before): benchmarks refuse to time a software one. */
export function dawnAdapter(): DawnAdapter | null {
  return started;
}

/** Checks a --vulkan value: one of VULKAN_DRIVERS, else an error naming the value. */
export function parseVulkanDriver(v: string): VulkanDriver {
  if ((VULKAN_DRIVERS as readonly string[]).includes(v)) return v as VulkanDriver;
  throw new Error(`--vulkan must be ${VULKAN_DRIVERS.join(', ')}, got ${JSON.stringify(v)}`);
}

/** Checks a --kernels value: one of KERNEL_VARIANTS, else an error naming the value. */
export function parseKernelVariants(v: string): KernelVariants {
  if ((KERNEL_VARIANTS as readonly string[]).includes(v)) return v as KernelVariants;
  throw new Error(`--kernels must be ${KERNEL_VARIANTS.join(', ')}, got ${JSON.stringify(v)}`);
}

/** --kernels: the GPU or software-adapter kernel variants on any adapter, or the adapter's own (auto). */
export function useKernelVariants(k: KernelVariants): void {
  setEngineOptions({ kernelVariants: k });
}

const MISSING: Record<Exclude<VulkanDriver, 'system'>, string> = {
  swiftshader: `SwiftShader's Vulkan driver is missing: ${SWIFTSHADER_VULKAN_ICD} (apt-get install chromium)`,
  lavapipe: `Mesa's lavapipe Vulkan driver is missing: ${LAVAPIPE_VULKAN_ICD} (add bookworm-backports, then apt-get install -t bookworm-backports mesa-vulkan-drivers libvulkan1)`,
};

/**
 * Starts Dawn, puts its `navigator.gpu` on globalThis, registers Sparring's webgpu backend
 * factory and makes it the tfjs backend. Returns the adapter's description.
 */
export async function startDawn(opts: DawnOptions = {}): Promise<string> {
  const vulkan: VulkanDriver = opts.vulkan ?? (opts.swiftshader ? 'swiftshader' : 'system');
  if (vulkan !== 'system') {
    const icd = vulkan === 'swiftshader' ? SWIFTSHADER_VULKAN_ICD : LAVAPIPE_VULKAN_ICD;
    if (!existsSync(icd)) throw new Error(MISSING[vulkan]);
    // Read by the Vulkan loader when Dawn creates its instance, so it must be set before create().
    process.env.VK_DRIVER_FILES = icd;
    // Mesa's implicit layers complain without it, on every instance.
    process.env.XDG_RUNTIME_DIR ??= '/tmp';
    // lavapipe comes with Debian's libvulkan1; SwiftShader may have only Chromium's loader.
    if (vulkan === 'swiftshader') preloadChromiumVulkanLoader();
  }
  const dawn = (await import(/* @vite-ignore */ opts.module ?? 'webgpu')) as DawnModule;
  Object.assign(globalThis, dawn.globals);
  // Dawn rounds timestamps to 100 us by default (a browser anti-fingerprinting measure).
  const gpu = dawn.create(['disable-dawn-features=timestamp_quantization']);
  // tfjs-backend-webgpu registers itself on import only where navigator.gpu exists.
  Object.defineProperty(globalThis, 'navigator', { value: { gpu }, configurable: true, writable: true });
  const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter) {
    const hint =
      vulkan !== 'system'
        ? ` on ${vulkan}`
        : ` (is a Vulkan driver installed? VK_DRIVER_FILES may need to name its ICD json; --vulkan swiftshader or lavapipe use a CPU driver)`;
    throw new Error(`Dawn found no GPU adapter${hint}`);
  }
  registerWebGPUBackend(await import('@tensorflow/tfjs-backend-webgpu'));
  if (!(await tf.setBackend('webgpu'))) throw new Error('tf.setBackend("webgpu") failed on this adapter');
  await tf.ready();
  webgpuDevice().addEventListener('uncapturederror', (e) =>
    console.error(`uncaptured WebGPU error: ${(e as GPUUncapturedErrorEvent).error.message}`),
  );
  const i = adapter.info;
  const description = `${i.vendor} ${i.architecture} ${i.description}`.replace(/\s+/g, ' ').trim();
  started = { description, software: softwareAdapterName(i), features: [...adapter.features].sort() };
  return description;
}
