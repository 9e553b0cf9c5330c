// Optional WebGPU features for the WGSL kernels. tfjs 4.22's own 'webgpu' factory requests neither
// subgroups nor shader-f16, and prepends its header to every shader, where an `enable` directive is
// not allowed. So Sparring registers the backend itself: the same limits and features tfjs asks
// for, plus `subgroups` where the adapter has it, and a device whose shader compiler moves
// `enable` lines to the top. Kernels then pick a subgroup variant only when subgroupsActive().
import * as tf from '@tensorflow/tfjs';
import { isWebGPUBackend, webgpuDevice } from './wgslProgram';
import { engineOptions } from '../options';
import type { SubgroupLayout, SubgroupStatus } from '../../contract/workerApi';

export type { SubgroupLayout, SubgroupStatus };

const layouts = new WeakMap<GPUDevice, SubgroupLayout>();

/** The device's subgroup layout when it has the feature (null otherwise, or off WebGPU). */
export function subgroupLayout(): SubgroupLayout | null {
  if (!isWebGPUBackend()) return null;
  return layouts.get(webgpuDevice()) ?? null;
}

/** What the engine reports about subgroups: the device's layout and whether kernels use it. */
export function subgroupStatus(): SubgroupStatus {
  return { layout: subgroupLayout(), active: subgroupsActive() };
}

/**
 * Whether kernels use subgroup operations: the device has the feature, the probe found the
 * contiguous layout the reductions index by (tid / size), and they are not switched off (EngineOptions.subgroups).
 */
export function subgroupsActive(): boolean {
  const l = subgroupLayout();
  return engineOptions().subgroups && l !== null && l.contiguous;
}

const ENABLE_LINE = /^[ \t]*enable[ \t]+[A-Za-z0-9_, \t]+;[ \t]*$/gm;

/**
 * WGSL requires directives before any declaration; tfjs prepends its header to a kernel's source.
 * Moves every `enable ...;` line to the top (each once), leaving the rest of the code unchanged.
 */
export function hoistEnableDirectives(code: string): string {
  const found = code.match(ENABLE_LINE);
  if (!found) return code;
  const directives = [...new Set(found.map((l) => l.trim().replace(/\s+/g, ' ').replace(/ ;$/, ';')))];
  return `${directives.join('\n')}\n${code.replace(ENABLE_LINE, '')}`;
}

const HOISTED = Symbol('sparring.hoistEnableDirectives');

/**
 * Wraps device.createShaderModule so every module (tfjs's and ours) gets hoistEnableDirectives.
 * Returns false where the device object refuses the wrapper (a binding with read-only methods):
 * kernels then must not use `enable` directives.
 */
export function installDirectiveHoist(device: GPUDevice): boolean {
  const d = device as GPUDevice & { [HOISTED]?: true };
  if (d[HOISTED]) return true;
  const create = device.createShaderModule.bind(device);
  const wrapped = (desc: GPUShaderModuleDescriptor) => create({ ...desc, code: hoistEnableDirectives(desc.code) });
  try {
    device.createShaderModule = wrapped;
  } catch {
    return false;
  }
  if (device.createShaderModule !== wrapped) return false;
  d[HOISTED] = true;
  return true;
}

const PROBE_WGSL = `enable subgroups;
@group(0) @binding(0) var<storage, read_write> out : array<u32>;
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) tid : u32) {
  out[tid * 3u] = subgroupAdd(1u);
  out[tid * 3u + 1u] = subgroupMin(tid);
  out[tid * 3u + 2u] = subgroupExclusiveAdd(1u);
}`;

