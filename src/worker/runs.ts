// The worker's run controller: one recipe run at a time, stepped in a loop that yields between
// steps, so pause / resume / single-step / stop take effect at step boundaries. Reports leave as
// plain data through a callback (a comlink proxy from the UI); the run's tensors never leave.
// A recipe that throws puts the controller in state `error` and frees the run; the worker stays
// usable for the next start.
//
// Checkpoints: the loop saves the run to IndexedDB every N steps and on pause (autosave.ts), and
// anything that reads or replaces the run's tensors (a manual save, adapter export / import) is
// queued with atBoundary() and runs between two steps, never in the middle of one. Every report
// is also appended to the run's log in IndexedDB (storage/runs.ts), so a run resumed after a
// reload has its history and its JSONL export.
import * as Comlink from 'comlink';
import * as tf from '@tensorflow/tfjs';
import { brief } from '../contract/brief';
import { NonFiniteError } from '../recipes/kit/common';
import { hubFolder, isSandboxName, urlRecipeEnv } from '../recipes/kit/env';
import { unknownModelError } from '../contract/sandboxModels';
import type { Metrics, StepReport } from '../contract/report';
import { createTimedRun } from '../recipes/kit/judgeTiming';
import {
  getRecipe,
  hasRecipe,
  listRecipes as registeredRecipes,
  recipeNames,
  validateRecipeConfig,
} from '../recipes/registry';
import { EXPORTABLE_RECIPES } from '../recipes/exports';
import { vocabularyOf } from '../recipes/vocabulary';
import { playersOf } from '../recipes/players';
import { fromStoredCheckpoint } from '../recipes/kit/state';
import type { AnyRecipe, RecipeCheckpoint, RecipeEnv, RecipeRun } from '../recipes/kit/types';
import { urlSource } from '../model/sources';
import type { ModelFolder } from '../model/load';
import { checkpoints, runs as runLogs } from '../storage';
import {
  autosaveDue,
  checkAutosavePolicy,
  DEFAULT_AUTOSAVE,
  pauseSaveDue,
  pruneAutosaves,
  saveRunCheckpoint,
} from './autosave';
import { datasetRefErrors, datasetText } from './datasets';
import { branchId, openBranchLog, restoresOlderCheckpoint } from './branch';
import type { RecipeListing, RunState, RunStatus, StartRunResult } from '../contract/workerApi';
import { runLock } from '../contract/storageFormat';
import { stopLine, type RequestedStop, type StopReason } from '../contract/stopReason';
import { siteRoot } from '../contract/siteRoot';
import type { AutosavePolicy, CheckpointEvent, CheckpointReason } from '../contract/workerApi';

type ReportSink = (report: StepReport) => unknown;
type StatusSink = (status: RunStatus) => unknown;

type BoundaryTask = {
  fn: (run: RecipeRun) => Promise<unknown>;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
};

interface ActiveRun {
  recipe: AnyRecipe;
  seed: number;
  runId: string;
  /** The validated config. */
  config: Record<string, unknown>;
  /** A checkpoint to restore right after the run is created (resume). */
  restoreFrom: RecipeCheckpoint | null;
  /** The run this one branched from (Restore of an older checkpoint), or null (branch.ts). */
  branchOf: { runId: string; step: number } | null;
  run: RecipeRun | null;
  /** Work queued for the next step boundary (saves, exports, imports). */
  tasks: BoundaryTask[];
  lastSavedStep: number | null;
  /** Why the last save was made: a stop right after a pause save still saves as `stop` (then stop). */
  lastSaveReason: CheckpointReason | null;
  lastMetrics: Metrics | undefined;
  step: number;
  stopRequested: boolean;
  /** Who asked for the stop (the page says: the user, its step limit, a watchdog). */
  stopAsked: RequestedStop;
  /** Stop without the final save (the user chose to discard the steps since the last checkpoint). */
  discard: boolean;
  /** Single steps asked for while paused, not yet run. */
  pendingSteps: number;
  /** Resolvers of stepRun() calls, settled after their step (or when the loop ends). */
  stepWaiters: (() => void)[];
  /** Wakes the loop while it waits in pause. */
  wake: (() => void) | null;
  onReport: ReportSink;
  onStatus?: StatusSink;
  loop: Promise<void>;
}

