// Checkpoint helpers shared by the recipes: LoRA adapters and their AdamW state to and from plain
// typed arrays under stable names. tfjs variable names carry the LoRA set's process-wide id
// (`lora3/model.layers.0.self_attn.q_proj.lora_A`), so a fresh run in another process (or later
// in this one) has different names: the payload uses PEFT names instead and maps them back.
import { FORMER_NAMES } from '../../contract/aliases';
import * as tf from '@tensorflow/tfjs';
import { peftTensorName, type LoraSet } from '../../model/lora';
import type { AdamW, AdamWState } from '../../rl/optim';
import { findNonFinite, type NamedTensor } from '../../contract/namedTensor';
import type { CheckpointInput } from '../../storage/checkpoints';
import type { RecipeCheckpoint } from './types';
import { checkSavedWeights, weightFormatsOf } from '../../contract/weightFields';
import { brief } from '../../contract/brief';

/** variable name <-> PEFT name for every adapter matrix of the set. */
function nameMaps(lora: LoraSet): { toPeft: Map<string, string>; fromPeft: Map<string, tf.Variable> } {
  const toPeft = new Map<string, string>();
  const fromPeft = new Map<string, tf.Variable>();
  for (const a of lora.adapters) {
    for (const [which, v] of [
      ['A', a.A],
      ['B', a.B],
    ] as const) {
      const p = peftTensorName(a.module, which);
      toPeft.set(v.name, p);
      fromPeft.set(p, v);
    }
  }
  return { toPeft, fromPeft };
}

/** Dropout call counters of the adapters (private in LoraAdapter; they seed the dropout masks). */
function dropoutCalls(lora: LoraSet): number[] {
  return lora.adapters.map((a) => (a as unknown as { calls: number }).calls);
}

export async function exportLoraState(
  lora: LoraSet,
  optimizer: AdamW,
): Promise<Pick<RecipeCheckpoint, 'tensors' | 'optimizer'> & { dropoutCalls: number[] }> {
  const { toPeft } = nameMaps(lora);
  const tensors: NamedTensor[] = [];
  for (const v of lora.variables()) {
    tensors.push({
      name: toPeft.get(v.name)!,
      dtype: 'float32',
      shape: v.shape.slice(),
      data: Float32Array.from(await v.data()),
    });
  }
  const st = await optimizer.exportState();
  const opt: NamedTensor[] = [];
  for (const [name, { shape, m, v }] of Object.entries(st.moments)) {
    const p = toPeft.get(name);
    if (!p) throw new Error(`checkpoint: optimiser state for "${name}", which is not an adapter of this run`);
    opt.push({ name: `${p}.exp_avg`, dtype: 'float32', shape, data: m });
    opt.push({ name: `${p}.exp_avg_sq`, dtype: 'float32', shape, data: v });
  }
  return { tensors, optimizer: { state: { step: st.step }, tensors: opt }, dropoutCalls: dropoutCalls(lora) };
}

/** Non-negative safe integer (a step, a seed, a counter). */
export const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

const sameShape = (a: readonly number[], b: readonly number[]) =>
  a.length === b.length && a.every((d, i) => d === b[i]);

/** Throws unless `t` is a float32 tensor of exactly `shape`, all finite. */
function checkPayloadTensor(t: NamedTensor, shape: readonly number[], label: string): void {
  const what = `checkpoint: ${label} "${t.name}"`;
  if (!sameShape(t.shape, shape))
    throw new Error(
      `${what} has shape [${t.shape.join(', ')}], the run's is [${shape.join(', ')}] (different LoRA rank or model?)`,
    );
  const n = shape.reduce((a, b) => a * b, 1);
  if (!(t.data instanceof Float32Array) || t.data.length !== n)
    throw new Error(
      `${what} holds ${t.data?.length ?? 'no'} values (${t.data?.constructor?.name ?? typeof t.data}), shape [${shape.join(', ')}] needs ${n} float32`,
    );
  const bad = findNonFinite([t]);
  if (bad)
    throw new Error(
      `${what} holds ${bad.value} at index ${bad.index}; a checkpoint must hold finite numbers (resume from an earlier one)`,
    );
}

/**
 * Checks a LoRA payload whole against the run's adapters before anything is assigned: every
 * adapter tensor present once with the run's shape and finite values, no unknown tensors, each
 * moment pair named after a parameter with its shape and finite, the optimiser step and dropout
 * counters whole numbers. `part` names the adapter set in messages (arena: "attacker/").
 * Returns the moments in AdamW's form (keyed by variable name).
 */
