// The skeleton every recipe run shares, written once: step counting and the report around a step,
// phase timing, state() / restore() / dispose(), and building a run with its models freed when a
// later part of the build fails. A recipe writes its step (runStep), what it holds, and what its
// checkpoint carries beyond the adapters (extraState / parseExtra).
import type { LoraSet } from '../../model/lora';
import type { AdamW } from '../../rl/optim';
import { stepReport, type StepReport, type StepTimings } from '../../contract/report';
import { disposeRun, type KlCtrl, type ValueCritic } from './common';
import {
  loraRunState,
  multiLoraRunState,
  restoreLoraRun,
  restoreMultiLoraRun,
  restoreStoppableRun,
  stoppableRunState,
  type NamedLoraPart,
} from './state';
import type { RecipeCheckpoint, RecipeRun } from './types';

/** What a step reports besides the run's bookkeeping (run id, step, time). */
export type StepBody = Pick<StepReport, 'phase' | 'metrics' | 'samples' | 'timings'>;

type Held = { dispose?: () => void } | null | undefined;

type Phase = Exclude<keyof StepTimings, 'total_ms'>;

/**
 * Milliseconds per phase of a step: mark(phase) closes the phase that began at the previous mark
 * (or at the start); mark() with no phase closes an untimed one (a held-out evaluation).
 */
export class PhaseTimer {
  private readonly start = performance.now();
  private last = this.start;
  private readonly laps: Record<Phase, number> = { rollout_ms: 0, score_ms: 0, learn_ms: 0 };

  mark(name?: Phase): number {
    const now = performance.now();
    const ms = now - this.last;
    this.last = now;
    // Summed: a step that draws several generation batches (filterGroups) times each phase over all.
    if (name) this.laps[name] += ms;
    return ms;
  }

  /** Milliseconds since the step began. */
  elapsed(): number {
    return performance.now() - this.start;
  }

  /** The phases (0 for one never marked) and total_ms (the whole step, untimed phases included). */
  timings(): StepTimings {
    return { ...this.laps, total_ms: this.elapsed() };
  }
}

/** A run: counts steps and wraps each in its report; saves, restores and frees through the hooks. */
export abstract class RunBase implements RecipeRun {
  abstract readonly recipe: string;
  abstract readonly seed: number;
  abstract readonly config: Record<string, unknown>;
  stepsDone = 0;
  done = false;
  stopReason: string | null = null;

  /** Step `step` (0-based): everything the recipe does and reports. */
  protected abstract runStep(step: number): Promise<StepBody>;
  /** The checkpoint of the adapters and optimisers, with `extra`. */
  protected abstract saveState(extra: Record<string, unknown>): Promise<RecipeCheckpoint>;
  /** Loads a checkpoint's adapters and optimisers (checked first) and sets the step counter. */
  protected abstract restoreState(payload: RecipeCheckpoint): void;
  /** The adapters and optimisers the run trains (freed by dispose). */
  protected abstract adapters(): readonly { optimizer: AdamW; lora: LoraSet }[];
  /** Everything else the run holds and frees: critics, judges, graders, models (in this order). */
  protected abstract held(): Held[];

  /** The run's own state beyond the adapters (KL coefficients, critics), saved in extra. */
  protected async extraState(): Promise<Record<string, unknown>> {
    return {};
  }

  /** Checks a checkpoint's extra (throwing before anything changes) and returns its assignment. */
  protected parseExtra(_extra: Record<string, unknown>): () => void {
    return () => {};
  }

  async step(): Promise<StepReport> {
    const step = this.stepsDone;
    const body = await this.runStep(step);
    this.stepsDone = step + 1;
    return stepReport(this, step, body);
  }

  async state(): Promise<RecipeCheckpoint> {
    return this.saveState(await this.extraState());
  }

  async restore(payload: RecipeCheckpoint): Promise<void> {
    const assign = this.parseExtra(payload.extra);
    this.restoreState(payload);
    assign();
  }

  dispose(): void {
    disposeRun(this.adapters(), ...this.held());
  }
}

/** A run that trains one LoRA set; `stoppable` runs (their own stopping rule) save done / stopReason too. */
export abstract class LoraRun extends RunBase {
  abstract readonly lora: LoraSet;
  abstract readonly optimizer: AdamW;
  protected readonly stoppable: boolean = false;

  protected saveState(extra: Record<string, unknown>): Promise<RecipeCheckpoint> {
    return this.stoppable ? stoppableRunState(this, extra) : loraRunState(this, extra);
  }

  protected restoreState(payload: RecipeCheckpoint): void {
    if (this.stoppable) restoreStoppableRun(this, payload);
    else this.stepsDone = restoreLoraRun(this, payload);
  }

  protected adapters(): readonly { optimizer: AdamW; lora: LoraSet }[] {
    return [this];
  }
}

/** A run that trains several named LoRA sets (arena: attacker and defender; minmax: policy and monitor). */
export abstract class MultiLoraRun extends RunBase {
  /** The named adapters the checkpoint holds, each with its optimiser. */
  protected abstract loraParts(): Record<string, NamedLoraPart>;

  protected saveState(extra: Record<string, unknown>): Promise<RecipeCheckpoint> {
    return multiLoraRunState(this, this.loraParts(), extra);
  }

  protected restoreState(payload: RecipeCheckpoint): void {
    this.stepsDone = restoreMultiLoraRun(this, this.loraParts(), payload);
  }

  protected adapters(): readonly { optimizer: AdamW; lora: LoraSet }[] {
    return Object.values(this.loraParts());
  }
}

/** extra of a run with an adaptive KL coefficient and an optional critic (attack, defend, tokenbuncher). */
export async function klCriticState(klCtrl: KlCtrl, critic: ValueCritic | null): Promise<Record<string, unknown>> {
  return { klCtrl: klCtrl.value, ...(critic ? { critic: await critic.state() } : {}) };
}

/** Checks klCriticState's extra and returns its assignment. */
export function parseKlCritic(klCtrl: KlCtrl, critic: ValueCritic | null, extra: Record<string, unknown>): () => void {
  const value = klCtrl.restore(extra);
  const assignCritic = critic ? critic.parse(extra.critic) : () => {};
  return () => {
    klCtrl.value = value;
    assignCritic();
  };
}

/**
 * Builds a run from models loaded one after another: `own` registers what the build loaded, and
 * when a later part of the build throws, those are disposed (in load order) and the error rethrown.
 */
export async function createWithCleanup<R>(
  build: (own: <M extends { dispose(): void }>(m: M) => M) => Promise<R>,
): Promise<R> {
  const owned: { dispose(): void }[] = [];
  try {
    return await build((m) => {
      owned.push(m);
      return m;
    });
  } catch (e) {
    for (const m of owned) m.dispose();
    throw e;
  }
}
