// Checkpoint autosave of the worker's run: when a save is due and how one is written.
//
// The worker writes checkpoints to IndexedDB itself (idb-keyval works in workers): the LoRA and
// AdamW tensors already sit here after run.state(), so nothing is copied across to the page, a
// save happens exactly at a step boundary of the loop that owns the run, and it goes on while the
// page is busy. The page reads the same database for the list, renames and deletes.
//
// A save never throws: it returns an event (saved, or failed with the storage layer's message).
// A failed save (quota exceeded) leaves every earlier checkpoint intact and the run goes on.
import type { Metrics } from '../contract/report';
import { toCheckpointInput } from '../recipes/kit/state';
import type { RecipeRun } from '../recipes/kit/types';
import { CheckpointStore, StorageError } from '../storage';
import type { AutosavePolicy, CheckpointEvent, CheckpointReason } from '../contract/workerApi';
import { brief } from '../contract/brief';

export const DEFAULT_AUTOSAVE: AutosavePolicy = { everySteps: 5, onPause: true, keep: 5 };

/** Checks a policy from the page; throws one error naming the bad field. */
export function checkAutosavePolicy(p: unknown): AutosavePolicy {
  const o = (p ?? {}) as Partial<AutosavePolicy>;
  if (
    typeof o.everySteps !== 'number' ||
    !Number.isSafeInteger(o.everySteps) ||
    o.everySteps < 0 ||
    o.everySteps > 1_000_000
  ) {
    throw new Error(
      `autosave: field "everySteps" must be an integer in [0, 1000000] (0 = off), got ${brief(o.everySteps)}`,
    );
  }
  if (typeof o.onPause !== 'boolean')
    throw new Error(`autosave: field "onPause" must be true or false, got ${brief(o.onPause)}`);
  if (typeof o.keep !== 'number' || !Number.isSafeInteger(o.keep) || o.keep < 0 || o.keep > 10_000) {
    throw new Error(`autosave: field "keep" must be an integer in [0, 10000] (0 = keep all), got ${brief(o.keep)}`);
  }
  return { everySteps: o.everySteps, onPause: o.onPause, keep: o.keep };
}

/** Whether the step count just reached calls for a save (every N completed steps, once each). */
export function autosaveDue(policy: AutosavePolicy, stepsDone: number, lastSavedStep: number | null): boolean {
  return policy.everySteps > 0 && stepsDone > 0 && stepsDone % policy.everySteps === 0 && lastSavedStep !== stepsDone;
}

/** Whether entering pause calls for a save (not twice for the same step). */
export function pauseSaveDue(policy: AutosavePolicy, stepsDone: number, lastSavedStep: number | null): boolean {
  return policy.onPause && stepsDone > 0 && lastSavedStep !== stepsDone;
}

/**
 * Names of automatic saves; a renamed checkpoint no longer matches and is kept for good. The
 * final save at a stop ("stopped · step N") never matches either: pruning must not delete the
 * run's last state.
 */
export const autoName = (reason: 'autosave' | 'pause' | 'stop', step: number) =>
  `${reason === 'stop' ? 'stopped' : reason} · step ${step}`;
const AUTO_NAME = /^(autosave|pause) · step \d+$/;

/**
 * Deletes a run's automatic saves beyond the newest `keep` (by step); returns the deleted ids.
 * Manual and renamed checkpoints are never touched.
 */
export async function pruneAutosaves(store: CheckpointStore, runId: string, keep: number): Promise<string[]> {
  if (keep <= 0) return [];
  const auto = (await store.list(runId))
    .filter((c) => AUTO_NAME.test(c.name))
    .sort((a, b) => b.step - a.step || b.time - a.time);
  const gone = auto.slice(keep).map((c) => c.id);
  for (const id of gone) await store.delete(id);
  return gone;
}

/** Saves the run's state under `runId`; resolves to what happened (never rejects). */
export async function saveRunCheckpoint(
  store: CheckpointStore,
  run: RecipeRun,
  runId: string,
  metrics: Metrics | undefined,
  reason: CheckpointReason,
  name?: string,
): Promise<CheckpointEvent> {
  const step = run.stepsDone;
  try {
    const payload = await run.state();
    const input = toCheckpointInput(payload, runId, metrics);
    const m = await store.save({
      ...input,
      name: name ?? (reason === 'manual' ? `saved · step ${step}` : autoName(reason, step)),
    });
    return { kind: 'saved', reason, runId, step, id: m.id, name: m.name, sizeBytes: m.sizeBytes };
  } catch (e) {
    const code = e instanceof StorageError ? e.code : 'error';
    return { kind: 'failed', reason, runId, step, code, message: (e as Error).message || String(e) };
  }
}
