// What a recipe is (config schema + a run factory), what a run does (step / state / restore /
// dispose) and the environment that hands it models, tokenizers, judges and files. The env is
// injected, so the same recipe code runs in the training worker (URL sources) and in the CLI and
// tests (folders on disk, or stand-ins).
import type { Judge } from '../../judges/types';
import type { ChatMessage } from '../../model/chat';
import type { LlamaModel } from '../../model/llama';
import type { WeightFormat } from '../../contract/weightFormat';
import type { NamedTensor } from '../../contract/namedTensor';
import type { StepReport } from '../../contract/report';
import type { ConfigOf, Schema } from '../../contract/schema';
import type { Lesson } from '../../contract/lesson';

/** Chat in, ids out, and back: the tokenizer + chat template of a model (or a test stand-in). */
export interface ChatCodec {
  /** Model folder or id, for messages. */
  readonly label: string;
  /** Render messages with the model's chat template and encode them (no extra special tokens). */
  encodeChat(messages: readonly ChatMessage[], opts: { addGenerationPrompt: boolean }): number[];
  /** Plain text (no template) to ids, no special tokens added. */
  encodeText(text: string): number[];
  /** Ids to text, special tokens skipped. */
  decode(ids: readonly number[]): string;
  /** The text each id contributes (per-token displays). */
  pieces(ids: readonly number[]): string[];
  /** Ids that end an assistant turn (eos, <|im_end|>). */
  readonly eos: readonly number[];
  /** Id written into padding. */
  readonly pad: number;
}

/** A model loaded by reference, with its codec. dispose() frees its weights. */
export interface LoadedModel {
  readonly ref: string;
  readonly model: LlamaModel;
  readonly codec: ChatCodec;
  /** The format its projections were loaded in (absent: f32). */
  readonly weights?: WeightFormat;
  dispose(): void;
}

export interface LoadModelRefOptions {
  /** Storage of the frozen projections (default f32). */
  weights?: WeightFormat;
}

/** What a model-backed or remote judge is told by the config's judge fields (judgeFields.ts). */
export interface JudgeOptions {
  /** llm-guard: the Llama Guard 3 checkpoint and how to read it. */
  guard?: {
    ref: string;
    weights: WeightFormat;
    categories: string;
    customCategories: string;
    verdict: 'probability' | 'text';
  };
  /** http: the scorer URL and what text it is sent. */
  url?: string;
  urlText?: 'response' | 'prompt+response';
}

/** Where recipes get their inputs. */
export interface RecipeEnv {
  /**
   * Load a model by reference: a sandbox name (`defender`, `attacker`, `judge`: public/models/NAME),
   * a folder path (Node) or a URL (browser). Every call gives a fresh copy (LoRA attaches to it).
   */
  loadModel(ref: string, opts?: LoadModelRefOptions): Promise<LoadedModel>;
  /**
   * A judge by name (`rules`, `rules-partial`, `classifier`, `llm-guard`, `http`, ...); throws
   * naming the known judges. `opts` configures the model-backed and remote ones.
   */
  judge(name: string, opts?: JudgeOptions): Judge;
  /** Text of an uploaded / on-disk file (JSONL datasets). Optional: absent in envs without files. */
  readText?(ref: string): Promise<string>;
  /** The tfjs backend the run uses, for the report. */
  readonly backend?: string;
}

/**
 * Plain checkpoint payload of a run: typed arrays and JSON only, so it posts across the worker
 * boundary and maps 1:1 onto the storage layer's CheckpointInput (see toCheckpointInput).
 */
export interface RecipeCheckpoint {
  format: 1;
  recipe: string;
  seed: number;
  /** Steps completed. The next step() runs step number `step`. */
  step: number;
  /** The validated config the run was created with. */
  config: Record<string, unknown>;
  /** Trainable parameters under stable names (PEFT names for LoRA: base_model.model.<module>.lora_A.weight). */
  tensors: NamedTensor[];
  /** AdamW: step count, and first/second moments named `<param>.exp_avg` / `<param>.exp_avg_sq`. */
  optimizer: { state: { step: number }; tensors: NamedTensor[] };
  /** Counters every random stream derives from (seed, step, LoRA dropout calls ...). */
  rng: Record<string, number>;
  /** Recipe-specific plain data (early-stop flag ...). */
  extra: Record<string, unknown>;
}

export interface RecipeRun {
  readonly recipe: string;
  readonly seed: number;
  /** Steps completed so far. */
  readonly stepsDone: number;
  /** True once the recipe's own stopping rule fired (early stop); step() still works. */
  readonly done: boolean;
  readonly stopReason: string | null;
  /** Run one training step and report it. */
  step(): Promise<StepReport>;
  /** Snapshot of everything the next step depends on. */
  state(): Promise<RecipeCheckpoint>;
  /** Replace the run's state with a snapshot of a run of the same recipe and config. */
  restore(payload: RecipeCheckpoint): Promise<void>;
  /** Free models, adapters and optimiser state. */
  dispose(): void;
}

export interface Recipe<S extends Schema = Schema> {
  /** The name researchers type: `redteam`, `attacker-sft`. */
  readonly name: string;
  readonly title: string;
  /** The source system(s) it reproduces. */
  readonly source: string;
  /** One paragraph for the UI and `--help`. */
  readonly description: string;
  /** Teaching mode's text for it (src/recipes/<name>/lesson.ts); every registered recipe has one. */
  readonly lesson?: Lesson;
  readonly schema: S;
  /** The config field naming the model the recipe trains (CLI `--model` sets it). */
  readonly modelField?: keyof S & string;
  /**
   * Rules across fields that the schema's per-field ranges cannot state (each field valid alone):
   * field name -> message, empty when the config is fine. registry.validateRecipeConfig runs it.
   */
  check?(config: ConfigOf<S>): Record<string, string>;
  /** Build a run. `config` must already be validated (registry.createRun validates). */
  create(env: RecipeEnv, config: ConfigOf<S>, seed: number): Promise<RecipeRun>;
}

/** A recipe with its schema type erased, as the registry stores it. */
export type AnyRecipe = Recipe<Schema>;
