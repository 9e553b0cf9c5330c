import { describe, expect, it } from 'vitest';
import type { RolloutSample, StepReport } from '../contract/report';
import {
  appendReport,
  importReports,
  initialRunData,
  metricTableCsv,
  removeRun,
  samplesAt,
  sampleSteps,
  setActiveRun,
  setFilter,
  setPinned,
  setSmoothing,
  setRunHidden,
  endRun,
  MAX_SHOWN,
} from './runStore';
import { ringArrays } from './runStoreSeries';

function sample(promptKey: string, success: boolean, entropy: number[], id = promptKey): RolloutSample {
  return {
    id,
    promptKey,
    group: 0,
    messages: [
      { role: 'attacker', text: 'prompt' },
      {
        role: 'defender',
        text: 'answer',
        tokens: {
          ids: entropy.map((_, i) => i),
          pieces: entropy.map((_, i) => `t${i}`),
          logp: entropy.map(() => -1),
          entropy,
        },
      },
    ],
    verdict: { label: success ? 'unsafe S2' : 'refusal', unsafe: success ? 0.9 : 0.1, refused: !success, success },
    reward: success ? 1 : 0,
    terms: { harm: success ? 1 : 0 },
  };
}

function report(
  runId: string,
  step: number,
  metrics: Record<string, number>,
  samples: RolloutSample[] = [],
): StepReport {
  return {
    runId,
    recipe: 'redteam',
    step,
    time: 0,
    metrics,
    samples,
    timings: { rollout_ms: 1, score_ms: 1, learn_ms: 1, total_ms: 3 },
  };
}

