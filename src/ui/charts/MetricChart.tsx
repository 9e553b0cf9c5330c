import { useEffect, useRef, useState } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { useRunStore } from '../../store/runStore';
import { chartData, chartKey, type SeriesSpec } from './chartData';
import { chartPng, fileSafe, saveDataUrl } from './download';
import type { ChartGroup } from './groups';

const HEIGHT = 170;
const AXIS = '#9aa3b2';
const GRID = '#2a303b';

function withAlpha(hex: string, alpha: number): string {
  const a = Math.round(alpha * 255)
    .toString(16)
    .padStart(2, '0');
  return `${hex}${a}`;
}

function fmt(v: number | null | undefined): string {
  if (v === null || v === undefined) return '—';
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e5)) return v.toExponential(2);
  return String(Number(v.toPrecision(4)));
}

function options(group: ChartGroup, series: SeriesSpec[], width: number, onCursor: (u: uPlot) => void): uPlot.Options {
  const axis = (label: string): uPlot.Axis => ({
    label,
    stroke: AXIS,
    font: '11px system-ui, sans-serif',
    labelFont: '12px system-ui, sans-serif',
    labelSize: 16,
    grid: { stroke: GRID, width: 1 },
    ticks: { stroke: GRID, width: 1 },
  });
  return {
    width,
    height: HEIGHT,
    legend: { show: false },
    cursor: { drag: { x: true, y: false }, points: { size: 6 } },
    scales: {
      x: { time: false },
      ...(group.id === 'judge' ? { y: { range: [0, 1] as uPlot.Range.MinMax } } : {}),
    },
    // Tick labels at the precision the values need: uPlot's default keeps 3 decimals, so a judge share
    // of 0.0001-0.0003 read "0 0 0" (issue 41; views.e2e).
    axes: [axis('step'), { ...axis(group.yLabel), size: 52, values: (_u, splits) => splits.map(fmt) }],
    series: [
      { label: 'step' },
      ...series.map<uPlot.Series>((s) => ({
        label: s.label,
        stroke: s.raw ? withAlpha(s.colour, 0.3) : s.colour,
        width: s.width,
        dash: s.dash,
        points: { show: false },
      })),
    ],
    hooks: { setCursor: [onCursor] },
  };
}

/**
 * One small live chart. uPlot is built once per series layout (runs shown, metrics present,
 * smoothing on/off) and fed with setData when reports arrive, at most once per animation frame.
 */
export function MetricChart({ group, runKey }: { group: ChartGroup; runKey: string }) {
  const key = useRunStore((s) => chartKey(s, group, runKey.split('\n')));
  const host = useRef<HTMLDivElement>(null);
  const readout = useRef<HTMLDivElement>(null);
  const plot = useRef<{ u: uPlot; series: SeriesSpec[] } | null>(null);
  const [legend, setLegend] = useState<SeriesSpec[]>([]);

  useEffect(() => {
    const el = host.current;
    if (!el) return;
    const only = runKey.split('\n');
    const first = chartData(useRunStore.getState(), group, only);
    setLegend(first.series.filter((s) => !s.raw));
    if (first.series.length === 0) return;
    const onCursor = (u: uPlot) => {
      const out = readout.current;
      if (!out) return;
      const idx = u.cursor.idx;
      if (idx === null || idx === undefined) {
        out.textContent = '';
        return;
      }
      const parts = [`step ${u.data[0][idx]}`];
      first.series.forEach((s, i) => {
        if (!s.raw) parts.push(`${s.label} ${fmt(u.data[i + 1][idx])}`);
      });
      out.textContent = parts.join(' · ');
    };
    const u = new uPlot(
      options(group, first.series, Math.max(200, el.clientWidth), onCursor),
      first.data as uPlot.AlignedData,
      el,
    );
    plot.current = { u, series: first.series };
    el.dataset.points = String(first.data[0].length);
    let seen = useRunStore.getState();
    let frame = 0;
    const unsubscribe = useRunStore.subscribe((s) => {
      if (s.version === seen.version && s.smoothing === seen.smoothing) return;
      seen = s;
      if (frame) return;
      frame = requestAnimationFrame(() => {
        frame = 0;
        const next = chartData(useRunStore.getState(), group, only);
        // A new layout rebuilds the chart through the effect; only same-layout data goes here.
        if (next.key === first.key) {
          u.setData(next.data as uPlot.AlignedData);
          el.dataset.points = String(next.data[0].length);
        }
      });
    });
    const resize = new ResizeObserver(() => {
      const w = Math.max(200, el.clientWidth);
      if (w !== u.width) u.setSize({ width: w, height: HEIGHT });
    });
    resize.observe(el);
    return () => {
      unsubscribe();
      resize.disconnect();
      if (frame) cancelAnimationFrame(frame);
      u.destroy();
      plot.current = null;
    };
    // runKey is part of key.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key, group]);

  const exportPng = () => {
    const p = plot.current;
    if (p) saveDataUrl(chartPng(p.u, group.title, p.series), `${fileSafe(group.title)}.png`);
  };

  const empty = legend.length === 0;
  return (
    <figure className="chart" data-testid={`chart-${group.id}`} aria-labelledby={`chart-${group.id}-title`}>
      <figcaption className="chart-head">
        <span id={`chart-${group.id}-title`} className="chart-title">
          {group.title}
        </span>
        <button
          type="button"
          className="mini"
          onClick={exportPng}
          disabled={empty}
          data-testid={`chart-png-${group.id}`}
          aria-label={`Export the ${group.title} chart as PNG`}
        >
          PNG
        </button>
      </figcaption>
      {empty && <p className="chart-empty">{group.absent}</p>}
      <div
        ref={host}
        className="chart-plot"
        hidden={empty}
        role="img"
        aria-label={`${group.title} against training step; ${group.yLabel}`}
      />
      {!empty && (
        <>
          <ul className="chart-legend">
            {legend.map((s) => (
              <li key={s.label}>
                <svg width="22" height="8" aria-hidden="true">
                  <line
                    x1="1"
                    y1="4"
                    x2="21"
                    y2="4"
                    stroke={s.colour}
                    strokeWidth="2.5"
                    strokeDasharray={s.dash.join(' ')}
                  />
                </svg>
                {s.label}
              </li>
            ))}
          </ul>
          <div ref={readout} className="chart-readout" aria-live="off" />
        </>
      )}
    </figure>
  );
}
