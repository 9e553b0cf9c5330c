// The worker API for checkpoints, adapters and uploaded datasets (part of EngineApi). Plain data
// only: zips and safetensors travel as bytes, never tensors.
import type { StepReport } from '../contract/report.ts';
import type { RunStatus, StartRunResult } from './protocol';

/** When the worker saves a checkpoint of the active run on its own. */
export interface AutosavePolicy {
  /** Save after every N completed steps (0 = never). */
  everySteps: number;
  /** Save when the run enters pause. */
  onPause: boolean;
  /** Keep this many automatic saves per run, deleting older ones (0 = keep all). Renamed ones are never deleted. */
  keep: number;
}

export type CheckpointReason = 'autosave' | 'pause' | 'manual';

export type CheckpointEvent =
  | { kind: 'saved'; reason: CheckpointReason; runId: string; step: number; id: string; name: string; sizeBytes: number }
  /** Nothing was lost: earlier checkpoints are intact and the run continues. `code` 'quota' = storage full. */
  | { kind: 'failed'; reason: CheckpointReason; runId: string; step: number; code: string; message: string };

export interface FileBytes {
  fileName: string;
  bytes: Uint8Array;
  /** Something the person should know about the file (a merged export of a quantised base). */
  note?: string;
}

export type ImportAdapterResult =
  | { ok: true; fileName: string; baseModel: string | null; baseMismatch: boolean; r: number; tensors: number; step: number }
  | { ok: false; error: string };

export interface DatasetInfo {
  /** What a recipe's dataset field takes (readText(ref) returns the stored text). */
  ref: string;
  rows: number;
  bytes: number;
}

/** Greedy continuation of one prompt by the run's model with its current adapter. */
export interface AdapterOutputs {
  ids: number[];
  text: string;
  /** Log-prob of each generated token. */
  logprobs: number[];
}

export interface StorageApi {
  setAutosave(policy: AutosavePolicy): Promise<AutosavePolicy>;
  /** One listener for every checkpoint event of every run (replaces the previous one). */
  watchCheckpoints(onEvent: (e: CheckpointEvent) => void): Promise<void>;
  /** Save the active run now (at the next step boundary); resolves with what happened. */
  saveCheckpoint(name?: string): Promise<CheckpointEvent>;
  /**
   * Start the checkpoint's recipe with its config and seed, restore its tensors, optimiser and
   * RNG counters, and continue from its step under its run id (stopping an active run first).
   */
  resumeFromCheckpoint(
    id: string,
    onReport: (report: StepReport) => void,
    onStatus?: (status: RunStatus) => void,
    opts?: { paused?: boolean },
  ): Promise<StartRunResult>;
  /** The active run's adapter as a PEFT folder zip. */
  exportAdapter(): Promise<FileBytes>;
  /** The active run's model with its adapter merged in, as a Hugging Face model.safetensors. */
  exportMerged(): Promise<FileBytes>;
  /** Validate an adapter zip against the run (base model, shapes, rank, alpha, targets) and load it. */
  importAdapter(zip: Uint8Array, fileName: string, opts?: { allowBaseMismatch?: boolean }): Promise<ImportAdapterResult>;
  /** Greedy tokens of the run's model + adapter on a chat prompt (compare runs and imports). */
  adapterOutputs(prompt: string, maxNewTokens: number): Promise<AdapterOutputs>;
  /** Store an uploaded dataset (already read and checked by the page) in IndexedDB for readText. */
  putDataset(fileName: string, text: string, rows: number): Promise<DatasetInfo>;
  listDatasets(): Promise<DatasetInfo[]>;
  /** Remove a stored upload; false when there was none. */
  deleteDataset(ref: string): Promise<boolean>;
}
