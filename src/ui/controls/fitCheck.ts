// The fit check of one model reference, run in the page before anything is loaded: read its
// config.json (site sandbox folder, URL / hub folder, or a picked local folder), estimate memory
// for the recipe's rollout shape and plan its learn step (src/contract/learnMemory.ts), and compare with the engine's backend, adapter limits and the
// bytes tfjs holds now.
import { parseModelConfig } from '../../contract/modelConfig';
import { describeModel, plannedMismatch } from '../../contract/blockDescription';
import { unknownModelError } from '../../contract/sandboxModels';
import { sandboxModelUrl } from '../../contract/siteRoot';
import type { ModelFit } from '../../store/setupStore';
import type { EngineStatus, PromptTokenCount } from '../../contract/workerApi';
import { hubFolderUrl, readModelRef } from './fieldKinds';
import { hubRefOf } from '../../contract/hubRef';
import { pageHubEndpoint } from '../engineConnection';
import type { WeightFormat } from '../../contract/weightFormat';
import { cachedConfigText } from './localFolders';
import {
  backendBudget,
  checkFit,
  COUNT_TIMEOUT_MS,
  dataPromptLength,
  dataPromptTokens,
  estimateMemory,
  loraOf,
  withLearnPlan,
  workloadOf,
} from './modelFit';
import { useDatasets } from '../../store/datasetsStore';

const MiB = 2 ** 20;

async function configText(ref: string): Promise<string> {
  const unknown = unknownModelError(ref);
  if (unknown) throw new Error(unknown);
  const c = readModelRef(ref);
  if (c.mode === 'local') return cachedConfigText(c.url);
  // A hub id or hub folder loads from the page's `?hub=` mirror when one is set (as the worker does).
  const hub = hubRefOf(ref);
  const base =
    c.mode === 'sandbox'
      ? sandboxModelUrl(c.name)
      : hub
        ? hubFolderUrl(hub.id, hub.revision, pageHubEndpoint())
        : ref.replace(/\/?$/, '/');
  const url = new URL('config.json', new URL(base, window.location.href)).href;
  const res = await fetch(url);
  if (!res.ok) throw new Error(`${url}: HTTP ${res.status}`);
  // A static host answers a missing file with its index.html (vite preview does): that is "not found", not bad JSON.
  if ((res.headers.get('content-type') ?? '').toLowerCase().startsWith('text/html'))
    throw new Error(`${url}: not found (the server answered with a web page)`);
  return res.text();
}

export function deviceBudget(status: EngineStatus) {
  const backend = status.backend.backend;
  const nav = navigator as Navigator & { deviceMemory?: number };
  const perf = performance as Performance & { memory?: { jsHeapSizeLimit?: number } };
  const b = backendBudget(backend, { deviceMemoryGiB: nav.deviceMemory, jsHeapLimit: perf.memory?.jsHeapSizeLimit });
  const limits = status.probe.limits;
  return {
    backend,
    maxBufferSize: limits?.maxBufferSize,
    maxStorageBufferBindingSize: limits?.maxStorageBufferBindingSize,
    budgetBytes: b.bytes,
    budgetSource: b.source,
    inUseBytes: status.memory.numBytes,
  };
}

/** Counts an upload's longest prompt with a model's tokenizer (the worker's promptTokens). */
export type PromptCounter = (modelRef: string, datasetRef: string) => Promise<PromptTokenCount>;

