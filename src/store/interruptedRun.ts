// Which run was live when the page went away (a reload, a closed tab, a crash): the worker and
// the run died with it, but its record in the run log never got an end mark (the worker writes
// stopped / finished / failed when a run ends) and its checkpoints are in IndexedDB. The run
// panel shows that run paused at its newest checkpoint, and Resume continues it from there.
import type { CheckpointSummary, RunRecord } from '../contract/storageFormat';

/** Statuses of a run whose end was never recorded. */
const OPEN = new Set<RunRecord['status']>(['created', 'running', 'paused']);

export interface InterruptedRun {
  record: RunRecord;
  /** The newest finite checkpoint of the run: where Resume continues from. */
  checkpoint: CheckpointSummary;
}

/** Names of the Web Locks held now on this origin (empty without the API). */
export async function heldLocks(): Promise<Set<string>> {
  const locks = (globalThis as { navigator?: { locks?: { query(): Promise<{ held?: { name?: string }[] }> } } })
    .navigator?.locks;
  if (!locks) return new Set();
  const q = await locks.query();
  return new Set((q.held ?? []).map((l) => l.name ?? ''));
}

type LockManager = {
  request(name: string, opts: { signal?: AbortSignal }, fn: () => Promise<void>): Promise<void>;
};

/**
 * Resolves true once the Web Lock `name` is free (taken and let go at once), false when it is
 * still held after `timeoutMs` (no limit: waits as long as it is held). Without the API, true.
 */
export async function lockFreed(name: string, timeoutMs?: number): Promise<boolean> {
  const locks = (globalThis as { navigator?: { locks?: LockManager } }).navigator?.locks;
  if (!locks) return true;
  try {
    await locks.request(
      name,
      timeoutMs === undefined ? {} : { signal: AbortSignal.timeout(timeoutMs) },
      async () => {},
    );
    return true;
  } catch (e) {
    if ((e as Error).name === 'AbortError' || (e as Error).name === 'TimeoutError') return false;
    throw e;
  }
}

/**
 * The newest run (by its record's last update) that never ended, is not live in another tab, and has a finite checkpoint, with
 * that checkpoint (the highest step; the newest among equal steps); null when there is none.
 */
export function interruptedRun(
  records: readonly RunRecord[],
  checkpoints: readonly CheckpointSummary[],
  /** Runs live in another tab now (their worker holds runLock(id)): not interrupted. */
  liveElsewhere: ReadonlySet<string> = new Set(),
): InterruptedRun | null {
  const open = records
    .filter((r) => OPEN.has(r.status) && !liveElsewhere.has(r.id))
    .sort((a, b) => b.updated - a.updated || b.created - a.created);
  for (const record of open) {
    let best: CheckpointSummary | null = null;
    for (const c of checkpoints) {
      if (c.runId !== record.id || c.nonFinite !== null) continue;
      if (!best || c.step > best.step || (c.step === best.step && c.time > best.time)) best = c;
    }
    if (best) return { record, checkpoint: best };
  }
  return null;
}
