// Backend choice: webgpu -> webgl -> wasm -> cpu, with an override from the URL (?backend=)
// or the saved setting. Pure functions here; the side-effecting init lives in initBackend.ts.
import type { WasmThreads } from './wasmThreads';
import type { GpuProbe } from './gpuProbe';

export const BACKENDS = ['webgpu', 'webgl', 'wasm', 'cpu'] as const;
export type BackendName = (typeof BACKENDS)[number];
export type BackendPreference = BackendName | 'auto';

/** What falling back to each backend costs a researcher, shown in the banner. */
export const BACKEND_COST: Record<BackendName, string> = {
  webgpu: 'Full speed: custom WGSL kernels on the GPU.',
  webgl:
    'GPU through WebGL: no custom WGSL kernels (fused token stats, quantised matmul, GPU sampling), roughly 2-5x slower training.',
  wasm: 'CPU through WebAssembly (SIMD): sandbox models only are practical; hub models train 20-100x slower than on WebGPU.',
  cpu: 'Plain JavaScript CPU kernels: the slowest path, fine for the sandbox demo, impractical for hub models.',
};

export function isBackendName(value: string): value is BackendName {
  return (BACKENDS as readonly string[]).includes(value);
}

/**
 * Read `?backend=` from a URL query string. Returns null when absent; throws an error naming the
 * value when it is not a backend, so a typo does not silently run on another backend.
 */
export function parseBackendOverride(search: string): BackendPreference | null {
  const value = new URLSearchParams(search).get('backend');
  if (value === null || value === '') return null;
  const v = value.trim().toLowerCase();
  if (v === 'auto' || isBackendName(v)) return v;
  throw new Error(`The link's backend=${value} is not a backend (allowed: auto, ${BACKENDS.join(', ')})`);
}

/**
 * The order to try backends in. A forced backend is tried first and the rest still follow in the
 * order `auto` would try them (so `?backend=webgl` where webgl fails lands on wasm, not on a
 * software WebGPU adapter at twice wasm's step time: issue 41), so a forced backend that fails to
 * start never leaves the lab without an engine. On a software
 * WebGPU adapter (WebGPU emulated on the CPU) `auto` tries wasm first: see SOFTWARE_ADAPTER_FIGURES.
 * WebGPU stays second (it is known to start there); webgl follows because a machine whose WebGPU is
 * software has, in practice, a software WebGL too (no GPU at all: a VM, CI, a headless browser).
 */
export function backendCandidates(preference: BackendPreference, probe: GpuProbe | null): BackendName[] {
  if (preference !== 'auto') {
    const after = backendCandidates('auto', probe);
    // Then anything auto would skip (WebGPU where the probe found none): tried last, not never.
    return [preference, ...after, ...BACKENDS.filter((b) => !after.includes(b))].filter(
      (b, i, all) => all.indexOf(b) === i,
    );
  }
  if (softwareAdapterName(probe)) return ['wasm', 'webgpu', 'webgl', 'cpu'];
  return BACKENDS.filter((b) => b !== 'webgpu' || probe === null || probe.available);
}

/**
 * Why wasm beats a software WebGPU adapter: seconds per training step measured in Chromium on
 * SwiftShader against the same run on wasm (issue 31). WebGPU's strength is thousands of GPU
 * threads; emulated on a few CPU cores, every kernel's barriers and dispatches cost more than the
 * wasm SIMD kernels doing the same arithmetic.
 */
export const SOFTWARE_ADAPTER_FIGURES =
  'measured in Chromium on SwiftShader, a redteam step took 47-52 s on webgpu against about 7 s on wasm, a guided-demo step 5.5-10 s against 2.1-2.8 s';

export interface BackendAttempt {
  backend: BackendName;
  error: string | null;
}

export interface BackendReport {
  /** The backend tfjs runs on. */
  backend: BackendName;
  preference: BackendPreference;
  attempts: BackendAttempt[];
  /** True when the lab runs on something slower than WebGPU on a hardware adapter. */
  fellBack: boolean;
  /** Why this backend runs (forced, picked over a software adapter, what failed), one clause. */
  reason: string;
  /** One sentence for the banner: which backend, why, and what it costs. */
  banner: string | null;
  /** tfjs flags set for this adapter, with the reason (shown in the device panel). */
  tuning: { flag: string; value: number | boolean; why: string }[];
  /** On the wasm backend: how many threads it runs and why (src/contract/wasmThreads.ts). */
  wasmThreads?: WasmThreads;
}

