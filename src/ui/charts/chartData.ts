// From the run store to uPlot's aligned data for one chart: a series per (run, metric), plus a
// faint raw series under each smoothed one when smoothing is on. Pure, so it is unit-tested.
import { metricNames, type RunData } from '../../store/runStore';
import { alignSeries, ema, ringArrays, smoothingToAlpha, type Column, type XY } from '../../store/runStoreSeries';
import { METRIC_DASHES, runColour } from '../palette';
import { groupMetrics, type ChartGroup } from './groups';

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

/** Only the chart's structure key: cheap (no array copies), for a store selector. */
export function chartKey(d: RunData, group: ChartGroup): string {
  const runs = visibleRuns(d);
  const names = groupMetrics(group, metricNames(d, runs));
  const parts: string[] = [group.id, String(d.smoothing > 0), String(runs.length > 1)];
  for (const id of runs) {
    const run = d.runs[id];
    for (const name of names) if (run.metrics[name]) parts.push(`${id}:${run.info.label}:${run.info.colour}:${name}`);
  }
  return parts.join('|');
}

export function chartData(d: RunData, group: ChartGroup): ChartData {
  const runs = visibleRuns(d);
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
      const { x, y } = ringArrays(ring);
      const colour = runColour(run.info.colour);
      const dash = METRIC_DASHES[m % METRIC_DASHES.length];
      const label = runs.length > 1 ? `${name} · ${run.info.label}` : name;
      if (smooth) {
        series.push({ label: `${label} (raw)`, colour, dash, width: 1, raw: true });
        xy.push({ x, y });
      }
      series.push({ label, colour, dash, width: 2, raw: false });
      xy.push({ x, y: smooth ? ema(y, alpha) : y });
    });
  }
  return { series, data: alignSeries(xy), key: chartKey(d, group) };
}
