// The active run's LoRA adapter in and out of the PEFT format, and merged weights (the worker's
// product API calls these; the adapter's model work is storage/adapterModel.ts).
//
// The LoRA recipes keep their adapter set public (`run.lora`) and name the model they train in
// `recipe.modelField`; that model's folder gives the base dimensions (config.json) and weights
// (model.safetensors). An imported adapter replaces the run's adapter tensors through the run's
// own restore(), at a step boundary, with fresh optimiser moments (the saved moments belong to
// another trajectory): the run's model then computes exactly what the exported run's did.
import { loadModelConfig, loadWeights, type ModelFolder } from '../../model/load';
import { LoraSet } from '../../model/lora';
import { isSandboxName } from './env';
import type { AnyRecipe, RecipeEnv, RecipeRun } from './types';
import { exportPeftZip, importPeftZipAsync, peftTensorMap, PeftError, type BaseDims } from '../../storage/peft';
import { checkFiniteAdapter, greedyWithAdapter, plainAdapter, structureMismatch } from '../../storage/adapterModel';
import { exportMergedModel, quantisedBaseNote } from '../../storage/merge';
import { isWeightFormat, type WeightFormat } from '../../contract/weightFormat';
import { weightsFieldOf } from '../../contract/weightFields';
import type { AdapterOutputs, FileBytes, ImportAdapterResult } from '../../contract/workerApi';

export interface RunAdapter {
  lora: LoraSet;
  /** The trained model's reference (sandbox name, URL): base_model_name_or_path of the export. */
  baseRef: string;
  recipe: string;
  step: number;
  /**
   * The recipe's model field (arena: defender, minmax / rlhf: policy): the key under which a run
   * that trains several adapters stores this one's tensors (`<part>/<PEFT name>`).
   */
  part: string;
  /** The format the run loaded the base in (its weights field; f32 when the recipe has none). */
  baseWeights: WeightFormat;
}

/** The adapter of a run, or one clear error when the recipe trains none. */
export function runAdapter(recipe: AnyRecipe, config: Record<string, unknown>, run: RecipeRun | null): RunAdapter {
  if (!run) throw new Error('no active run (start a run, or resume one from a checkpoint, first)');
  const lora = (run as unknown as { lora?: unknown }).lora;
  const field = recipe.modelField;
  if (!(lora instanceof LoraSet) || !field)
    throw new Error(`recipe "${recipe.name}" trains no LoRA adapter, so there is nothing to export`);
  const ref = config[field];
  if (typeof ref !== 'string' || ref === '')
    throw new Error(`recipe "${recipe.name}": field "${field}" names no model`);
  const w = config[weightsFieldOf(field)];
  return {
    lora,
    baseRef: ref,
    recipe: recipe.name,
    step: run.stepsDone,
    part: field,
    baseWeights: isWeightFormat(w) ? w : 'f32',
  };
}

export function baseDims(folder: ModelFolder): Promise<BaseDims> {
  return loadModelConfig(folder);
}

const safeName = (s: string) => s.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^_+|_+$/g, '') || 'model';

/**
 * base_model_name_or_path of an export. A sandbox name ("defender") is no hub id:
 * AutoPeftModelForCausalLM would look it up on the hub. It is written as the model's folder in a
 * Sparring checkout, a local path that transformers resolves from the checkout's root.
 */
export function exportBaseModel(ref: string): string {
  return isSandboxName(ref) ? `./public/models/${ref}` : ref;
}

export function exportReadme(ra: RunAdapter): string {
  const base = exportBaseModel(ra.baseRef);
  const local = base !== ra.baseRef;
  return [
    `# LoRA adapter: ${ra.recipe}, step ${ra.step}`,
    '',
    'A PEFT adapter exported by Sparring (adapter_config.json + adapter_model.safetensors).',
    '',
    local
      ? `base_model_name_or_path is \`${base}\`: the built-in sandbox model "${ra.baseRef}" as a path inside a Sparring checkout (it is not on the Hugging Face hub). Load it from the checkout's root, or set the field to wherever that model folder is:`
      : `base_model_name_or_path is \`${base}\`, the model the run trained:`,
    '',
    '```python',
    'from peft import AutoPeftModelForCausalLM',
    'model = AutoPeftModelForCausalLM.from_pretrained("path/to/this/folder")',
    '```',
    '',
  ].join('\n');
}

