// WebGPU in Node through Dawn (the `webgpu` npm package), with tfjs's webgpu backend on it: the
// GPU benchmark and the Node kernel tests run the lab's WGSL kernels this way. On a machine with
// no GPU, Chromium's SwiftShader Vulkan driver (Debian's chromium-common ships it) stands in, so
// the Node path is tested where CI runs, not only on a lent GPU machine.
import * as tf from '@tensorflow/tfjs';
import { existsSync } from 'node:fs';
import { constants } from 'node:os';
import { registerWebGPUBackend, webgpuDevice } from '../../engine/index';

/** Chromium's SwiftShader Vulkan driver (a CPU implementation), as Debian installs it. */
export const SWIFTSHADER_VULKAN_ICD = '/usr/lib/chromium/vk_swiftshader_icd.json';
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

export interface DawnOptions {
  /** Use Chromium's SwiftShader Vulkan driver instead of the machine's GPU driver. */
  swiftshader?: boolean;
  /** Where the `webgpu` package is, when not resolvable from here (a carried copy). */
  module?: string;
}

/**
 * Starts Dawn, puts its `navigator.gpu` on globalThis, registers Sparring's webgpu backend
 * factory and makes it the tfjs backend. Returns the adapter's description.
 */
export async function startDawn(opts: DawnOptions = {}): Promise<string> {
  if (opts.swiftshader) {
    if (!existsSync(SWIFTSHADER_VULKAN_ICD))
      throw new Error(`SwiftShader's Vulkan driver is missing: ${SWIFTSHADER_VULKAN_ICD} (apt-get install chromium)`);
    // Read by the Vulkan loader when Dawn creates its instance, so it must be set before create().
    process.env.VK_DRIVER_FILES = SWIFTSHADER_VULKAN_ICD;
    // Mesa's implicit layers complain without it, on every instance.
    process.env.XDG_RUNTIME_DIR ??= '/tmp';
    preloadChromiumVulkanLoader();
  }
  const dawn = (await import(/* @vite-ignore */ opts.module ?? 'webgpu')) as DawnModule;
  Object.assign(globalThis, dawn.globals);
  // Dawn rounds timestamps to 100 us by default (a browser anti-fingerprinting measure).
  const gpu = dawn.create(['disable-dawn-features=timestamp_quantization']);
  // tfjs-backend-webgpu registers itself on import only where navigator.gpu exists.
  Object.defineProperty(globalThis, 'navigator', { value: { gpu }, configurable: true, writable: true });
  const adapter = await gpu.requestAdapter({ powerPreference: 'high-performance' });
  if (!adapter) {
    const hint = opts.swiftshader
      ? ''
      : ` (is a Vulkan driver installed? VK_DRIVER_FILES may need to name its ICD json; --swiftshader uses ${SWIFTSHADER_VULKAN_ICD})`;
    throw new Error(`Dawn found no GPU adapter${hint}`);
  }
  registerWebGPUBackend(await import('@tensorflow/tfjs-backend-webgpu'));
  if (!(await tf.setBackend('webgpu'))) throw new Error('tf.setBackend("webgpu") failed on this adapter');
  await tf.ready();
  webgpuDevice().addEventListener('uncapturederror', (e) =>
    console.error(`uncaptured WebGPU error: ${(e as GPUUncapturedErrorEvent).error.message}`),
  );
  const i = adapter.info;
  return `${i.vendor} ${i.architecture} ${i.description}`.replace(/\s+/g, ' ').trim();
}
