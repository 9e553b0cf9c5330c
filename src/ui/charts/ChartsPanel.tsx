import { useRunStore } from '../../store/runStore';
import { metricTableCsv, metricNames } from '../../store/runStore';
import { ExampleNotice } from '../runlist/ExampleNotice';
import { ReplayLoader } from '../runlist/ReplayLoader';
import { RunLegend } from '../runlist/RunLegend';
import { visibleRuns } from './chartData';
import { saveBlob } from './download';
import { CHART_GROUPS, groupMetrics, OTHER_GROUP } from './groups';
import { MetricChart } from './MetricChart';

/** Runs legend, smoothing, replay and CSV export above one small live chart per metric group. */
export function ChartsPanel() {
  const smoothing = useRunStore((s) => s.smoothing);
  const setSmoothing = useRunStore((s) => s.setSmoothing);
  const hasRuns = useRunStore((s) => s.order.length > 0);
  const hasOther = useRunStore((s) => groupMetrics(OTHER_GROUP, metricNames(s, visibleRuns(s))).length > 0);

  const exportCsv = () => {
    const s = useRunStore.getState();
    saveBlob(new Blob([metricTableCsv(s, visibleRuns(s))], { type: 'text/csv' }), 'sparring-metrics.csv');
  };

  return (
    <div className="charts">
      <ExampleNotice where="charts" />
      <div className="toolbar">
        <RunLegend />
        <div className="toolbar-row">
          <label className="slider" htmlFor="smoothing">
            Smoothing (EMA)
            <input
              id="smoothing"
              type="range"
              min={0}
              max={0.99}
              step={0.01}
              value={smoothing}
              onChange={(e) => setSmoothing(Number(e.target.value))}
              data-testid="smoothing"
              aria-valuetext={smoothing === 0 ? 'off, raw values' : `${smoothing.toFixed(2)}`}
            />
            <output htmlFor="smoothing">{smoothing === 0 ? 'off' : smoothing.toFixed(2)}</output>
          </label>
          <ReplayLoader />
          <button type="button" onClick={exportCsv} disabled={!hasRuns} data-testid="export-csv">
            Export CSV
          </button>
        </div>
      </div>
      <div className="chart-grid">
        {CHART_GROUPS.map((g) => (
          <MetricChart key={g.id} group={g} />
        ))}
        {hasOther && <MetricChart group={OTHER_GROUP} />}
      </div>
      <p className="small">
        x: training step. Drag across a chart to zoom, double-click to reset. Faint lines are raw values under the
        smoothed curve.
      </p>
    </div>
  );
}
