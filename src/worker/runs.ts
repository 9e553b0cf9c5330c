// The worker's run controller: one recipe run at a time, stepped in a loop that yields between
// steps, so pause / resume / single-step / stop take effect at step boundaries. Reports leave as
// plain data through a callback (a comlink proxy from the UI); the run's tensors never leave.
// A recipe that throws puts the controller in state `error` and frees the run; the worker stays
// usable for the next start.
import * as Comlink from 'comlink';
import * as tf from '@tensorflow/tfjs';
import { urlRecipeEnv } from '../recipes/env';
import type { StepReport } from '../recipes/report';
import { getRecipe, hasRecipe, listRecipes as registeredRecipes, recipeNames } from '../recipes/registry';
import { validateConfig } from '../recipes/schema';
import type { AnyRecipe, RecipeEnv, RecipeRun } from '../recipes/types';
import type { RecipeListing, RunState, RunStatus, StartRunResult } from './protocol';

type ReportSink = (report: StepReport) => unknown;
type StatusSink = (status: RunStatus) => unknown;

interface ActiveRun {
  recipe: AnyRecipe;
  seed: number;
  runId: string;
  run: RecipeRun | null;
  step: number;
  stopRequested: boolean;
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
let active: ActiveRun | null = null;
let stepping = false;

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
  }));
}

/** The browser env: sandbox names load the site's /models/NAME/ (wherever the worker script lives). */
function browserEnv(): RecipeEnv {
  const modelsBase = new URL(`${import.meta.env.BASE_URL}models/`, self.location.origin).href;
  return urlRecipeEnv({ modelsBase, backend: tf.getBackend() });
}

function stamp(): string {
  const d = new Date();
  return [d.getHours(), d.getMinutes(), d.getSeconds()].map((n) => String(n).padStart(2, '0')).join('');
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

async function runLoop(a: ActiveRun, config: Record<string, unknown>): Promise<void> {
  try {
    detail = 'loading models';
    stepping = true;
    notify(a);
    a.run = await a.recipe.create(browserEnv(), config as never, a.seed);
    detail = null;
    notify(a);
    while (!a.stopRequested) {
      if (state === 'paused' && a.pendingSteps === 0) {
        detail = null;
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
      const report = await a.run.step();
      a.step = a.run.stepsDone;
      try {
        await a.onReport({ ...report, runId: a.runId });
      } catch (e) {
        console.warn(`run report not delivered: ${(e as Error).message}`);
      }
      if (single) a.stepWaiters.shift()?.();
      if (a.run.done) {
        detail = `early stop: ${a.run.stopReason ?? 'the recipe finished'}`;
        break;
      }
      notify(a);
      await nextTask();
    }
    state = 'stopped';
    if (a.stopRequested) detail = 'stopped';
  } catch (e) {
    state = 'error';
    error = (e as Error).message || String(e);
    detail = null;
    console.error(`run ${a.runId} failed:`, e);
  } finally {
    stepping = false;
    try {
      a.run?.dispose();
    } catch (e) {
      console.warn(`run dispose failed: ${(e as Error).message}`);
    }
    a.run = null;
    for (const w of a.stepWaiters.splice(0)) w();
    notify(a);
    releaseCallback(a.onReport);
    releaseCallback(a.onStatus);
  }
}

/** Validates and, when valid, starts a run (stopping an active one first). */
export async function startRun(recipeName: string, config: Record<string, unknown>, seed: number, onReport: ReportSink, onStatus?: StatusSink): Promise<StartRunResult> {
  if (!hasRecipe(recipeName)) return { ok: false, errors: { recipe: `unknown recipe "${recipeName}" (recipes: ${recipeNames().join(', ')})` } };
  const recipe = getRecipe(recipeName);
  const errors: Record<string, string> = {};
  if (typeof seed !== 'number' || !Number.isInteger(seed) || seed < 0) errors.seed = `seed must be a non-negative integer, got ${JSON.stringify(seed)}`;
  const v = validateConfig(recipe.schema, config);
  Object.assign(errors, v.errors);
  if (Object.keys(errors).length > 0) return { ok: false, errors };

  if (active && (state === 'running' || state === 'paused')) await stopRun();
  const a: ActiveRun = {
    recipe,
    seed,
    runId: `${recipe.name}-${seed}-${stamp()}`,
    run: null,
    step: 0,
    stopRequested: false,
    pendingSteps: 0,
    stepWaiters: [],
    wake: null,
    onReport,
    onStatus,
    loop: Promise.resolve(),
  };
  active = a;
  state = 'running';
  error = null;
  detail = null;
  a.loop = runLoop(a, v.config as Record<string, unknown>);
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

export async function stopRun(): Promise<RunStatus> {
  const a = active;
  if (a && (state === 'running' || state === 'paused')) {
    a.stopRequested = true;
    detail = 'stopping';
    a.wake?.();
    await a.loop;
  }
  return runStatus();
}