export async function exportAdapterZip(ra: RunAdapter, folder: ModelFolder): Promise<FileBytes> {
  const dims = await baseDims(folder);
  const bytes = exportPeftZip(await plainAdapter(ra.lora), {
    baseModel: exportBaseModel(ra.baseRef),
    dims,
    readme: exportReadme(ra),
  });
  return { fileName: `${ra.recipe}-${safeName(ra.baseRef)}-step${ra.step}-adapter.zip`, bytes };
}

export async function exportMergedWeights(ra: RunAdapter, folder: ModelFolder): Promise<FileBytes> {
  const dims = await baseDims(folder);
  const bytes = exportMergedModel(
    await loadWeights(folder),
    await plainAdapter(ra.lora),
    dims,
    ra.baseRef,
    ra.baseWeights,
  );
  const note = quantisedBaseNote(ra.baseWeights);
  return {
    fileName: `${ra.recipe}-${safeName(ra.baseRef)}-step${ra.step}-merged.safetensors`,
    bytes,
    ...(note ? { note } : {}),
  };
}

/**
 * Validates the zip against the run's base (name and dims), rank, alpha and targets, then loads
 * its tensors into the run. Bad input -> { ok: false, error } and the run is untouched.
 */
export async function importAdapterIntoRun(
  run: RecipeRun,
  ra: RunAdapter,
  folder: ModelFolder,
  zip: Uint8Array,
  fileName: string,
  opts: { allowBaseMismatch?: boolean } = {},
): Promise<ImportAdapterResult> {
  let imported: Awaited<ReturnType<typeof importPeftZipAsync>>;
  let dims: BaseDims;
  try {
    dims = await baseDims(folder);
    // Yields while it inflates and checks, so Stop and Pause still answer during a large import.
    imported = await importPeftZipAsync(zip, {
      dims,
      expectedBase: exportBaseModel(ra.baseRef),
      allowBaseMismatch: opts.allowBaseMismatch,
      fileName,
    });
    const why = structureMismatch(imported.adapter, ra.lora, dims);
    if (why) throw new PeftError(`${fileName}: ${why}`);
    checkFiniteAdapter(imported.adapter, dims, fileName);
  } catch (e) {
    return { ok: false, error: (e as Error).message };
  }
  const tensors = peftTensorMap(imported.adapter, dims);
  const payload = await run.state();
  // A run that trains several adapters (arena, minmax, rlhf) names them `<part>/<PEFT name>`:
  // replace only the exported part's tensors and moments; the other part keeps its state.
  const prefix = payload.tensors.some((t) => t.name.startsWith(`${ra.part}/`)) ? `${ra.part}/` : '';
  payload.tensors = payload.tensors.map((t) => {
    if (!t.name.startsWith(prefix)) return t;
    const src = tensors.get(t.name.slice(prefix.length));
    if (!src) throw new Error(`${fileName}: no tensor "${t.name}" (checked above; the run's adapter changed?)`);
    return { ...t, data: Float32Array.from(src.data as ArrayLike<number>) };
  });
  if (prefix) {
    payload.optimizer = {
      ...payload.optimizer,
      tensors: payload.optimizer.tensors.filter((t) => !t.name.startsWith(prefix)),
    };
    const steps = (payload.extra.optimizerSteps ?? {}) as Record<string, number>;
    payload.extra = { ...payload.extra, optimizerSteps: { ...steps, [ra.part]: 0 } };
  } else {
    payload.optimizer = { state: { step: 0 }, tensors: [] };
  }
  await run.restore(payload);
  return {
    ok: true,
    fileName,
    baseModel: imported.baseModel,
    baseMismatch: imported.baseMismatch,
    r: imported.adapter.r,
    tensors: tensors.size,
    step: run.stepsDone,
  };
}

/**
 * Greedy continuation by a fresh copy of the base model with the adapter loaded (the run's own
 * model is busy training; the same weights give the same tokens). Frees the copy after.
 */
export async function adapterOutputs(
  env: RecipeEnv,
  ra: RunAdapter,
  folder: ModelFolder,
  prompt: string,
  maxNewTokens: number,
): Promise<AdapterOutputs> {
  if (!Number.isInteger(maxNewTokens) || maxNewTokens < 1 || maxNewTokens > 256)
    throw new Error(`adapterOutputs: maxNewTokens must be an integer in [1, 256], got ${maxNewTokens}`);
  const dims = await baseDims(folder);
  const a = await plainAdapter(ra.lora);
  const m = await env.loadModel(ra.baseRef, { weights: ra.baseWeights });
  try {
    return await greedyWithAdapter(m.model, m.codec, a, dims, prompt, maxNewTokens);
  } finally {
    m.dispose();
  }
}