let state: RunState = 'idle';
let error: string | null = null;
let detail: string | null = null;
/** Why the loop paused itself (a non-finite value), shown while paused; cleared by the next good step. */
let pauseNote: string | null = null;
/** Why the last run ended (kept after its final save, which sets `detail` for a moment). */
let stopReason: StopReason | null = null;
let active: ActiveRun | null = null;
let stepping = false;
let autosave: AutosavePolicy = { ...DEFAULT_AUTOSAVE };
let checkpointSink: ((e: CheckpointEvent) => unknown) | null = null;
/** The run that ended last in this worker: an export with no active run reads its newest checkpoint. */
let lastEndedRunId: string | null = null;

export function runStatus(): RunStatus {
  return {
    state,
    recipe: active?.recipe.name ?? null,
    seed: active?.seed ?? null,
    step: active?.step ?? 0,
    error,
    detail,
    stepping,
    runId: active?.runId ?? null,
    numTensors: tf.memory().numTensors,
    stopReason,
  };
}

function notify(a: ActiveRun): void {
  if (!a.onStatus || active !== a) return;
  try {
    void Promise.resolve(a.onStatus(runStatus())).catch(() => undefined);
  } catch {
    // The page went away; the run goes on until stopped.
  }
}

/** Registered recipes with their schemas (plain JSON: a clone of each field spec). */
export function listRecipes(): RecipeListing[] {
  return registeredRecipes().map((r) => ({
    name: r.name,
    title: r.title,
    source: r.source,
    description: r.description,
    schema: JSON.parse(JSON.stringify(r.schema)) as RecipeListing['schema'],
    exportable: EXPORTABLE_RECIPES.includes(r.name),
    lesson: r.lesson,
    vocabulary: vocabularyOf(r.name),
    ...(playersOf(r.name) ? { players: [...playersOf(r.name)!] } : {}),
  }));
}

const modelsBase = () => new URL('models/', siteRoot()).href;

/** Where hub ids ("owner/name") load from: the hub, or a mirror set by the page (`?hub=`). */
let hubEndpoint: string | undefined;

/** A hub mirror's endpoint (no trailing slash needed), or null for the hub itself. Throws on a non-http(s) URL. */
export function setHubEndpoint(endpoint: string | null): void {
  if (endpoint !== null && !/^https?:\/\/[^/]/.test(endpoint))
    throw new Error(`hub endpoint ${brief(endpoint)} is not an http(s) URL`);
  hubEndpoint = endpoint ?? undefined;
}

/**
 * The browser env: sandbox names load the site's /models/NAME/ (wherever the worker script
 * lives), hub ids the hub (or its mirror); a dataset field may name an uploaded file (datasets.ts) or a URL.
 */
export function browserEnv(): RecipeEnv {
  const env = urlRecipeEnv({ modelsBase: modelsBase(), hubEndpoint, backend: tf.getBackend() });
  const fetchText = env.readText!;
  return { ...env, readText: async (ref) => (await datasetText(ref)) ?? fetchText(ref) };
}

/** The folder of a model reference, resolved as the browser env resolves it. */
export function modelFolder(ref: string): ModelFolder {
  const unknown = unknownModelError(ref);
  if (unknown) throw new Error(unknown);
  return isSandboxName(ref) ? urlSource(`${modelsBase()}${ref}/`) : (hubFolder(ref, hubEndpoint) ?? urlSource(ref));
}

/** HHMMSS plus 4 random hex digits: two runs of one seed in the same second must not share logs and checkpoints. */
function stamp(): string {
  const d = new Date();
  const hms = [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, '0')).join('');
  return `${hms}-${Math.floor(Math.random() * 0x10000)
    .toString(16)
    .padStart(4, '0')}`;
}

function releaseCallback(cb: unknown): void {
  const release = (cb as { [Comlink.releaseProxy]?: () => void } | undefined)?.[Comlink.releaseProxy];
  if (typeof release === 'function') {
    try {
      release.call(cb);
    } catch {
      // already released
    }
  }
}