export function validateLoraPayload(
  lora: LoraSet,
  payload: Pick<RecipeCheckpoint, 'tensors' | 'optimizer'>,
  calls?: readonly number[],
  part = '',
): AdamWState {
  const { fromPeft } = nameMaps(lora);
  const seen = new Set<string>();
  for (const t of payload.tensors) {
    const v = fromPeft.get(t.name);
    if (!v)
      throw new Error(
        `checkpoint: tensor "${part}${t.name}" is not an adapter of this run (different LoRA targets or model?)`,
      );
    if (seen.has(t.name)) throw new Error(`checkpoint: tensor "${part}${t.name}" appears twice`);
    seen.add(t.name);
    checkPayloadTensor({ ...t, name: part + t.name }, v.shape, 'tensor');
  }
  const missing = [...fromPeft.keys()].filter((n) => !seen.has(n));
  if (missing.length)
    throw new Error(
      `checkpoint: no tensor for adapter "${part}${missing[0]}"${missing.length > 1 ? ` (and ${missing.length - 1} more)` : ''}`,
    );
  const step = payload.optimizer?.state?.step;
  if (!isCount(step))
    throw new Error(
      `checkpoint: optimiser step of "${part || 'the adapter'}" must be a non-negative integer, got ${String(step)}`,
    );
  const byName = new Map<string, NamedTensor>();
  for (const t of payload.optimizer.tensors) {
    const m = /^(.*)\.(exp_avg|exp_avg_sq)$/.exec(t.name);
    const v = m ? fromPeft.get(m[1]) : undefined;
    if (!m || !v)
      throw new Error(
        `checkpoint: optimiser tensor "${part}${t.name}" is not <adapter tensor>.exp_avg or .exp_avg_sq of this run`,
      );
    if (byName.has(t.name)) throw new Error(`checkpoint: optimiser tensor "${part}${t.name}" appears twice`);
    byName.set(t.name, t);
    checkPayloadTensor({ ...t, name: part + t.name }, v.shape, 'optimiser moment');
  }
  const moments: AdamWState['moments'] = {};
  for (const [p, v] of fromPeft) {
    const m = byName.get(`${p}.exp_avg`);
    const s = byName.get(`${p}.exp_avg_sq`);
    if (!m && !s) continue; // no moment yet (no update touched it)
    if (!m || !s)
      throw new Error(
        `checkpoint: "${part}${p}" has ${m ? 'exp_avg' : 'exp_avg_sq'} but no ${m ? 'exp_avg_sq' : 'exp_avg'} (both moments or neither)`,
      );
    moments[v.name] = { shape: v.shape.slice(), m: Float32Array.from(m.data), v: Float32Array.from(s.data) };
  }
  if (calls) {
    if (calls.length !== lora.adapters.length)
      throw new Error(`checkpoint: ${calls.length} dropout counters for ${lora.adapters.length} adapters`);
    const i = calls.findIndex((c) => !isCount(c));
    if (i >= 0)
      throw new Error(
        `checkpoint: dropout counter ${i} of "${part || 'the adapter'}" must be a non-negative integer, got ${String(calls[i])}`,
      );
  }
  return { step, moments };
}

/** Loads a payload into the adapters and AdamW; validates it whole first, so a bad one changes nothing. */
export function importLoraState(
  lora: LoraSet,
  optimizer: AdamW,
  payload: Pick<RecipeCheckpoint, 'tensors' | 'optimizer'>,
  calls?: readonly number[],
): void {
  const state = validateLoraPayload(lora, payload, calls);
  assignLoraState(lora, optimizer, payload, state, calls);
}

/** The assignments only: `state` is validateLoraPayload's result for this payload. */
function assignLoraState(
  lora: LoraSet,
  optimizer: AdamW,
  payload: Pick<RecipeCheckpoint, 'tensors'>,
  state: AdamWState,
  calls?: readonly number[],
): void {
  const { fromPeft } = nameMaps(lora);
  for (const t of payload.tensors) {
    const v = fromPeft.get(t.name)!;
    tf.tidy(() => v.assign(tf.tensor(t.data, v.shape, 'float32')));
  }
  optimizer.importState(state);
  if (calls) lora.adapters.forEach((a, i) => ((a as unknown as { calls: number }).calls = calls[i]));
}

/** The storage layer's input for a recipe checkpoint (IndexedDB CheckpointStore.save). */
export function toCheckpointInput(
  payload: RecipeCheckpoint,
  runId: string,
  metrics?: Record<string, number>,
): CheckpointInput {
  return {
    runId,
    step: payload.step,
    metrics,
    spec: { recipe: payload.recipe, seed: payload.seed, config: payload.config, format: payload.format },
    tensors: payload.tensors,
    optimizer: { state: payload.optimizer.state, tensors: payload.optimizer.tensors },
    rng: payload.rng,
    extra: payload.extra,
  };
}

