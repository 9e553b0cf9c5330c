// Starts tfjs on the best backend that works here. Backends load lazily so a tab that
// cannot use WebGPU never pays for its module.
import * as tf from '@tensorflow/tfjs';
import {
  backendCandidates,
  describeChoice,
  type BackendAttempt,
  type BackendName,
  type BackendPreference,
  type BackendReport,
} from '../contract/backends';
import type { GpuProbe } from '../contract/gpuProbe';
import { registerWebGPUBackend } from './webgpu/gpuFeatures';
import { shareWasmIdentity } from './wasmIdentity';
import { installWasmKernels } from './kernels/wasmGemm';
import {
  describeWasmThreads,
  threadedBuildWanted,
  wasmThreadRequest,
  type WasmThreadEnv,
} from '../contract/wasmThreads';

export interface InitOptions {
  preference: BackendPreference;
  probe: GpuProbe | null;
  /** URLs of the tfjs wasm binaries (bundler-resolved), keyed by file name. */
  wasmPaths?: Record<string, string>;
}

function threadEnv(): WasmThreadEnv {
  return {
    node: tf.env().getBool('IS_NODE'),
    isolated: (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated === true,
    cores: globalThis.navigator?.hardwareConcurrency ?? 1,
  };
}

/** The wasm backend's thread count (after tf.ready()), with the reason. */
async function wasmThreads() {
  const wasm = await import('@tensorflow/tfjs-backend-wasm');
  const [threads, simd] = await Promise.all([
    tf.env().getAsync('WASM_HAS_MULTITHREAD_SUPPORT'),
    tf.env().getAsync('WASM_HAS_SIMD_SUPPORT'),
  ]);
  return describeWasmThreads(threadEnv(), wasm.getThreadsCount(), threads === true && simd === true);
}

async function registerBackend(name: BackendName, opts: InitOptions): Promise<void> {
  if (name === 'webgpu') registerWebGPUBackend(await import('@tensorflow/tfjs-backend-webgpu'));
  if (name === 'wasm') {
    const wasm = await import('@tensorflow/tfjs-backend-wasm');
    if (opts.wasmPaths) wasm.setWasmPaths(opts.wasmPaths);
    // tfjs loads the threaded binary wherever SharedArrayBuffer exists; below 4 cores the
    // single-threaded one is faster (src/contract/wasmThreads.ts), so it is told there is none.
    if (!threadedBuildWanted(threadEnv())) tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', false);
    wasm.setThreadsCount(wasmThreadRequest(threadEnv()));
    shareWasmIdentity();
    installWasmKernels();
  }
  // webgl and cpu ship inside @tensorflow/tfjs.
}

export async function initBackend(opts: InitOptions): Promise<BackendReport> {
  const attempts: BackendAttempt[] = [];
  for (const name of backendCandidates(opts.preference, opts.probe)) {
    try {
      await registerBackend(name, opts);
      const start = async () => {
        const ok = await tf.setBackend(name);
        if (!ok) throw new Error(`tf.setBackend('${name}') returned false`);
        await tf.ready();
      };
      await start();
      attempts.push({ backend: name, error: null });
      const report = describeChoice(opts.preference, name, attempts, opts.probe);
      for (const t of report.tuning) tf.env().set(t.flag, t.value);
      return name === 'wasm' ? { ...report, wasmThreads: await wasmThreads() } : report;
    } catch (err) {
      attempts.push({ backend: name, error: (err as Error).message || String(err) });
    }
  }
  throw new Error(`No tfjs backend could start: ${attempts.map((a) => `${a.backend}: ${a.error}`).join('; ')}`);
}
