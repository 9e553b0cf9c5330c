// Backend choice: webgpu -> webgl -> wasm -> cpu, with an override from the URL (?backend=)
// or the saved setting. Pure functions here; the side-effecting init lives in initBackend.ts.
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
  throw new Error(`URL parameter backend=${value} is not one of auto, ${BACKENDS.join(', ')}`);
}

/**
 * The order to try backends in. A forced backend is tried first and the rest still follow, so
 * a forced backend that fails to start never leaves the lab without an engine.
 */
export function backendCandidates(preference: BackendPreference, probe: GpuProbe | null): BackendName[] {
  const natural = BACKENDS.filter((b) => b !== 'webgpu' || probe === null || probe.available);
  if (preference === 'auto') return natural;
  return [preference, ...BACKENDS.filter((b) => b !== preference)];
}

export interface BackendAttempt {
  backend: BackendName;
  error: string | null;
}

export interface BackendReport {
  /** The backend tfjs runs on. */
  backend: BackendName;
  preference: BackendPreference;
  attempts: BackendAttempt[];
  /** True when the lab runs on something slower than WebGPU. */
  fellBack: boolean;
  /** One sentence for the banner: which backend, why, and what it costs. */
  banner: string | null;
  /** tfjs flags set for this adapter, with the reason (shown in the device panel). */
  tuning: { flag: string; value: number | boolean; why: string }[];
}

/**
 * The CPU Vulkan driver an adapter's info names, or null for anything else: SwiftShader reports
 * architecture "swiftshader"; Mesa's lavapipe reports vendor "mesa", architecture "software" and a
 * description starting "llvmpipe" (Mesa 25.0 through Dawn). tfjs keeps only vendor and
 * architecture, so each driver is recognised from those alone too.
 */
export function softwareAdapterName(info: {
  vendor?: string;
  architecture?: string;
  description?: string;
  device?: string;
}): 'SwiftShader' | 'lavapipe' | null {
  const s = `${info.vendor ?? ''} ${info.architecture ?? ''} ${info.description ?? ''} ${info.device ?? ''}`;
  if (/swiftshader/i.test(s)) return 'SwiftShader';
  if (
    /llvmpipe|lavapipe/i.test(s) ||
    (/\bmesa\b/i.test(info.vendor ?? '') && /^software$/i.test(info.architecture ?? ''))
  )
    return 'lavapipe';
  return null;
}

/** Adapters that run WebGPU on the CPU (SwiftShader, lavapipe): barrier-heavy kernels are very slow there. */
export function isSoftwareAdapter(probe: GpuProbe | null): boolean {
  return !!probe && probe.available && (probe.isFallbackAdapter || softwareAdapterName(probe) !== null);
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

export function describeChoice(
  preference: BackendPreference,
  backend: BackendName,
  attempts: BackendAttempt[],
  probe: GpuProbe | null,
): BackendReport {
  const fellBack = backend !== 'webgpu';
  let banner: string | null = null;
  if (fellBack) {
    const why =
      preference === backend
        ? `forced by the backend setting (${backend})`
        : probe && !probe.available
          ? `WebGPU is unavailable: ${probe.reason}`
          : attempts
              .filter((a) => a.error)
              .map((a) => `${a.backend} failed: ${a.error}`)
              .join('; ') || 'WebGPU did not start';
    banner = `Running on ${backend}, ${why}. ${BACKEND_COST[backend]}`;
  }
  return { backend, preference, attempts, fellBack, banner, tuning: tuningFor(backend, probe) };
}
