import { describe, expect, it } from 'vitest';
import type { LoraSet } from '../../model/lora';
import type { AdamW } from '../../rl/optim';
import type { RecipeCheckpoint } from './types';
import { createWithCleanup, PhaseTimer, RunBase, type StepBody } from './run';

/** A run with no adapters: records what the base calls, in order. */
class ToyRun extends RunBase {
  readonly recipe = 'toy';
  readonly seed = 7;
  readonly config = {};
  readonly calls: string[] = [];
  value = 0;

  protected async runStep(step: number): Promise<StepBody> {
    this.calls.push(`step ${step} (stepsDone ${this.stepsDone})`);
    return {
      metrics: { 'x/step': step },
      samples: [],
      timings: { rollout_ms: 0, score_ms: 0, learn_ms: 0, total_ms: 0 },
    };
  }
  protected async saveState(extra: Record<string, unknown>): Promise<RecipeCheckpoint> {
    return {
      format: 1,
      recipe: this.recipe,
      seed: this.seed,
      step: this.stepsDone,
      config: {},
      tensors: [],
      optimizer: { step: 0, tensors: [] },
      rng: {},
      extra,
    } as unknown as RecipeCheckpoint;
  }
  protected restoreState(payload: RecipeCheckpoint): void {
    this.calls.push('restoreState');
    this.stepsDone = payload.step;
  }
  protected adapters(): readonly { optimizer: AdamW; lora: LoraSet }[] {
    return [];
  }
  protected held() {
    return [{ dispose: () => this.calls.push('dispose held') }, null];
  }
  protected async extraState() {
    return { value: this.value };
  }
  protected parseExtra(extra: Record<string, unknown>) {
    if (typeof extra.value !== 'number') throw new Error('extra.value must be a number');
    const v = extra.value;
    this.calls.push('parseExtra');
    return () => {
      this.calls.push('assign');
      this.value = v;
    };
  }
}

describe('run base', () => {
  it('counts steps: runStep sees the step before it is counted; the report carries the run id, step and body', async () => {
    const run = new ToyRun();
    const r0 = await run.step();
    const r1 = await run.step();
    expect(run.calls).toEqual(['step 0 (stepsDone 0)', 'step 1 (stepsDone 1)']);
    expect(run.stepsDone).toBe(2);
    expect([r0.runId, r0.recipe, r0.step, r1.step, r1.metrics['x/step']]).toEqual(['toy-7', 'toy', 0, 1, 1]);
  });

  it('state() saves the extra; restore() checks it before anything changes, then assigns after the adapters', async () => {
    const run = new ToyRun();
    run.value = 3;
    await run.step();
    const saved = await run.state();
    expect(saved.extra).toEqual({ value: 3 });
    const fresh = new ToyRun();
    await expect(fresh.restore({ ...saved, extra: { value: 'x' } })).rejects.toThrow(/extra.value/);
    expect([fresh.stepsDone, fresh.calls]).toEqual([0, []]);
    await fresh.restore(saved);
    expect(fresh.calls).toEqual(['parseExtra', 'restoreState', 'assign']);
    expect([fresh.stepsDone, fresh.value]).toEqual([1, 3]);
  });

  it('dispose() frees what the run holds', () => {
    const run = new ToyRun();
    run.dispose();
    expect(run.calls).toEqual(['dispose held']);
  });
});

describe('createWithCleanup', () => {
  const model = (log: string[], name: string) => ({ name, dispose: () => log.push(`dispose ${name}`) });

  it('returns the run and frees nothing when the build succeeds', async () => {
    const log: string[] = [];
    const out = await createWithCleanup(async (own) => [own(model(log, 'a')).name, own(model(log, 'b')).name]);
    expect(out).toEqual(['a', 'b']);
    expect(log).toEqual([]);
  });

  it('frees the models loaded so far, in load order, and rethrows when a later part fails', async () => {
    const log: string[] = [];
    await expect(
      createWithCleanup(async (own) => {
        own(model(log, 'attacker'));
        own(model(log, 'defender'));
        throw new Error('adapter failed');
      }),
    ).rejects.toThrow('adapter failed');
    expect(log).toEqual(['dispose attacker', 'dispose defender']);
  });
});

describe('PhaseTimer', () => {
  it('names the phases it marks, leaves unmarked ones 0, and totals the whole step', () => {
    const t = new PhaseTimer();
    const untimed = t.mark();
    t.mark('rollout_ms');
    t.mark('learn_ms');
    const timings = t.timings();
    expect(untimed).toBeGreaterThanOrEqual(0);
    expect(timings.score_ms).toBe(0);
    expect(timings.total_ms).toBeGreaterThanOrEqual(timings.rollout_ms + timings.learn_ms);
  });
});