const nextTask = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

function emit(e: CheckpointEvent): void {
  try {
    void Promise.resolve(checkpointSink?.(e)).catch(() => undefined);
  } catch {
    // the page went away
  }
  if (e.kind === 'failed') console.warn(`checkpoint not saved: ${e.message}`);
}

async function save(a: ActiveRun, run: RecipeRun, reason: CheckpointReason, name?: string): Promise<CheckpointEvent> {
  const e = await saveRunCheckpoint(checkpoints(), run, a.runId, a.lastMetrics, reason, name);
  if (e.kind === 'saved') {
    a.lastSavedStep = e.step;
    a.lastSaveReason = reason;
    if (reason !== 'manual')
      await pruneAutosaves(checkpoints(), a.runId, autosave.keep).catch((err: Error) =>
        console.warn(`old autosaves not pruned: ${err.message}`),
      );
  }
  emit(e);
  return e;
}

/** Runs the queued boundary tasks, in order. */
async function drainTasks(a: ActiveRun, run: RecipeRun): Promise<void> {
  while (a.tasks.length > 0) {
    const t = a.tasks.shift()!;
    try {
      t.resolve(await t.fn(run));
    } catch (e) {
      t.reject(e);
    }
  }
}

/** The run's log in IndexedDB: a fresh record, or (resume) the existing one cut after the checkpoint. */
async function openLog(a: ActiveRun): Promise<void> {
  const store = runLogs();
  try {
    const resumed = a.run!.stepsDone > 0 && (await store.getRun(a.runId)) !== null;
    if (resumed) {
      await store.truncateAfter(a.runId, a.run!.stepsDone - 1);
      await store.updateRun(a.runId, { status: 'running', error: null });
    } else
      await store.createRun({
        id: a.runId,
        recipe: a.recipe.name,
        spec: { recipe: a.recipe.name, seed: a.seed, config: a.config },
      });
  } catch (e) {
    console.warn(`run log unavailable: ${(e as Error).message}`);
  }
}

/**
 * The run's record says how it ended and why, so a reload offers to resume only a run that was
 * live, and the run lists say why it stopped.
 */
async function logEnd(a: ActiveRun, status: 'stopped' | 'finished' | 'failed', why: StopReason): Promise<void> {
  try {
    if (await runLogs().getRun(a.runId))
      await runLogs().updateRun(a.runId, { status, error: why.kind === 'error' ? why.text : null, stopReason: why });
  } catch (e) {
    console.warn(`run log end not written: ${(e as Error).message}`);
  }
}

async function logReport(a: ActiveRun, report: StepReport): Promise<void> {
  try {
    await runLogs().appendReports(a.runId, [report]);
  } catch (e) {
    console.warn(`run log not written (step ${report.step}): ${(e as Error).message}`);
  }
}