describe('run store reducers', () => {
  it('appends metrics per run into rings and bumps the version', () => {
    let d = initialRunData({ capacity: 8 });
    d = appendReport(d, report('a', 1, { 'reward/mean': 0.5, 'kl/mean': 0.01 }));
    d = appendReport(d, report('a', 2, { 'reward/mean': 0.7 }));
    expect(d.version).toBe(2);
    expect(d.order).toEqual(['a']);
    expect(Array.from(ringArrays(d.runs.a.metrics['reward/mean']).y)).toEqual([0.5, 0.7]);
    expect(Array.from(ringArrays(d.runs.a.metrics['kl/mean']).x)).toEqual([1]);
    expect(d.runs.a.info.lastStep).toBe(2);
    expect(d.activeRunId).toBe('a');
  });

  it('a new live run shows alone or beside the runs the user ticked, never more than MAX_SHOWN', () => {
    let d = initialRunData();
    for (const id of ['r1', 'r2', 'r3']) d = appendReport(d, report(id, 0, { 'reward/mean': 1 }));
    // Each new run hid the one before: five recipes in a row no longer stack five curves.
    expect(d.order.filter((id) => !d.runs[id].info.hidden)).toEqual(['r3']);
    d = setRunHidden(d, 'r1', false);
    d = appendReport(d, report('r4', 0, {}));
    expect(d.order.filter((id) => !d.runs[id].info.hidden)).toEqual(['r1', 'r4']);
    // Ticking more on than MAX_SHOWN hides the longest-shown ones.
    for (const id of ['r2', 'r3']) d = setRunHidden(d, id, false);
    expect(d.order.filter((id) => !d.runs[id].info.hidden)).toHaveLength(MAX_SHOWN);
    d = appendReport(d, report('r5', 0, {}));
    const shown = d.order.filter((id) => !d.runs[id].info.hidden);
    expect(shown).toHaveLength(MAX_SHOWN);
    expect(shown[shown.length - 1]).toBe('r5');
    // An ended run is no longer live; a report (a resume) makes it live again.
    d = endRun(d, 'r5');
    expect(d.runs.r5.info.ended).toBe(true);
    d = appendReport(d, report('r5', 1, {}));
    expect(d.runs.r5.info.ended).toBe(false);
  });

  it('keeps several runs for overlay with distinct colours; a live run hides the example', () => {
    let d = initialRunData();
    d = importReports(d, [report('ex', 0, { 'reward/mean': 0 })], 'example', 'recorded example');
    d = appendReport(d, report('live1', 0, { 'reward/mean': 1 }));
    expect(d.order).toEqual(['ex', 'live1']);
    expect(d.runs.ex.info.colour).not.toBe(d.runs.live1.info.colour);
    expect(d.runs.ex.info.hidden).toBe(true);
    expect(d.runs.ex.info.label).toBe('recorded example');
    expect(d.activeRunId).toBe('live1');
    d = removeRun(d, 'live1');
    expect(d.activeRunId).toBe('ex');
    // The freed colour is reused.
    d = appendReport(d, report('live2', 0, {}));
    expect(d.runs.live2.info.colour).toBe(1);
  });

  it('a resumed run re-reporting a step drops the later points first', () => {
    let d = initialRunData();
    for (const s of [1, 2, 3, 4]) d = appendReport(d, report('a', s, { m: s }, [sample('p', false, [s])]));
    d = appendReport(d, report('a', 3, { m: 30 }, [sample('p', false, [30])]));
    expect(Array.from(ringArrays(d.runs.a.metrics.m).x)).toEqual([1, 2, 3]);
    expect(Array.from(ringArrays(d.runs.a.metrics.m).y)).toEqual([1, 2, 30]);
    expect(sampleSteps(d)).toEqual([1, 2, 3]);
  });

  it('keeps only the latest N samples', () => {
    let d = initialRunData({ maxSamples: 3 });
    for (const s of [1, 2, 3])
      d = appendReport(d, report('a', s, {}, [sample('p', false, [1], `x${s}`), sample('q', true, [1], `y${s}`)]));
    expect(d.samples.map((e) => e.sample.id)).toEqual(['y2', 'x3', 'y3']);
  });

  it('filters the latest step samples by success / failure', () => {
    let d = initialRunData();
    d = appendReport(d, report('a', 1, {}, [sample('p', true, [1])]));
    d = appendReport(d, report('a', 2, {}, [sample('p', true, [1]), sample('q', false, [1])]));
    expect(samplesAt(d).map((e) => e.sample.promptKey)).toEqual(['p', 'q']);
    expect(samplesAt(setFilter(d, 'successes')).map((e) => e.sample.promptKey)).toEqual(['p']);
    expect(samplesAt(setFilter(d, 'failures')).map((e) => e.sample.promptKey)).toEqual(['q']);
    expect(samplesAt(d, 1)).toHaveLength(1);
  });

  it('tracks a pinned prompt across steps, backfilling from retained samples', () => {
    let d = initialRunData();
    d = appendReport(d, report('a', 1, {}, [sample('p', false, [1, 2]), sample('q', false, [9])]));
    d = appendReport(d, report('a', 2, {}, [sample('q', false, [8])]));
    d = appendReport(d, report('a', 3, {}, [sample('p', false, [3, 4, 5])]));
    d = setPinned(d, 'p');
    expect(d.pinRows.map((r) => [r.step, r.entropy])).toEqual([
      [1, [1, 2]],
      [3, [3, 4, 5]],
    ]);
    expect(d.pinRows[0].role).toBe('defender');
    // New steps add one row each (the first sample of the prompt at that step).
    d = appendReport(d, report('a', 4, {}, [sample('p', true, [6], 'first'), sample('p', true, [7], 'second')]));
    expect(d.pinRows.map((r) => r.step)).toEqual([1, 3, 4]);
    expect(d.pinRows[2].entropy).toEqual([6]);
    // Steps without the prompt add nothing; samples without tokens add nothing.
    d = appendReport(d, report('a', 5, {}, [sample('q', true, [1])]));
    expect(d.pinRows).toHaveLength(3);
    // Another run's reports do not add rows while it is not the active run.
    d = appendReport(d, report('b', 1, {}, [sample('p', true, [0.5])]), 'replay');
    expect(d.activeRunId).toBe('a');
    expect(d.pinRows).toHaveLength(3);
    // Switching run rebuilds the rows from that run's samples.
    d = setActiveRun(d, 'b');
    expect(d.pinRows.map((r) => [r.runId, r.step])).toEqual([['b', 1]]);
    d = setPinned(d, null);
    expect(d.pinRows).toEqual([]);
  });

  it('clamps the smoothing setting', () => {
    const d = initialRunData();
    expect(setSmoothing(d, 2).smoothing).toBe(0.99);
    expect(setSmoothing(d, -1).smoothing).toBe(0);
    expect(setSmoothing(d, NaN).smoothing).toBe(0);
  });

  it('exports the metric table as CSV (hand-checked)', () => {
    let d = initialRunData();
    d = appendReport(d, report('a', 1, { 'reward/mean': 0.5, 'kl/mean': 0.25 }));
    d = appendReport(d, report('a', 2, { 'reward/mean': 0.75, 'kl/mean': NaN }));
    d = appendReport(d, report('b,2', 1, { 'loss/policy': -1.5 }), 'replay');
    expect(metricTableCsv(d)).toBe(
      ['run,step,kl/mean,loss/policy,reward/mean', 'a,1,0.25,,0.5', 'a,2,NaN,,0.75', '"b,2",1,,-1.5,', ''].join('\n'),
    );
    expect(metricTableCsv(d, ['a']).split('\n')[0]).toBe('run,step,kl/mean,reward/mean');
  });
});