/** Back from a stored checkpoint (CheckpointStore.load's result). */
export function fromStoredCheckpoint(c: {
  spec: unknown;
  tensors: NamedTensor[];
  optimizer: { state: unknown; tensors: NamedTensor[] };
  rng: unknown;
  extra: unknown;
  manifest: { step: number };
}): RecipeCheckpoint {
  const spec = c.spec as { recipe?: unknown; seed?: unknown; config?: unknown } | null;
  if (!spec || typeof spec.recipe !== 'string' || typeof spec.seed !== 'number')
    throw new Error('checkpoint: spec has no recipe name and seed (not a recipe checkpoint)');
  return {
    format: 1,
    recipe: spec.recipe,
    seed: spec.seed,
    step: c.manifest.step,
    config: (spec.config ?? {}) as Record<string, unknown>,
    tensors: c.tensors,
    optimizer: { state: c.optimizer.state as { step: number }, tensors: c.optimizer.tensors },
    rng: (c.rng ?? {}) as Record<string, number>,
    extra: (c.extra ?? {}) as Record<string, unknown>,
  };
}

export const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Throws unless the payload belongs to this recipe, seed and config. */
export function checkPayload(
  payload: RecipeCheckpoint,
  recipe: string,
  seed: number,
  config: Record<string, unknown>,
): void {
  if (payload.format !== 1)
    throw new Error(`checkpoint: format ${String(payload.format)} is not supported (expected 1)`);
  if (payload.recipe !== recipe)
    throw new Error(`checkpoint: saved by recipe "${payload.recipe}", this run is "${recipe}"`);
  if (payload.seed !== seed) throw new Error(`checkpoint: saved with seed ${payload.seed}, this run has seed ${seed}`);
  if (!isCount(payload.step))
    throw new Error(`checkpoint: step must be a non-negative integer, got ${String(payload.step)}`);
  if (!isPlainObject(payload.config)) throw new Error('checkpoint: config must be an object');
  if (!isPlainObject(payload.extra)) throw new Error('checkpoint: extra must be an object');
  if (!isPlainObject(payload.rng)) throw new Error('checkpoint: rng must be an object');
  for (const [model, format] of Object.entries(weightFormatsOf(config)))
    checkSavedWeights(payload.config, model, format, 'checkpoint');
  // A checkpoint saved before a field was renamed holds it under its earlier name.
  const saved = Object.fromEntries(Object.entries(payload.config).map(([k, v]) => [FORMER_NAMES.get(k) ?? k, v]));
  for (const [k, v] of Object.entries(config)) {
    if (k in saved && saved[k] !== v) {
      throw new Error(`checkpoint: field "${k}" was ${brief(saved[k])} when saved, this run has ${brief(v)}`);
    }
  }
}

/** The parts of a LoRA-training run that its checkpoint captures. */
export interface LoraRunParts {
  recipe: string;
  seed: number;
  stepsDone: number;
  config: Record<string, unknown>;
  lora: LoraSet;
  optimizer: AdamW;
}

/** The checkpoint of `run` at its current step: its recipe, seed and config, then `body`. */
function runCheckpoint(
  run: Omit<LoraRunParts, 'lora' | 'optimizer'>,
  body: Pick<RecipeCheckpoint, 'tensors' | 'optimizer' | 'rng' | 'extra'>,
): RecipeCheckpoint {
  return {
    format: 1,
    recipe: run.recipe,
    seed: run.seed,
    step: run.stepsDone,
    config: { ...run.config },
    tensors: body.tensors,
    optimizer: body.optimizer,
    rng: body.rng,
    extra: body.extra,
  };
}

/** A run's checkpoint: LoRA tensors, AdamW state, the step and seed, dropout call counters. */
export async function loraRunState(run: LoraRunParts, extra: Record<string, unknown> = {}): Promise<RecipeCheckpoint> {
  const s = await exportLoraState(run.lora, run.optimizer);
  return runCheckpoint(run, {
    tensors: s.tensors,
    optimizer: s.optimizer,
    rng: {
      seed: run.seed,
      step: run.stepsDone,
      ...Object.fromEntries(s.dropoutCalls.map((n, i) => [`lora_dropout_calls_${i}`, n])),
    },
    extra,
  });
}

