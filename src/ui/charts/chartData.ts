// From the run store to uPlot's aligned data for one chart: a series per (run, metric), plus a
// faint raw series under each smoothed one when smoothing is on. Pure, so it is unit-tested.
//
// Scales: runs share a chart only with runs of the same recipe. One recipe's reward is another's
// in other units (minmax's reward spans about 10x redteam's), so a shared y-axis flattened every
// curve but the widest; per-run normalisation would keep the shapes but hide the values a
// researcher reads off. Each recipe shown gets its own row of charts (recipeSections), with
// axes in its own units; runs of one recipe stay overlaid on one axis, where they compare.
import { metricNames, type RunData } from '../../store/runStore';
import { shownStep } from '../../contract/stepCount';
import { alignSeries, ema, ringArrays, smoothingToAlpha, type Column, type XY } from '../../store/runStoreSeries';
import { METRIC_DASHES, RUN_COLOURS, runColour } from '../palette';
import { groupMetrics, OTHER_GROUP, type ChartGroup } from './groups';

export interface SeriesSpec {
  label: string;
  colour: string;
  dash: number[];
  width: number;
  /** Raw points drawn faintly under the smoothed curve. */
  raw: boolean;
}

export interface ChartData {
  series: SeriesSpec[];
  data: [number[], ...Column[]];
  /** Changes only when the set of series changes (then the chart is rebuilt, else setData). */
  key: string;
}

export function visibleRuns(d: RunData): string[] {
  return d.order.filter((id) => !d.runs[id].info.hidden);
}

/** The visible runs by recipe, recipes in the order their first shown run arrived. */
export function recipeSections(d: RunData): { recipe: string; runIds: string[] }[] {
  const out = new Map<string, string[]>();
  for (const id of visibleRuns(d)) {
    const recipe = d.runs[id].info.recipe;
    const ids = out.get(recipe);
    if (ids) ids.push(id);
    else out.set(recipe, [id]);
  }
  return [...out.entries()].map(([recipe, runIds]) => ({ recipe, runIds }));
}

/** Only the chart's structure key: cheap (no array copies), for a store selector. */
export function chartKey(d: RunData, group: ChartGroup, only?: readonly string[]): string {
  const runs = only ? visibleRuns(d).filter((id) => only.includes(id)) : visibleRuns(d);
  const names = groupMetrics(group, metricNames(d, runs));
  const parts: string[] = [group.id, String(d.smoothing > 0), String(runs.length > 1)];
  for (const id of runs) {
    const run = d.runs[id];
    for (const name of names) if (run.metrics[name]) parts.push(`${id}:${run.info.label}:${run.info.colour}:${name}`);
  }
  return parts.join('|');
}

/** The chart's series over the visible runs (or those of `only`, one recipe's section). */
export function chartData(d: RunData, group: ChartGroup, only?: readonly string[]): ChartData {
  const runs = only ? visibleRuns(d).filter((id) => only.includes(id)) : visibleRuns(d);
  const names = groupMetrics(group, metricNames(d, runs));
  const smooth = d.smoothing > 0;
  const alpha = smoothingToAlpha(d.smoothing);
  const series: SeriesSpec[] = [];
  const xy: XY[] = [];
  for (const id of runs) {
    const run = d.runs[id];
    names.forEach((name, m) => {
      const ring = run.metrics[name];
      if (!ring) return;
      const { x: index, y } = ringArrays(ring);
      const x = index.map(shownStep);
      // One run's many unrelated metrics ("Other metrics", 30+) read apart by colour, not by four dashes.
      const byMetric = group.id === OTHER_GROUP.id && runs.length === 1;
      const colour = runColour(byMetric ? m : run.info.colour);
      const dash = METRIC_DASHES[(byMetric ? Math.floor(m / RUN_COLOURS.length) : m) % METRIC_DASHES.length];
      const label = runs.length > 1 ? `${name} · ${run.info.label}` : name;
      if (smooth) {
        series.push({ label: `${label} (raw)`, colour, dash, width: 1, raw: true });
        xy.push({ x, y });
      }
      series.push({ label, colour, dash, width: 2, raw: false });
      xy.push({ x, y: smooth ? ema(y, alpha) : y });
    });
  }
  return { series, data: alignSeries(xy), key: chartKey(d, group, only) };
}
