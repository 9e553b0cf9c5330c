// The page's view of the lab's IndexedDB: the worker writes checkpoints and run logs (storage/),
// the page lists, renames and deletes checkpoints, counts what is stored and reads logs back.
// idb-keyval calls over the layout both sides share (contract/storageFormat.ts).
import { storageEstimate, type StorageEstimateResult } from '../contract/browserStorage';
import {
  CHECKPOINT_DB,
  CHUNK_LOCK,
  CHUNK_PREFIX,
  chunkPrefix,
  logPrefix,
  MANIFEST_PREFIX,
  manifestKey,
  newestFirst,
  orphanChunks,
  RECORD_PREFIX,
  recordKey,
  reportBytes,
  reportsToJsonl,
  RUNS_DB,
  runsNewestFirst,
  summarizeCheckpoint,
  type CheckpointManifest,
  type CheckpointSummary,
  type LogBatch,
  type RunRecord,
} from '../contract/storageFormat';
import type { StepReport } from '../contract/report';
import { idbKv, type Kv } from '../contract/kv';
import type { StopReason } from '../contract/stopReason';

type LockManagerLike = {
  request<T>(
    name: string,
    opts: { mode: 'exclusive'; ifAvailable: boolean },
    cb: (lock: unknown) => Promise<T>,
  ): Promise<T>;
};

/** Runs `fn` holding the chunk lock exclusive if it is free (`held` false when a save holds it); without Web Locks, as is. */
function ifNoSave<T>(fn: (held: boolean) => Promise<T>): Promise<T> {
  const locks = (globalThis as { navigator?: { locks?: LockManagerLike } }).navigator?.locks;
  if (!locks) return fn(true);
  return locks.request(CHUNK_LOCK, { mode: 'exclusive', ifAvailable: true }, (lock) => fn(lock !== null));
}

function byteLengthOf(v: unknown): number {
  if (ArrayBuffer.isView(v)) return v.byteLength;
  if (Object.prototype.toString.call(v) === '[object ArrayBuffer]') return (v as ArrayBuffer).byteLength;
  return 0;
}

export interface CheckpointUsage {
  checkpoints: number;
  checkpointBytes: number;
  orphanChunks: number;
  orphanBytes: number;
  usage: number | null;
  quota: number | null;
}

/** The checkpoints as the Checkpoints panel handles them. */
export class PageCheckpoints {
  constructor(
    readonly kv: Kv = idbKv(CHECKPOINT_DB),
    private readonly estimate: () => Promise<StorageEstimateResult> = storageEstimate,
  ) {}

  async list(): Promise<CheckpointSummary[]> {
    return (await this.kv.values<CheckpointManifest>(MANIFEST_PREFIX)).map(summarizeCheckpoint).sort(newestFirst);
  }

  async rename(id: string, name: string): Promise<void> {
    if (typeof name !== 'string' || name.trim() === '')
      throw new Error(`Checkpoint "${id}": a name must be a non-empty string`);
    const m = await this.kv.get<CheckpointManifest>(manifestKey(id));
    if (!m)
      throw new Error(`No checkpoint with id "${id}" in IndexedDB (deleted, or saved in another browser profile)`);
    await this.kv.set(manifestKey(id), { ...m, name: name.trim() });
  }

  /** Manifest first (the checkpoint is gone at once), then its chunks; as the worker's store deletes. */
  async delete(id: string): Promise<boolean> {
    const m = await this.kv.get<CheckpointManifest>(manifestKey(id));
    if (m) await this.kv.del(manifestKey(id));
    const keys = new Set([...(m?.chunks.map((c) => c.key) ?? []), ...(await this.kv.keys(chunkPrefix(id)))]);
    if (keys.size > 0) await this.kv.delMany([...keys]);
    return !!m;
  }

  private async orphanKeys(): Promise<string[]> {
    return orphanChunks(await this.kv.keys(MANIFEST_PREFIX), await this.kv.keys(CHUNK_PREFIX));
  }

