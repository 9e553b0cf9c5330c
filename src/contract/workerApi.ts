// The typed contract between the UI thread and the engine worker: the methods the lab itself
// calls (runs, checkpoints, adapters, datasets, the veRL job) and their types. Only plain data
// crosses it: the worker owns tfjs and every tensor; the UI never holds one. The checks,
// benchmarks and A/B switches the tests drive live in dev/harness/harnessApi.ts.
import type { BackendPreference, BackendReport } from './backends';
import type { GpuProbe } from './gpuProbe';
import type { StepReport } from './report';
import type { Lesson } from './lesson';
import type { Schema } from './schema';
import type { RequestedStop, StopReason } from './stopReason';
import type { Vocabulary } from './vocabulary';

/** What the subgroup probe kernel saw on this device (one 256-thread workgroup). */
export interface SubgroupLayout {
  /** Every subgroup is a run of consecutive local indices starting at a multiple of its size. */
  contiguous: boolean;
  /** Subgroup sizes seen. */
  sizes: number[];
  /** Lower bound the kernels plan their reduction levels for (adapter's subgroupMinSize, else 4). */
  minSize: number;
}

/** What the engine reports about subgroups: the device's layout and whether kernels use it. */
export interface SubgroupStatus {
  layout: SubgroupLayout | null;
  active: boolean;
}

export interface MemoryInfo {
  numTensors: number;
  numBytes: number;
}

/** On tfjs-wasm: whether Sparring's own kernels (src/engine/kernels/wasmGemm.ts) run its products and fused ops. */
export interface WasmKernelStatus {
  ours: boolean;
  /** The memory they share with tfjs-wasm: the threaded build's is shared (gemm-shared.wasm); null while not loaded. */
  memory: 'plain' | 'shared' | null;
  /** Products (BatchMatMul) our GEMM has run in this worker. */
  products: number;
}

export interface EngineStatus {
  backend: BackendReport;
  probe: GpuProbe;
  tfjsVersion: string;
  memory: MemoryInfo;
  /** Uncaptured WebGPU errors (shader compile, validation, out-of-memory) and device loss. */
  gpuErrors: string[];
  /** The device's subgroup layout (null without the feature or off WebGPU) and whether kernels use it. */
  subgroups: SubgroupStatus;
  /** On the wasm backend: which kernels run (absent elsewhere, and from an older worker). */
  wasmKernels?: WasmKernelStatus;
}

/** A registered recipe as the UI sees it: its schema is plain JSON (a form is generated from it). */
export interface RecipeListing {
  name: string;
  title: string;
  source: string;
  description: string;
  schema: Schema;
  /** Whether the recipe exports as a veRL job (exportVerl); absent: it does not. */
  exportable?: boolean;
  /** Teaching mode's lesson for the recipe (every registered recipe has one). */
  lesson?: Lesson;
  /** The words its rollouts are shown in (src/recipes/vocabulary.ts); absent from an older worker. */
  vocabulary?: Vocabulary;
  /** The players whose adapters an export writes, where the recipe trains several (arena, minmax). */
  players?: string[];
}

export type RunState = 'idle' | 'running' | 'paused' | 'stopped' | 'error';

export interface RunStatus {
  state: RunState;
  recipe: string | null;
  seed: number | null;
  /** Steps completed by the current (or last) run. */
  step: number;
  /** The error of state `error`; otherwise null. */
  error: string | null;
  /** What the run is doing now, in words ("loading models", "stepping", "early stop: ..."). */
  detail: string | null;
  /** A step (or the model loading) is under way now; false while waiting in pause. */
  stepping: boolean;
  /** runId its reports carry. */
  runId: string | null;
  /** Live tensors in the worker (a leak check after stop). */
  numTensors: number;
  /** Why the current (or last) run ended; null while it runs (absent from an older worker). */
  stopReason?: StopReason | null;
}

export type StartRunResult =
  | { ok: true; status: RunStatus }
  /** Field name (or `seed`, `recipe`) -> message; nothing was started. */
  | { ok: false; errors: Record<string, string> };

/** When the worker saves a checkpoint of the active run on its own. */
export interface AutosavePolicy {
  /** Save after every N completed steps (0 = never). */
  everySteps: number;
  /** Save when the run enters pause. */
  onPause: boolean;
  /** Keep this many automatic saves per run, deleting older ones (0 = keep all). Renamed ones are never deleted. */
  keep: number;
}

/** `stop`: the final save when a run stops or finishes (kept: automatic pruning never deletes it). */
export type CheckpointReason = 'autosave' | 'pause' | 'manual' | 'stop';

export type CheckpointEvent =
  | {
      kind: 'saved';
      reason: CheckpointReason;
      runId: string;
      step: number;
      id: string;
      name: string;
      sizeBytes: number;
    }
  /** Nothing was lost: earlier checkpoints are intact and the run continues. `code` 'quota' = storage full. */
  | { kind: 'failed'; reason: CheckpointReason; runId: string; step: number; code: string; message: string };

export interface FileBytes {
  fileName: string;
  bytes: Uint8Array;
  /** Something the person should know about the file (a merged export of a quantised base). */
  note?: string;
}

export type ImportAdapterResult =
  | {
      ok: true;
      fileName: string;
      baseModel: string | null;
      baseMismatch: boolean;
      r: number;
      tensors: number;
      step: number;
    }
  | { ok: false; error: string };