/** Checks a checkpoint against the run and loads its LoRA, AdamW and dropout state; returns its step. */
export function restoreLoraRun(run: LoraRunParts, payload: RecipeCheckpoint): number {
  checkPayload(payload, run.recipe, run.seed, run.config);
  importLoraState(
    run.lora,
    run.optimizer,
    payload,
    run.lora.adapters.map((_, i) => payload.rng[`lora_dropout_calls_${i}`] ?? 0),
  );
  return payload.step;
}

/** A LoRA-training run with its own stopping rule (early stop, a final evaluation). */
export interface StoppableLoraRun extends LoraRunParts {
  stepsDone: number;
  done: boolean;
  stopReason: string | null;
}

/** loraRunState, with the run's done flag and stop reason in extra. */
export function stoppableRunState(
  run: StoppableLoraRun,
  extra: Record<string, unknown> = {},
): Promise<RecipeCheckpoint> {
  return loraRunState(run, { ...extra, done: run.done, stopReason: run.stopReason });
}

/** restoreLoraRun, then the step counter, done flag and stop reason back onto the run. */
export function restoreStoppableRun(run: StoppableLoraRun, payload: RecipeCheckpoint): void {
  run.stepsDone = restoreLoraRun(run, payload);
  run.done = payload.extra.done === true;
  run.stopReason = typeof payload.extra.stopReason === 'string' ? payload.extra.stopReason : null;
}

/** One named LoRA set of a run that trains several (arena: attacker and defender). */
export interface NamedLoraPart {
  lora: LoraSet;
  optimizer: AdamW;
}

/**
 * A checkpoint of several LoRA sets: each part's tensors and moments under `<key>/<PEFT name>`,
 * its optimiser step in extra.optimizerSteps[key], its dropout counters in rng `<key>_dropout_calls_i`.
 */
export async function multiLoraRunState(
  run: Omit<LoraRunParts, 'lora' | 'optimizer'>,
  parts: Record<string, NamedLoraPart>,
  extra: Record<string, unknown> = {},
): Promise<RecipeCheckpoint> {
  const tensors: NamedTensor[] = [];
  const moments: NamedTensor[] = [];
  const rng: Record<string, number> = { seed: run.seed, step: run.stepsDone };
  const optimizerSteps: Record<string, number> = {};
  for (const [key, p] of Object.entries(parts)) {
    const s = await exportLoraState(p.lora, p.optimizer);
    tensors.push(...s.tensors.map((t) => ({ ...t, name: `${key}/${t.name}` })));
    moments.push(...s.optimizer.tensors.map((t) => ({ ...t, name: `${key}/${t.name}` })));
    optimizerSteps[key] = s.optimizer.state.step;
    s.dropoutCalls.forEach((n, i) => (rng[`${key}_dropout_calls_${i}`] = n));
  }
  return runCheckpoint(run, {
    tensors,
    optimizer: { state: { step: run.stepsDone }, tensors: moments },
    rng,
    extra: { ...extra, optimizerSteps },
  });
}

/**
 * Checks a multiLoraRunState checkpoint against the run and loads every part; returns its step.
 * Every part is validated before any is assigned, so a bad file leaves the whole run as it was.
 */
export function restoreMultiLoraRun(
  run: Omit<LoraRunParts, 'lora' | 'optimizer'>,
  parts: Record<string, NamedLoraPart>,
  payload: RecipeCheckpoint,
): number {
  checkPayload(payload, run.recipe, run.seed, run.config);
  const steps = (payload.extra.optimizerSteps ?? {}) as Record<string, unknown>;
  const known = Object.keys(parts);
  const stray = [...payload.tensors, ...payload.optimizer.tensors].find(
    (t) => !known.some((k) => t.name.startsWith(`${k}/`)),
  );
  if (stray)
    throw new Error(`checkpoint: tensor "${stray.name}" belongs to none of this run's adapters (${known.join(', ')})`);
  const plans = Object.entries(parts).map(([key, p]) => {
    const strip = (ts: NamedTensor[]) =>
      ts.filter((t) => t.name.startsWith(`${key}/`)).map((t) => ({ ...t, name: t.name.slice(key.length + 1) }));
    const step = steps[key];
    if (typeof step !== 'number') throw new Error(`checkpoint: no optimiser step for "${key}" (extra.optimizerSteps)`);
    const sub = {
      tensors: strip(payload.tensors),
      optimizer: { state: { step }, tensors: strip(payload.optimizer.tensors) },
    };
    const calls = p.lora.adapters.map((_, i) => payload.rng[`${key}_dropout_calls_${i}`] ?? 0);
    return { p, sub, calls, state: validateLoraPayload(p.lora, sub, calls, `${key}/`) };
  });
  for (const { p, sub, calls, state } of plans) assignLoraState(p.lora, p.optimizer, sub, state, calls);
  return payload.step;
}
