// The lab's IndexedDB layout, shared by the worker's storage layer (storage/, which writes) and the
// page (store/, which lists, renames, deletes and reads logs): database names, keys, record shapes.
// Plain data and pure functions; the idb-keyval calls live on each side.
import type { Metrics, StepReport } from './report';
import type { StopReason } from './stopReason';

export const CHECKPOINT_DB = 'sparring-checkpoints';
export const RUNS_DB = 'sparring-runs';

// Checkpoints:  m/<id>                  the manifest
//               c/<id>/<chunk number>   a chunk (an ArrayBuffer)
export const MANIFEST_PREFIX = 'm/';
export const CHUNK_PREFIX = 'c/';
export const manifestKey = (id: string): string => `${MANIFEST_PREFIX}${id}`;
export const chunkPrefix = (id: string): string => `${CHUNK_PREFIX}${id}/`;

// Run logs:  r/<runId>                 RunRecord
//            l/<runId>/<batch number>  LogBatch: a run of consecutive StepReports
export const RECORD_PREFIX = 'r/';
export const recordKey = (id: string): string => `${RECORD_PREFIX}${id}`;
export const logPrefix = (id: string): string => `l/${id}/`;

/**
 * Saves hold this Web Lock shared and the orphan collector exclusive (if free), so a collector in
 * one tab never takes the chunks of a save under way in another tab or in a worker.
 */
export const CHUNK_LOCK = 'sparring-checkpoint-chunks';

/**
 * A worker holds this Web Lock while its run is live (released when the run ends or the worker
 * dies): a page that finds a run that never ended tells a run live in another tab from one
 * whose tab went away.
 */
export const runLock = (runId: string): string => `sparring-run/${runId}`;

export type TensorDtype = 'float32' | 'int32';

/** Which part of the training state a tensor belongs to. */
export type TensorGroup = 'params' | 'optimizer';

export interface TensorIndexEntry {
  name: string;
  group: TensorGroup;
  dtype: TensorDtype;
  shape: number[];
  /** Byte offset of the tensor in the concatenated stream of all tensors. */
  offset: number;
  byteLength: number;
  /** Keys of the chunks its bytes live in, first to last (empty for a zero-size tensor). */
  chunks: string[];
}

export interface ChunkEntry {
  key: string;
  byteLength: number;
}

export const CHECKPOINT_FORMAT = 1;

export interface CheckpointManifest {
  format: typeof CHECKPOINT_FORMAT;
  id: string;
  runId: string;
  name: string;
  step: number;
  /** When it was saved (ms since epoch). */
  time: number;
  /** Metrics snapshot at this step (NaN allowed: IndexedDB stores it, JSON would not). */
  metrics: Metrics;
  /** Total tensor bytes (what the chunks hold). */
  sizeBytes: number;
  /** The run spec / recipe config (JSON). */
  spec: unknown;
  tensors: TensorIndexEntry[];
  chunks: ChunkEntry[];
  /** Optimiser state that is not tensors (step count, betas, lr schedule position ...). */
  optimizerState: unknown;
  rng: unknown;
  extra: unknown;
  /** Set when the save was forced despite NaN/Infinity: says which tensor, which element. */
  nonFinite: string | null;
}

/** What list() returns: the manifest without its index. */
export type CheckpointSummary = Omit<
  CheckpointManifest,
  'tensors' | 'chunks' | 'spec' | 'optimizerState' | 'rng' | 'extra'
> & {
  tensorCount: number;
};

export type RunStatus = 'created' | 'running' | 'paused' | 'finished' | 'stopped' | 'failed';

export interface RunRecord {
  id: string;
  recipe: string;
  name: string;
  /** The RunSpec (recipe config, models, judge, dataset, seed) as JSON. */
  spec: unknown;
  /** ms since epoch */
  created: number;
  updated: number;
  /** Step of the newest logged report (null before the first). */
  lastStep: number | null;
  reportCount: number;
  status: RunStatus;
  /** Why a failed run failed. */
  error: string | null;
  /** Why the run ended (absent while it runs, and in records written before reasons were kept). */
  stopReason?: StopReason | null;
  /** JSON bytes of its logged reports (absent in records written before it was counted). */
  logBytes?: number;
  /**
   * A run restored from an older checkpoint of another run: that run and the checkpoint's step.
   * Its log starts with a copy of the parent's steps before `step`; the parent keeps all of its own.
   */
  branchOf?: { runId: string; step: number };
}

export interface LogBatch {
  firstStep: number;
  lastStep: number;
  reports: StepReport[];
}

/** What list() shows of a manifest. */
export function summarizeCheckpoint(m: CheckpointManifest): CheckpointSummary {
  return {
    format: m.format,
    id: m.id,
    runId: m.runId,
    name: m.name,
    step: m.step,
    time: m.time,
    metrics: m.metrics,
    sizeBytes: m.sizeBytes,
    nonFinite: m.nonFinite,
    tensorCount: m.tensors.length,
  };
}

/** Newest first: by time, then step, then id. */
export function newestFirst(a: CheckpointSummary, b: CheckpointSummary): number {
  return b.time - a.time || b.step - a.step || (a.id < b.id ? -1 : 1);
}

/** Chunk keys no manifest points at, given every manifest key and chunk key (ids in `saving` excluded). */
export function orphanChunks(
  manifestKeys: readonly string[],
  chunkKeys: readonly string[],
  saving: ReadonlySet<string> = new Set(),
): string[] {
  const ids = new Set(manifestKeys.map((k) => k.slice(MANIFEST_PREFIX.length)));
  return chunkKeys.filter((k) => {
    const id = k.slice(CHUNK_PREFIX.length, k.lastIndexOf('/'));
    return !ids.has(id) && !saving.has(id);
  });
}

/** Run records newest first. */
export function runsNewestFirst(a: RunRecord, b: RunRecord): number {
  return b.created - a.created || (a.id < b.id ? -1 : 1);
}

/** JSON bytes of logged reports (a fair proxy for their stored size). */
export const reportBytes = (reports: readonly StepReport[]): number =>
  reports.reduce((a, r) => a + JSON.stringify(r).length, 0);

/** One StepReport per line, each line ending in "\n" (NaN/Infinity metrics become null). */
export function reportsToJsonl(reports: readonly StepReport[]): string {
  return reports.map((r) => `${JSON.stringify(r)}\n`).join('');
}