/**
 * The software renderer behind a WebGPU adapter, or null for a hardware adapter (or none): Chromium's
 * SwiftShader (architecture "swiftshader"); Mesa's lavapipe, Vulkan on llvmpipe (vendor "mesa",
 * architecture "software", a description starting "llvmpipe" in Mesa 25.0 through Dawn; tfjs keeps
 * only vendor and architecture, so those two alone are enough); Windows' WARP ("Microsoft Basic
 * Render Driver"). An adapter the browser marks as a fallback adapter counts as software too.
 * scripts/gpu-adapter.mjs carries the same rule for the GPU bench's preflight (a unit test holds the
 * two to the same answers).
 */
export function softwareAdapterName(
  info: {
    vendor?: string;
    architecture?: string;
    description?: string;
    device?: string;
    available?: boolean;
    isFallbackAdapter?: boolean;
  } | null,
): string | null {
  if (!info || info.available === false) return null;
  const s = `${info.vendor ?? ''} ${info.architecture ?? ''} ${info.description ?? ''} ${info.device ?? ''}`;
  if (/swiftshader/i.test(s)) return 'SwiftShader';
  if (
    /llvmpipe|lavapipe/i.test(s) ||
    (/\bmesa\b/i.test(info.vendor ?? '') && /^software$/i.test(info.architecture ?? ''))
  )
    return 'lavapipe';
  if (/microsoft basic render|\bwarp\b/i.test(s)) return 'WARP';
  return info.isFallbackAdapter ? 'a fallback adapter' : null;
}

/** Adapters that run WebGPU on the CPU (SwiftShader and the like): barrier-heavy kernels are very slow there. */
export function isSoftwareAdapter(probe: GpuProbe | null): boolean {
  return softwareAdapterName(probe) !== null;
}

/** What running on `backend` costs here: BACKEND_COST, except that WebGPU on a software adapter is not full speed. */
export function backendCost(backend: BackendName, probe: GpuProbe | null): string {
  const software = softwareAdapterName(probe);
  if (software && backend === 'wasm')
    return 'CPU through WebAssembly (SIMD): the fastest backend on this machine, which has no hardware GPU for WebGPU; sandbox models train in seconds a step, hub models far slower than on a GPU.';
  if (!software || backend !== 'webgpu') return BACKEND_COST[backend];
  return `Slow here: the WebGPU adapter is ${software}, a software renderer that emulates the GPU on the CPU (${SOFTWARE_ADAPTER_FIGURES}).`;
}

/**
 * tfjs flags to set for this backend and adapter. On a software adapter, tfjs's reduce matmul
 * (picked for tiny outputs, e.g. every decode-step projection) costs ~80x the tiled one: a decode
 * step of the tiny fixture took 600 ms with it and 125 ms with the tiled matmul (measured in
 * Chromium on SwiftShader with tf.profile).
 */
export function tuningFor(backend: BackendName, probe: GpuProbe | null): BackendReport['tuning'] {
  if (backend !== 'webgpu' || !isSoftwareAdapter(probe)) return [];
  return [
    {
      flag: 'WEBGPU_MATMUL_PROGRAM_TYPE',
      value: 3,
      why: 'software adapter: the tiled matmul instead of the barrier-heavy reduce matmul',
    },
  ];
}

/** Why `backend` runs: one clause, shown in the banner and the Device dialog. */
function whyChosen(
  preference: BackendPreference,
  backend: BackendName,
  attempts: BackendAttempt[],
  probe: GpuProbe | null,
): string {
  if (preference === backend) return `forced by the backend setting (${backend})`;
  const failed = attempts
    .filter((a) => a.error)
    .map((a) => `${a.backend} failed: ${a.error}`)
    .join('; ');
  const software = softwareAdapterName(probe);
  if (software && backend === 'wasm')
    return `picked because the WebGPU adapter here is ${software}, a software renderer that runs on the CPU, where wasm is faster (${SOFTWARE_ADAPTER_FIGURES})`;
  if (backend === 'webgpu') return failed ? `after ${failed}` : 'the best backend available';
  if (probe && !probe.available) return `WebGPU is unavailable: ${probe.reason}`;
  return failed || 'WebGPU did not start';
}

export function describeChoice(
  preference: BackendPreference,
  backend: BackendName,
  attempts: BackendAttempt[],
  probe: GpuProbe | null,
): BackendReport {
  const software = softwareAdapterName(probe);
  // Anything but WebGPU on a hardware adapter is slower than the lab can run on a real GPU.
  const fellBack = backend !== 'webgpu' || software !== null;
  const reason = whyChosen(preference, backend, attempts, probe);
  let banner: string | null = null;
  if (fellBack) {
    banner = `Running on ${backend}, ${reason}. ${backendCost(backend, probe)}`;
    if (software && backend !== 'webgpu')
      banner += ' To use WebGPU anyway, pick webgpu in the Device dialog or open the lab with ?backend=webgpu.';
  }
  return { backend, preference, attempts, fellBack, reason, banner, tuning: tuningFor(backend, probe) };
}