  /** Removes chunks of saves killed before their manifest; skipped (0) while a save holds the chunk lock. */
  async gcOrphanChunks(): Promise<number> {
    return ifNoSave(async (held) => {
      if (!held) return 0;
      const orphans = await this.orphanKeys();
      if (orphans.length) await this.kv.delMany(orphans);
      return orphans.length;
    });
  }

  async usage(): Promise<CheckpointUsage> {
    const l = await this.list();
    const { orphans, orphanBytes } = await ifNoSave(async (held) => {
      const keys = held ? await this.orphanKeys() : [];
      let bytes = 0;
      for (const k of keys) bytes += byteLengthOf(await this.kv.get<unknown>(k));
      return { orphans: keys, orphanBytes: bytes };
    });
    const est = await this.estimate().catch(() => ({ usage: null, quota: null }));
    return {
      checkpoints: l.length,
      checkpointBytes: l.reduce((a, c) => a + c.sizeBytes, 0),
      orphanChunks: orphans.length,
      orphanBytes,
      usage: est.usage,
      quota: est.quota,
    };
  }
}

/** The run logs as the page reads them (the worker appends them). */
export class PageRunLogs {
  constructor(readonly kv: Kv = idbKv(RUNS_DB)) {}

  async getRun(id: string): Promise<RunRecord | null> {
    return (await this.kv.get<RunRecord>(recordKey(id))) ?? null;
  }

  /** Every run record, newest first. */
  async listRuns(): Promise<RunRecord[]> {
    return (await this.kv.values<RunRecord>(RECORD_PREFIX)).sort(runsNewestFirst);
  }

  /**
   * Marks a run ended (the page ends a run the worker no longer holds: one that was live before a
   * reload and that the user stopped instead of resuming). False when there is no such record.
   */
  async markEnded(id: string, status: 'stopped' | 'finished', stopReason: StopReason | null = null): Promise<boolean> {
    const r = await this.getRun(id);
    if (!r) return false;
    await this.kv.set(recordKey(id), { ...r, status, stopReason, updated: Date.now() });
    return true;
  }

  /**
   * Marks a run failed with its reason (the page's engine watchdog ends a run whose worker it had
   * to terminate). Its log and checkpoints are untouched. False when there is no such record.
   */
  /** The run failed (`kind` says who ended it: the watchdog, or an error); the reason is kept as `markEnded`'s is. */
  async markFailed(id: string, error: string, kind: 'error' | 'watchdog' = 'error'): Promise<boolean> {
    const r = await this.getRun(id);
    if (!r) return false;
    const stopReason: StopReason = { kind, text: error };
    await this.kv.set(recordKey(id), { ...r, status: 'failed', error, stopReason, updated: Date.now() });
    return true;
  }

  /** The run's reports in append order, optionally limited to steps in [fromStep, toStep]. */
  async readReports(runId: string, range: { fromStep?: number; toStep?: number } = {}): Promise<StepReport[]> {
    const lo = range.fromStep ?? -Infinity;
    const hi = range.toStep ?? Infinity;
    const out: StepReport[] = [];
    for (const b of await this.kv.values<LogBatch>(logPrefix(runId)))
      for (const r of b.reports) if (r.step >= lo && r.step <= hi) out.push(r);
    return out;
  }

  async usage(): Promise<{ runs: number; logBytes: number }> {
    const all = (await this.kv.values<RunRecord>(RECORD_PREFIX)).sort(runsNewestFirst);
    let logBytes = 0;
    for (const r of all) {
      if (r.logBytes !== undefined) logBytes += r.logBytes;
      else for (const b of await this.kv.values<LogBatch>(logPrefix(r.id))) logBytes += reportBytes(b.reports);
    }
    return { runs: all.length, logBytes };
  }

  async exportJsonl(runId: string): Promise<string> {
    if (!(await this.getRun(runId))) throw new Error(`No run with id "${runId}" in IndexedDB`);
    return reportsToJsonl(await this.readReports(runId));
  }
}
