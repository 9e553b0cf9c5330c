import { afterEach, describe, expect, it } from 'vitest';
import { engineOptions, resetEngineOptions, setEngineOptions, submitFlopBudget } from './options';

describe('engine options', () => {
  afterEach(resetEngineOptions);

  it('changes only the named settings and puts every one back on reset', () => {
    const before = engineOptions();
    setEngineOptions({ decodePath: 'tfjs', tokensPerRun: 4 });
    expect(engineOptions()).toEqual({ ...before, decodePath: 'tfjs', tokensPerRun: 4 });
    resetEngineOptions();
    expect(engineOptions()).toEqual(before);
  });

  it('refuses an invalid value and changes nothing', () => {
    expect(() => setEngineOptions({ bindingLimit: 2, learnPath: 'tfjs' })).toThrow(
      /binding limit override must be >= 4 bytes, got 2/,
    );
    expect(() => setEngineOptions({ tokensPerRun: 0 })).toThrow(
      /tokens per run must be an integer in \[1, 256\], got 0/,
    );
    expect(() => setEngineOptions({ optimizerPath: 'gpu' as 'tfjs' })).toThrow(
      /optimizer path must be planned or tfjs, got gpu/,
    );
    expect(() => setEngineOptions({ decodeMemoryBudget: 0 })).toThrow(
      /decode memory budget must be a positive number of bytes or null, got 0/,
    );
    expect(() => setEngineOptions({ submitBudgetMs: -1 })).toThrow(/submit budget and assumed rate must be positive/);
    expect(() => setEngineOptions({ kernelVariants: 'fast' as 'gpu' })).toThrow(
      /kernel variants must be auto, gpu or software, got fast/,
    );
    expect(engineOptions().learnPath).toBe('planned');
  });

  it('the submit budget in FLOPs: 1000 ms at 100 GFLOP/s by default = 1e11, and it follows both settings', () => {
    expect(submitFlopBudget()).toBe(1e11);
    setEngineOptions({ submitBudgetMs: 250, submitAssumedGflops: 40 });
    expect(submitFlopBudget()).toBe(1e10);
  });

  it('is a frozen record: a change goes through setEngineOptions', () => {
    expect(Object.isFrozen(engineOptions())).toBe(true);
  });
});