/** Reads (size, first index, rank) per thread from one 256-thread workgroup and judges the layout. */
export async function probeSubgroupLayout(device: GPUDevice, adapterMinSize?: number): Promise<SubgroupLayout> {
  const module = device.createShaderModule({ code: PROBE_WGSL, label: 'sparring subgroup probe' });
  const pipeline = await device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'main' } });
  const bytes = 256 * 3 * 4;
  const buf = device.createBuffer({ size: bytes, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
  const read = device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  try {
    const enc = device.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(
      0,
      device.createBindGroup({
        layout: pipeline.getBindGroupLayout(0),
        entries: [{ binding: 0, resource: { buffer: buf } }],
      }),
    );
    pass.dispatchWorkgroups(1);
    pass.end();
    enc.copyBufferToBuffer(buf, 0, read, 0, bytes);
    device.queue.submit([enc.finish()]);
    await read.mapAsync(GPUMapMode.READ);
    const v = new Uint32Array(read.getMappedRange().slice(0));
    read.unmap();
    return judgeSubgroupLayout(v, adapterMinSize);
  } finally {
    buf.destroy();
    read.destroy();
  }
}

/** The layout from the probe's (size, first, rank) triples; exported for tests with made-up triples. */
export function judgeSubgroupLayout(v: Uint32Array, adapterMinSize?: number): SubgroupLayout {
  const sizes = new Set<number>();
  let contiguous = true;
  for (let tid = 0; tid < v.length / 3; tid++) {
    const [n, first, rank] = [v[tid * 3], v[tid * 3 + 1], v[tid * 3 + 2]];
    sizes.add(n);
    if (n === 0 || first !== tid - rank || first % n !== 0 || rank >= n) contiguous = false;
  }
  if (sizes.size !== 1) contiguous = false;
  const seen = Math.min(...sizes);
  const minSize = Math.max(4, Math.min(adapterMinSize ?? 4, seen));
  return { contiguous, sizes: [...sizes].sort((a, b) => a - b), minSize };
}

type WebGPUModule = typeof import('@tensorflow/tfjs-backend-webgpu');
let registered = false;

/**
 * Replaces tfjs-backend-webgpu's 'webgpu' factory with one that also requests `subgroups`
 * (where the adapter has it), installs the directive hoist and probes the subgroup layout.
 * Call after importing the module and before tf.setBackend('webgpu'). Idempotent.
 */
export function registerWebGPUBackend(webgpu: WebGPUModule): void {
  if (registered) return;
  if (typeof navigator === 'undefined' || !navigator.gpu) return; // the module did not register either
  if (tf.findBackendFactory('webgpu')) tf.removeBackend('webgpu');
  tf.registerBackend(
    'webgpu',
    async () => {
      const powerPreference = tf.env().getBool('WEBGPU_USE_LOW_POWER_GPU') ? 'low-power' : 'high-performance';
      const adapter = await navigator.gpu.requestAdapter({ powerPreference });
      if (!adapter) throw new Error('WebGPU: navigator.gpu.requestAdapter() found no adapter');
      const wanted: GPUFeatureName[] = ['timestamp-query', 'bgra8unorm-storage', 'subgroups' as GPUFeatureName];
      const l = adapter.limits;
      const device = await adapter.requestDevice({
        requiredFeatures: wanted.filter((f) => adapter.features.has(f)),
        // The limits tfjs's own factory raises to the adapter's.
        requiredLimits: {
          maxComputeWorkgroupStorageSize: l.maxComputeWorkgroupStorageSize,
          maxComputeWorkgroupsPerDimension: l.maxComputeWorkgroupsPerDimension,
          maxStorageBufferBindingSize: l.maxStorageBufferBindingSize,
          maxBufferSize: l.maxBufferSize,
          maxComputeWorkgroupSizeX: l.maxComputeWorkgroupSizeX,
          maxComputeInvocationsPerWorkgroup: l.maxComputeInvocationsPerWorkgroup,
        },
      });
      // Subgroup kernels need `enable subgroups;` above tfjs's header, so they need the hoist.
      if (installDirectiveHoist(device) && device.features.has('subgroups')) {
        const info = adapter.info as GPUAdapterInfo & { subgroupMinSize?: number };
        layouts.set(device, await probeSubgroupLayout(device, info.subgroupMinSize));
      }
      return new webgpu.WebGPUBackend(device, adapter.info);
    },
    3,
  );
  registered = true;
}
