/// <reference lib="webworker" />
// The engine worker's methods (EngineApi): what the lab calls. The worker owns tfjs, the models
// and all tensors. Kept apart from the Comlink.expose call (engine.worker.ts) so another worker
// (the test harness, dev/harness/) can expose these methods beside its own.
import * as Comlink from 'comlink';
import * as tf from '@tensorflow/tfjs';
import wasmPlain from '@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm.wasm?url';
import wasmSimd from '@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-simd.wasm?url';
import wasmThreaded from '@tensorflow/tfjs-backend-wasm/dist/tfjs-backend-wasm-threaded-simd.wasm?url';
import {
  initBackend,
  probeWebGPU,
  isWebGPUBackend,
  webgpuDevice,
  subgroupStatus,
  wasmKernelStatus,
  type BackendPreference,
  type GpuProbe,
} from '../engine/index';
import type { EngineApi, EngineStatus, FileBytes } from '../contract/workerApi';
import {
  activeRunSpec,
  atBoundary,
  browserEnv,
  listRecipes,
  modelFolder,
  pauseRun,
  resumeFromCheckpoint,
  resumeRun,
  runStatus,
  saveCheckpointNow,
  setAutosave,
  setHubEndpoint,
  startRun,
  stepRun,
  stopRun,
  watchCheckpoints,
  withStoredRun,
  exportsActive,
} from './runs';
import { adapterOutputs, importAdapterIntoRun, runAdapter } from '../recipes/kit/adapterIo';
import { exportRunAdapters, exportRunMerged } from '../recipes/kit/playerExport';
import type { RecipeRun } from '../recipes/kit/types';
import { deleteDataset, listDatasets, putDataset } from './datasets';
import { verlJobZip } from './verlJob';
import { loadChatCodec } from '../recipes/kit/env';
import { countLongestPrompt } from '../recipes/kit/promptTokens';
import type { ChatCodec } from '../recipes/kit/types';

/** Codecs the fit check loaded, by model reference (a form edit re-checks; the tokenizer is fetched once). */
const codecs = new Map<string, Promise<ChatCodec>>();
function chatCodecOf(ref: string): Promise<ChatCodec> {
  let c = codecs.get(ref);
  if (!c) {
    if (codecs.size >= 4) codecs.delete(codecs.keys().next().value!);
    c = loadChatCodec(modelFolder(ref), ref);
    c.catch(() => codecs.delete(ref));
    codecs.set(ref, c);
  }
  return c;
}

let current: Omit<EngineStatus, 'memory' | 'gpuErrors' | 'subgroups'> | null = null;
const gpuErrors: string[] = [];

/** A failed shader or an out-of-memory error is otherwise silent: the output is just garbage. */
function watchDevice(device: GPUDevice): void {
  device.addEventListener('uncapturederror', (e) => {
    const message = (e as GPUUncapturedErrorEvent).error.message;
    console.error(`WebGPU error: ${message}`);
    if (gpuErrors.length < 20) gpuErrors.push(message);
  });
  void device.lost.then((info) => gpuErrors.push(`device lost (${info.reason}): ${info.message}`));
}

function memory() {
  const m = tf.memory();
  return { numTensors: m.numTensors, numBytes: m.numBytes };
}

export function requireInit(): Omit<EngineStatus, 'memory' | 'gpuErrors' | 'subgroups'> {
  if (!current) throw new Error('engine not initialised: call init() first');
  return current;
}

function fullStatus(): EngineStatus {
  const wasmKernels = wasmKernelStatus() ?? undefined;
  return { ...requireInit(), memory: memory(), gpuErrors: [...gpuErrors], subgroups: subgroupStatus(), wasmKernels };
}