async function runLoop(a: ActiveRun): Promise<void> {
  try {
    detail = a.restoreFrom ? 'loading models and the checkpoint' : 'loading models';
    stepping = true;
    notify(a);
    a.run = await createTimedRun(a.recipe, browserEnv(), a.config as never, a.seed);
    if (a.restoreFrom) {
      await a.run.restore(a.restoreFrom);
      a.step = a.run.stepsDone;
      a.lastSavedStep = a.step;
      a.restoreFrom = null;
    }
    if (a.branchOf) {
      try {
        await openBranchLog(a.branchOf.runId, a.runId, a.branchOf.step);
      } catch (e) {
        console.warn(`branch log unavailable: ${(e as Error).message}`);
      }
      // The branch's own checkpoint at its first step: a reload offers this run, not the parent.
      await save(a, a.run, 'manual', `restored · step ${a.step}`);
    } else await openLog(a);
    detail = null;
    notify(a);
    while (!a.stopRequested) {
      await drainTasks(a, a.run);
      if (state === 'paused' && a.pendingSteps === 0) {
        if (pauseSaveDue(autosave, a.run.stepsDone, a.lastSavedStep)) {
          detail = 'saving a checkpoint';
          notify(a);
          await save(a, a.run, 'pause');
          if (state !== 'paused' || a.pendingSteps > 0 || a.tasks.length > 0 || a.stopRequested) continue;
        }
        detail = pauseNote;
        stepping = false;
        notify(a);
        await new Promise<void>((resolve) => {
          a.wake = resolve;
        });
        a.wake = null;
        continue;
      }
      const single = state === 'paused';
      if (single) a.pendingSteps--;
      detail = single ? 'single step' : null;
      stepping = true;
      let stepped;
      try {
        stepped = await a.run.step();
      } catch (e) {
        if (!(e instanceof NonFiniteError)) throw e;
        // Checked before the update: the run is still at its last good state. Save it and pause
        // with the message, instead of ending the run and losing the steps since the last save.
        detail = 'saving the last good state';
        notify(a);
        if (a.lastSavedStep === null || a.run.stepsDone > a.lastSavedStep) await save(a, a.run, 'pause');
        if (single) a.stepWaiters.shift()?.();
        a.pendingSteps = 0;
        state = 'paused';
        pauseNote = `paused: ${e.message}`;
        stepping = false;
        notify(a);
        continue;
      }
      pauseNote = null;
      const report = { ...stepped, runId: a.runId };
      a.step = a.run.stepsDone;
      a.lastMetrics = report.metrics;
      try {
        await a.onReport(report);
      } catch (e) {
        console.warn(`run report not delivered: ${(e as Error).message}`);
      }
      await logReport(a, report);
      if (autosaveDue(autosave, a.run.stepsDone, a.lastSavedStep)) {
        detail = 'saving a checkpoint';
        await save(a, a.run, 'autosave');
      }
      if (single) a.stepWaiters.shift()?.();
      if (a.run.done) break;
      notify(a);
      await nextTask();
    }
    // Nothing is lost at a stop: the state of the last step is saved before the run is freed
    // (unless the last save already holds it, or the user discards it).
    // A pause save of this very step is saved again as the stop's: Max steps "then stop" pauses at
    // the limit before it stops, and its run's last checkpoint read "pause · step 2" (issue 41).
    const savedAsStop = a.lastSavedStep === a.run.stepsDone && a.lastSaveReason !== 'pause';
    if (!a.discard && a.run.stepsDone > 0 && !savedAsStop) {
      detail = 'saving the final checkpoint';
      notify(a);
      await drainTasks(a, a.run);
      await save(a, a.run, 'stop');
    }
    await drainTasks(a, a.run);
    state = 'stopped';
    const why: StopReason = a.run.done
      ? { kind: 'early stop', text: a.run.stopReason ?? 'the recipe finished' }
      : { kind: a.stopAsked, text: a.stopAsked === 'step limit' ? `step ${a.run.stepsDone}` : null };
    stopReason = why;
    detail = stopLine(why) + (a.discard ? ' (discarded since the last checkpoint)' : '');
    await logEnd(a, a.run.done ? 'finished' : 'stopped', why);
  } catch (e) {
    state = 'error';
    error = (e as Error).message || String(e);
    stopReason = { kind: 'error', text: error };
    detail = null;
    console.error(`run ${a.runId} failed:`, e);
    await logEnd(a, 'failed', stopReason);
  } finally {
    lastEndedRunId = a.runId;
    stepping = false;
    try {
      a.run?.dispose();
    } catch (e) {
      console.warn(`run dispose failed: ${(e as Error).message}`);
    }
    a.run = null;
    for (const t of a.tasks.splice(0)) t.reject(new Error(`the run ${a.runId} ended (${state}) before this could run`));
    for (const w of a.stepWaiters.splice(0)) w();
    notify(a);
    releaseCallback(a.onReport);
    releaseCallback(a.onStatus);
  }
}

type Locks = { request(name: string, fn: () => Promise<void>): Promise<void> };

/** fn holding the run's Web Lock (another tab then knows the run is live here); without the API, fn as is. */
function holdingRunLock(runId: string, fn: () => Promise<void>): Promise<void> {
  const locks = (globalThis as { navigator?: { locks?: Locks } }).navigator?.locks;
  if (!locks) return fn();
  let ran = false;
  const held = () => {
    ran = true;
    return fn();
  };
  // A lock manager that refuses (an opaque origin) must not stop the run; fn itself never runs twice.
  return locks.request(runLock(runId), held).catch((e: unknown) => {
    if (ran) throw e;
    return fn();
  });
}