export interface DatasetInfo {
  /** What a recipe's dataset field takes (readText(ref) returns the stored text). */
  ref: string;
  rows: number;
  bytes: number;
  /** Characters of its longest prompt (the fit check counts it); absent for older uploads. */
  longestPrompt?: number;
}

/** An upload's longest prompt counted with a model's tokenizer and chat template (the fit check's prompt length). */
export interface PromptTokenCount {
  /** Tokens of the longest prompt, chat template and generation prompt included. */
  tokens: number;
  /** Its line in the file. */
  line: number;
  /** Prompts encoded (the longest by characters) of `rows`. */
  counted: number;
  rows: number;
  /** The tokenizer's label (its folder). */
  tokenizer: string;
}

/** Greedy continuation of one prompt by the run's model with its current adapter. */
export interface AdapterOutputs {
  ids: number[];
  text: string;
  /** Log-prob of each generated token. */
  logprobs: number[];
}

/** Which run an export reads: the active one, else the newest checkpoint of `runId` (or of the run that ended last). */
export interface ExportSource {
  runId?: string;
}

/** The checkpoint, adapter and dataset methods of the worker API. */
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
  /**
   * The run's adapter as a PEFT folder zip: the active run's, or (no active run, or `runId` names
   * another) the newest checkpoint of `runId` (default: the run that ended last in this worker).
   * A recipe with several players (its listing's `players`) gives one zip with a PEFT folder per player.
   */
  exportAdapter(opts?: ExportSource): Promise<FileBytes>;
  /**
   * The run's model with its adapter merged in, as a Hugging Face model.safetensors (source as
   * exportAdapter); several players: a zip with `<player>/model.safetensors` each.
   */
  exportMerged(opts?: ExportSource): Promise<FileBytes>;
  /** Validate an adapter zip against the run (base model, shapes, rank, alpha, targets) and load it. */
  importAdapter(
    zip: Uint8Array,
    fileName: string,
    opts?: { allowBaseMismatch?: boolean },
  ): Promise<ImportAdapterResult>;
  /** Greedy tokens of the run's model + adapter on a chat prompt (compare runs and imports). */
  adapterOutputs(prompt: string, maxNewTokens: number): Promise<AdapterOutputs>;
  /** Store an uploaded dataset (already read and checked by the page) in IndexedDB for readText. */
  putDataset(fileName: string, text: string, rows: number, longestPrompt?: number): Promise<DatasetInfo>;
  listDatasets(): Promise<DatasetInfo[]>;
  /** The longest prompts of a stored upload counted with the model's tokenizer and chat template (no weights loaded). */
  promptTokens(modelRef: string, datasetRef: string): Promise<PromptTokenCount>;
  /** Remove a stored upload; false when there was none. */
  deleteDataset(ref: string): Promise<boolean>;
}

/** The veRL / TRL job folder of a setup, zipped (what the lab's "veRL job (zip)" button saves). */
export interface VerlJobZip extends FileBytes {
  /** Fields of the setup the exported job cannot express. */
  unsupported: string[];
  /** Whether the sandbox model the recipe trains is inside the zip (else its README says where to get it). */
  modelShipped: boolean;
}

/** What the lab calls on its engine worker; nothing here exists only for tests. */
export interface EngineApi extends StorageApi {
  /** Probe WebGPU and start tfjs on the preferred backend (falling back as needed). */
  init(preference: BackendPreference): Promise<EngineStatus>;
  status(): Promise<EngineStatus>;
  /** Load hub ids ("owner/name") from a hub mirror at `endpoint` (the page's `?hub=`); null: the hub. */
  setHubEndpoint(endpoint: string | null): Promise<void>;
  /** Registered recipes with their config schemas. */
  listRecipes(): Promise<RecipeListing[]>;
  /**
   * Validate `config` with the recipe's schema (strings are coerced) and, when valid, start the
   * run loop in the worker (an active run is stopped first). Each StepReport goes to `onReport`
   * (a comlink proxy); every state change goes to `onStatus` when given.
   */
  startRun(
    recipe: string,
    config: Record<string, unknown>,
    seed: number,
    onReport: (report: StepReport) => void,
    onStatus?: (status: RunStatus) => void,
  ): Promise<StartRunResult>;
  /** Pause at the next step boundary. */
  pauseRun(): Promise<RunStatus>;
  resumeRun(): Promise<RunStatus>;
  /** While paused: run exactly one step; resolves after it. */
  stepRun(): Promise<RunStatus>;
  /**
   * Stop at the next step boundary, save a final checkpoint (unless the last save is of this
   * step, or `discard`), and free the run; resolves once it is freed. `reason` (default `user`)
   * is kept on the run's record and status.
   */
  stopRun(opts?: { discard?: boolean; reason?: RequestedStop }): Promise<RunStatus>;
  runStatus(): Promise<RunStatus>;
  /**
   * The setup (recipe, its field values, seed, max steps) as a veRL / TRL job folder zip, by the
   * generator the CLI uses; a sandbox model the recipe trains is fetched from the lab's /models/.
   */
  exportVerl(recipe: string, values: Record<string, unknown>, seed: number, steps?: number): Promise<VerlJobZip>;
}