export const engineApi: EngineApi = {
  async init(preference: BackendPreference) {
    const probe: GpuProbe = await probeWebGPU();
    const backend = await initBackend({
      preference,
      probe,
      wasmPaths: {
        'tfjs-backend-wasm.wasm': wasmPlain,
        'tfjs-backend-wasm-simd.wasm': wasmSimd,
        'tfjs-backend-wasm-threaded-simd.wasm': wasmThreaded,
      },
    });
    current = { backend, probe, tfjsVersion: tf.version.tfjs };
    if (isWebGPUBackend()) watchDevice(webgpuDevice());
    return fullStatus();
  },

  async status() {
    return fullStatus();
  },

  async setHubEndpoint(endpoint) {
    setHubEndpoint(endpoint);
  },

  async listRecipes() {
    return listRecipes();
  },

  async startRun(recipe, config, seed, onReport, onStatus) {
    requireInit();
    return startRun(recipe, config, seed, onReport, onStatus);
  },

  async pauseRun() {
    return pauseRun();
  },

  async resumeRun() {
    return resumeRun();
  },

  async stepRun() {
    return stepRun();
  },

  async stopRun(opts) {
    return stopRun(opts);
  },

  async runStatus() {
    return runStatus();
  },

  async setAutosave(policy) {
    return setAutosave(policy);
  },

  async watchCheckpoints(onEvent) {
    watchCheckpoints(onEvent);
  },

  async saveCheckpoint(name) {
    return saveCheckpointNow(name);
  },

  async resumeFromCheckpoint(id, onReport, onStatus, opts) {
    requireInit();
    return resumeFromCheckpoint(id, onReport, onStatus, opts);
  },

  async exportAdapter(opts) {
    return transferFile(
      await fromRun(opts?.runId, (ra, run, config) => exportRunAdapters(ra, run, config, modelFolder)),
    );
  },

  async exportMerged(opts) {
    return transferFile(await fromRun(opts?.runId, (ra, run, config) => exportRunMerged(ra, run, config, modelFolder)));
  },

  async importAdapter(zip, fileName, opts) {
    try {
      return await atBoundary((run) =>
        withAdapter(run, (ra) => importAdapterIntoRun(run, ra, modelFolder(ra.baseRef), zip, fileName, opts)),
      );
    } catch (e) {
      return { ok: false, error: (e as Error).message };
    }
  },

  async adapterOutputs(prompt, maxNewTokens) {
    return atBoundary((run) =>
      withAdapter(run, (ra) => adapterOutputs(browserEnv(), ra, modelFolder(ra.baseRef), prompt, maxNewTokens)),
    );
  },

  async putDataset(fileName, jsonl, rows, longestPrompt) {
    return putDataset(fileName, jsonl, rows, longestPrompt);
  },

  async listDatasets() {
    return listDatasets();
  },

  async promptTokens(modelRef, datasetRef) {
    const text = await browserEnv().readText!(datasetRef);
    return countLongestPrompt(text, datasetRef, await chatCodecOf(modelRef));
  },

  async deleteDataset(ref) {
    return deleteDataset(ref);
  },

  async exportVerl(recipe, values, seed, steps) {
    return transferFile(await verlJobZip(recipe, values, seed, steps));
  },
};

/**
 * fn with a run's adapter: the active run's at its next step boundary, or a stopped / finished
 * run's rebuilt from its newest checkpoint (Stop saves one, so that is its last state).
 */
function fromRun<T>(
  runId: string | undefined,
  fn: (ra: ReturnType<typeof runAdapter>, run: RecipeRun, config: Record<string, unknown>) => Promise<T>,
): Promise<T> {
  if (exportsActive(runId)) return atBoundary((run) => withAdapter(run, (ra) => fn(ra, run, activeRunSpec()!.config)));
  return withStoredRun(runId, (run, spec) => fn(runAdapter(spec.recipe, spec.config, run), run, spec.config));
}

/** fn with the active run's adapter (one clear error when the run's recipe trains none). */
function withAdapter<T>(
  run: Parameters<typeof runAdapter>[2],
  fn: (ra: ReturnType<typeof runAdapter>) => Promise<T>,
): Promise<T> {
  const spec = activeRunSpec();
  if (!spec) throw new Error('no active run');
  return fn(runAdapter(spec.recipe, spec.config, run));
}

const transferFile = <F extends FileBytes>(f: F): F => Comlink.transfer(f, [f.bytes.buffer as ArrayBuffer]);