/** Validates and, when valid, starts a run (stopping an active one first). */
export async function startRun(
  recipeName: string,
  config: Record<string, unknown>,
  seed: number,
  onReport: ReportSink,
  onStatus?: StatusSink,
): Promise<StartRunResult> {
  return launch(recipeName, config, seed, onReport, onStatus, null);
}

/** Resumes a stored checkpoint: its recipe, config and seed, its tensors and counters, its run id. */
export async function resumeFromCheckpoint(
  id: string,
  onReport: ReportSink,
  onStatus?: StatusSink,
  opts: { paused?: boolean } = {},
): Promise<StartRunResult> {
  let payload: RecipeCheckpoint;
  let runId: string;
  let branchOf: { runId: string; step: number } | null = null;
  try {
    const c = await checkpoints().load(id);
    payload = fromStoredCheckpoint(c);
    runId = c.manifest.runId;
    // The live run's final checkpoint first, so "older than its newest" is decided on all of them.
    if (active && (state === 'running' || state === 'paused')) await stopRun();
    if (await restoresOlderCheckpoint(runId, payload.step)) {
      branchOf = { runId, step: payload.step };
      runId = branchId(runId, payload.step, stamp());
    }
  } catch (e) {
    return { ok: false, errors: { checkpoint: (e as Error).message } };
  }
  return launch(payload.recipe, payload.config, payload.seed, onReport, onStatus, {
    payload,
    runId,
    branchOf,
    paused: opts.paused === true,
  });
}

async function launch(
  recipeName: string,
  config: Record<string, unknown>,
  seed: number,
  onReport: ReportSink,
  onStatus: StatusSink | undefined,
  resume: {
    payload: RecipeCheckpoint;
    runId: string;
    branchOf?: { runId: string; step: number } | null;
    paused: boolean;
  } | null,
): Promise<StartRunResult> {
  if (!hasRecipe(recipeName))
    return {
      ok: false,
      errors: { recipe: `unknown recipe ${brief(recipeName)} (recipes: ${recipeNames().join(', ')})` },
    };
  const recipe = getRecipe(recipeName);
  const errors: Record<string, string> = {};
  if (typeof seed !== 'number' || !Number.isInteger(seed) || seed < 0)
    errors.seed = `seed must be a non-negative integer, got ${brief(seed)}`;
  const v = validateRecipeConfig(recipe, config);
  Object.assign(errors, v.errors, datasetRefErrors(v.config as Record<string, unknown>));
  if (Object.keys(errors).length > 0) return { ok: false, errors };

  if (active && (state === 'running' || state === 'paused')) await stopRun();
  const a: ActiveRun = {
    recipe,
    seed,
    runId: resume?.runId ?? `${recipe.name}-${seed}-${stamp()}`,
    config: v.config as Record<string, unknown>,
    restoreFrom: resume?.payload ?? null,
    branchOf: resume?.branchOf ?? null,
    run: null,
    tasks: [],
    lastSavedStep: null,
    lastSaveReason: null,
    lastMetrics: undefined,
    step: resume?.payload.step ?? 0,
    stopRequested: false,
    stopAsked: 'user',
    discard: false,
    pendingSteps: 0,
    stepWaiters: [],
    wake: null,
    onReport,
    onStatus,
    loop: Promise.resolve(),
  };
  active = a;
  state = resume?.paused ? 'paused' : 'running';
  error = null;
  detail = null;
  stopReason = null;
  a.loop = holdingRunLock(a.runId, () => runLoop(a));
  return { ok: true, status: runStatus() };
}

export function pauseRun(): RunStatus {
  if (active && state === 'running') {
    state = 'paused';
    notify(active);
  }
  return runStatus();
}

export function resumeRun(): RunStatus {
  if (active && state === 'paused') {
    state = 'running';
    active.wake?.();
    notify(active);
  }
  return runStatus();
}

