import { describe, expect, it } from 'vitest';
import type { StepReport } from '../../contract/report';
import { appendReport, initialRunData, setRunHidden, setSmoothing } from '../../store/runStore';
import { chartData, recipeSections } from './chartData';
import { CHART_GROUPS, groupMetrics, OTHER_GROUP } from './groups';

const rep = (runId: string, step: number, metrics: Record<string, number>): StepReport => ({
  runId,
  recipe: 'redteam',
  step,
  time: 0,
  metrics,
  samples: [],
  timings: { rollout_ms: 0, score_ms: 0, learn_ms: 0, total_ms: 0 },
});
const group = (id: string) => CHART_GROUPS.find((g) => g.id === id)!;

describe('chart groups', () => {
  it('sorts metrics into the small charts, the rest into "other"', () => {
    const names = [
      'reward/mean',
      'reward/std',
      'judge/asr',
      'perf/tokens_per_s',
      'perf/step_ms',
      'perf/rollout_ms',
      'loss/policy',
      'loss/value',
      'custom',
    ];
    expect(groupMetrics(group('reward'), names)).toEqual(['reward/mean', 'reward/std']);
    expect(groupMetrics(group('loss'), names)).toEqual(['loss/policy', 'loss/value']);
    expect(groupMetrics(group('tokens'), names)).toEqual(['perf/tokens_per_s']);
    expect(groupMetrics(group('stepms'), names)).toEqual(['perf/step_ms']);
    expect(groupMetrics(OTHER_GROUP, names)).toEqual(['custom', 'perf/rollout_ms']);
  });
});

describe('chart data', () => {
  it('overlays runs, one series per run and metric, aligned on steps', () => {
    let d = setSmoothing(initialRunData(), 0);
    d = appendReport(d, rep('a', 1, { 'reward/mean': 1 }));
    d = appendReport(d, rep('a', 2, { 'reward/mean': 2 }));
    d = appendReport(d, rep('b', 2, { 'reward/mean': 5 }), 'replay');
    const c = chartData(d, group('reward'));
    expect(c.series.map((s) => s.label)).toEqual(['reward/mean · a', 'reward/mean · b']);
    expect(c.series[0].colour).not.toBe(c.series[1].colour);
    // x counts steps done, as the run status does: the reports of steps 1 and 2 (0-based) sit at 2 and 3.
    expect(c.data).toEqual([
      [2, 3],
      [1, 2],
      [undefined, 5],
    ]);
    const hidden = chartData(setRunHidden(d, 'b', true), group('reward'));
    expect(hidden.series.map((s) => s.label)).toEqual(['reward/mean']);
    expect(hidden.key).not.toBe(c.key);
  });

  it('draws one run\'s "other" metrics in as many colours as there are metrics (up to the palette), not one', () => {
    let d = setSmoothing(initialRunData(), 0);
    const metrics = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`zz/m${i}`, i]));
    d = appendReport(d, rep('a', 0, metrics));
    const c = chartData(d, OTHER_GROUP);
    expect(c.series).toHaveLength(10);
    expect(new Set(c.series.map((s) => s.colour)).size).toBe(8);
    // Past the palette, the dash tells them apart: no two series share both.
    expect(new Set(c.series.map((s) => `${s.colour} ${s.dash.join(',')}`)).size).toBe(10);
    // Two runs overlaid keep one colour per run.
    d = appendReport(d, rep('b', 0, metrics), 'replay');
    expect(new Set(chartData(d, OTHER_GROUP).series.map((s) => s.colour)).size).toBe(2);
  });

  it("puts each recipe's runs on their own charts, so one recipe's scale never flattens another's", () => {
    let d = setSmoothing(initialRunData(), 0);
    d = appendReport(d, rep('red', 1, { 'reward/mean': 0.1 }), 'replay');
    d = appendReport(d, { ...rep('mm', 1, { 'reward/mean': 40 }), recipe: 'minmax' }, 'replay');
    d = appendReport(d, rep('red2', 1, { 'reward/mean': 0.2 }), 'replay');
    const sections = recipeSections(d);
    expect(sections).toEqual([
      { recipe: 'redteam', runIds: ['red', 'red2'] },
      { recipe: 'minmax', runIds: ['mm'] },
    ]);
    // The redteam chart holds only redteam's values: its y-range is 0.1..0.2, not 0.1..40.
    const red = chartData(d, group('reward'), sections[0].runIds);
    expect(red.data.slice(1)).toEqual([[0.1], [0.2]]);
    expect(chartData(d, group('reward'), sections[1].runIds).data.slice(1)).toEqual([[40]]);
  });

  it('with smoothing, draws the raw series faintly under the EMA', () => {
    let d = setSmoothing(initialRunData(), 0.5); // alpha 0.5
    d = appendReport(d, rep('a', 1, { 'kl/mean': 0 }));
    d = appendReport(d, rep('a', 2, { 'kl/mean': 10 }));
    const c = chartData(d, group('kl'));
    expect(c.series.map((s) => s.raw)).toEqual([true, false]);
    expect(c.data).toEqual([
      [2, 3],
      [0, 10],
      [0, 5],
    ]);
    // The key (chart structure) does not depend on the smoothing amount, only on whether it is on.
    expect(chartData(setSmoothing(d, 0.9), group('kl')).key).toBe(c.key);
  });
});