/** The worker's count, or why there is none (no counter, an error, or no answer within COUNT_TIMEOUT_MS). */
async function countOrWhy(
  count: PromptCounter | undefined,
  modelRef: string,
  datasetRef: string,
): Promise<PromptTokenCount | { error: string }> {
  if (!count) return { error: 'no engine to load it' };
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<{ error: string }>((done) => {
    timer = setTimeout(() => done({ error: `it did not load within ${COUNT_TIMEOUT_MS / 1000} s` }), COUNT_TIMEOUT_MS);
  });
  try {
    return await Promise.race([
      count(modelRef, datasetRef).catch((e: unknown) => ({ error: String((e as Error)?.message ?? e) })),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export async function checkModelFit(
  ref: string,
  config: Record<string, unknown>,
  status: EngineStatus,
  weights: WeightFormat = 'f32',
  count?: PromptCounter,
): Promise<ModelFit> {
  let cfg;
  try {
    cfg = parseModelConfig(await configText(ref));
  } catch (e) {
    return {
      ref,
      state: 'unknown',
      summary: `cannot check the size: ${(e as Error).message}`,
      problems: [],
      notes: [],
    };
  }
  const estimate = dataPromptTokens(config, useDatasets.getState().uploads);
  const data = estimate && dataPromptLength(estimate, await countOrWhy(count, ref, estimate.ref));
  const w = workloadOf(config, data?.tokens ?? null);
  // The longest prompt with its answer must fit the model's context (generate refuses it otherwise).
  const context =
    data && w.seqLen > cfg.maxPositionEmbeddings
      ? `the longest prompt of ${data.ref} (${data.tokens.toLocaleString('en-US')} tokens with the template) and ${w.responseLen} answer tokens need ${w.seqLen.toLocaleString('en-US')} positions, over the model's context of ${cfg.maxPositionEmbeddings.toLocaleString('en-US')}: set a prompt budget (maxPromptLength, truncation), cut the prompts at upload, or shorten them`
      : null;
  const budget = deviceBudget(status);
  const lora = loraOf(config);
  const base = estimateMemory(cfg, w, weights);
  let est = base;
  const planNotes: string[] = [];
  // The planned learning step runs every block in its shape; another learns on tfjs in one pass.
  const unplanned = plannedMismatch(describeModel(cfg));
  try {
    if (lora && unplanned)
      planNotes.push(
        `the planned WebGPU learning step does not run this block yet (${unplanned}): tfjs learns the whole batch in one pass, its activations a rough per-token estimate`,
      );
    else if (lora) est = withLearnPlan(base, cfg, w, weights, lora, budget);
  } catch (e) {
    planNotes.push(
      `the learn step could not be planned (${(e as Error).message}): its activations are a rough per-token estimate`,
    );
  }
  const v = checkFit(est, budget);
  const mb = (n: number) => (n / MiB).toFixed(1);
  const l = est.learn;
  const summary =
    `${est.params.toLocaleString('en-US')} parameters · ≈ ${mb(est.totalBytes)} MiB for ${w.batch} x ${w.seqLen} tokens ` +
    `(weights ${mb(est.weightBytes)} in ${weights}, KV ${mb(est.kvCacheBytes)}${est.optimizerBytes !== undefined ? `, LoRA + AdamW ${mb(est.optimizerBytes)}` : ''}, activations ${mb(est.activationBytes)})` +
    (l
      ? ` · learn step: ${l.accumulationSteps} micro-batch${l.accumulationSteps > 1 ? 'es' : ''} of ${l.microBatchRows} rows, activations ${l.recompute ? 'recomputed per layer in the backward (each layer keeps its input)' : 'kept'} ` +
        (budget.backend === 'webgpu'
          ? '(what the planned WebGPU learning step allocates and runs; where it falls back, tfjs learns the whole batch in one pass)'
          : `(the planned WebGPU learning step's allocation; on ${budget.backend} tfjs learns the whole batch in one pass)`)
      : '');
  const learn = l && {
    microBatchRows: l.microBatchRows,
    accumulationSteps: l.accumulationSteps,
    recompute: l.recompute,
    peakBytes: l.peakBytes,
    buffers: l.buffers,
  };
  return {
    ref,
    state: v.fits && !context ? 'fits' : 'too-big',
    summary,
    problems: context ? [context, ...v.problems] : v.problems,
    notes: [...(data ? [data.how] : []), ...v.notes, ...(l?.notes ?? []), ...planNotes],
    ...(learn ? { learn } : {}),
  };
}