/** One step while paused; resolves after it ran (or the run ended). Otherwise a no-op. */
export async function stepRun(): Promise<RunStatus> {
  const a = active;
  if (!a || state !== 'paused') return runStatus();
  const done = new Promise<void>((resolve) => a.stepWaiters.push(resolve));
  a.pendingSteps++;
  a.wake?.();
  await done;
  return runStatus();
}

export async function stopRun(opts: { discard?: boolean; reason?: RequestedStop } = {}): Promise<RunStatus> {
  const a = active;
  if (a && (state === 'running' || state === 'paused')) {
    if (!a.stopRequested) a.stopAsked = opts.reason ?? 'user';
    a.stopRequested = true;
    if (opts.discard === true) a.discard = true;
    detail = 'stopping';
    a.wake?.();
    await a.loop;
  }
  return runStatus();
}

// ---------------------------------------------------------------------------------------------
// Checkpoints and adapters of the active run

export function setAutosave(policy: AutosavePolicy): AutosavePolicy {
  autosave = checkAutosavePolicy(policy);
  return { ...autosave };
}

export function watchCheckpoints(sink: (e: CheckpointEvent) => unknown): void {
  releaseCallback(checkpointSink);
  checkpointSink = sink;
}

/** Runs fn on the active run between two steps (now, if the run waits in pause). */
export function atBoundary<T>(fn: (run: RecipeRun, a: ActiveRun) => Promise<T>): Promise<T> {
  const a = active;
  if (!a || (state !== 'running' && state !== 'paused')) {
    return Promise.reject(new Error('no active run (start a run, or resume one from a checkpoint, first)'));
  }
  return new Promise<T>((resolve, reject) => {
    a.tasks.push({ fn: (run) => fn(run, a), resolve: resolve as (v: unknown) => void, reject });
    a.wake?.();
  });
}

export function saveCheckpointNow(name?: string): Promise<CheckpointEvent> {
  return atBoundary((run, a) => save(a, run, 'manual', name));
}

/**
 * fn on a run rebuilt from the newest (finite) checkpoint of `runId` (default: the run that ended
 * last here), freed after: how a stopped or finished run, or one from before a reload, exports.
 */
export async function withStoredRun<T>(
  runId: string | undefined,
  fn: (run: RecipeRun, spec: { recipe: AnyRecipe; config: Record<string, unknown> }) => Promise<T>,
): Promise<T> {
  const id = runId ?? lastEndedRunId;
  if (!id) throw new Error('no run to export yet: start a run (or resume one from a checkpoint) first');
  const list = (await checkpoints().list(id)).filter((c) => c.nonFinite === null);
  if (list.length === 0)
    throw new Error(`run ${id} has no checkpoint to export from (it stopped before its first step, or was discarded)`);
  const newest = list.reduce((b, c) => (c.step > b.step || (c.step === b.step && c.time > b.time) ? c : b));
  const payload = fromStoredCheckpoint(await checkpoints().load(newest.id));
  if (!hasRecipe(payload.recipe)) throw new Error(`run ${id}: recipe ${brief(payload.recipe)} is not registered`);
  const recipe = getRecipe(payload.recipe);
  const v = validateRecipeConfig(recipe, payload.config);
  if (Object.keys(v.errors).length > 0)
    throw new Error(`run ${id}: its stored config no longer validates: ${Object.values(v.errors).join('; ')}`);
  const config = v.config as Record<string, unknown>;
  const run = await createTimedRun(recipe, browserEnv(), config as never, payload.seed);
  try {
    await run.restore(payload);
    return await fn(run, { recipe, config });
  } finally {
    run.dispose();
  }
}

/** Whether an export reads the active run (it is live and is the one asked for). */
export function exportsActive(runId: string | undefined): boolean {
  return (
    active !== null && (state === 'running' || state === 'paused') && (runId === undefined || runId === active.runId)
  );
}

/** The active run's recipe and config (for adapter export / import). */
export function activeRunSpec(): { recipe: AnyRecipe; config: Record<string, unknown> } | null {
  return active && (state === 'running' || state === 'paused')
    ? { recipe: active.recipe, config: active.config }
    : null;
}
