// The run store: what the charts, the arena and the heatmaps read. It takes StepReports (live
// from the worker, replayed from a JSONL log, or the recorded example) and keeps
//   - per run, one ring buffer per metric name (fixed capacity, O(1) append);
//   - the latest N rollout samples (with their step), for the arena;
//   - a pinned promptKey and, per step, the entropy row of its generated message;
//   - view settings: EMA smoothing and the success/failure filter.
// Reducers are plain functions over RunData (unit-tested in Node); the zustand store wraps them.
// The rings are mutated in place by appends; `version` changes whenever data changes.
import { create } from 'zustand';
import type { RolloutSample, Role, StepReport } from '../contract/report';
import type { StopReason } from '../contract/stopReason';
import {
  DEFAULT_RING_CAPACITY,
  ringArrays,
  ringCreate,
  ringLastX,
  ringPush,
  ringTruncateFrom,
  type Ring,
} from './runStoreSeries';

export type RunSource = 'live' | 'replay' | 'example';
export type SampleFilter = 'all' | 'successes' | 'failures';

export interface RunInfo {
  runId: string;
  recipe: string;
  source: RunSource;
  /** What the legend shows (file name for replays). */
  label: string;
  /** Index into the UI's run palette; stable for the run's life. */
  colour: number;
  hidden: boolean;
  /** The user ticked it on: a new live run keeps it beside itself (others are hidden then). */
  picked: boolean;
  /** A live run that stopped, finished or failed: no longer "live". */
  ended: boolean;
  /** Why it ended, as the worker said (null: not said, or not ended). */
  stopReason?: StopReason | null;
  reports: number;
  lastStep: number;
}

export interface RunSeries {
  info: RunInfo;
  /** One ring per metric name, in first-seen order. */
  metrics: Record<string, Ring>;
}

export interface SampleEntry {
  runId: string;
  step: number;
  phase?: string;
  sample: RolloutSample;
}

/** Entropy of the pinned prompt's generated message at one step. */
export interface PinRow {
  runId: string;
  step: number;
  role: Role;
  pieces: string[];
  entropy: number[];
  logp: number[];
}

export interface RunData {
  runs: Record<string, RunSeries>;
  /** runIds in arrival order. */
  order: string[];
  /** The run the arena and the pinned heatmap follow. */
  activeRunId: string | null;
  /** Latest samples, oldest first, at most maxSamples. */
  samples: SampleEntry[];
  pinnedKey: string | null;
  pinRows: PinRow[];
  /** 0 = raw curves; towards 1 = smoother (EMA alpha = 1 - smoothing). */
  smoothing: number;
  filter: SampleFilter;
  version: number;
  capacity: number;
  maxSamples: number;
  maxPinRows: number;
}

export interface RunDataOptions {
  capacity?: number;
  maxSamples?: number;
  maxPinRows?: number;
}

export function initialRunData(opts: RunDataOptions = {}): RunData {
  return {
    runs: {},
    order: [],
    activeRunId: null,
    samples: [],
    pinnedKey: null,
    pinRows: [],
    smoothing: 0.6,
    filter: 'all',
    version: 0,
    capacity: opts.capacity ?? DEFAULT_RING_CAPACITY,
    maxSamples: opts.maxSamples ?? 400,
    maxPinRows: opts.maxPinRows ?? 2000,
  };
}

function nextColour(d: RunData): number {
  const used = new Set(d.order.map((id) => d.runs[id].info.colour));
  let c = 0;
  while (used.has(c)) c++;
  return c;
}

/** The pin row of a step: the first sample of the prompt, its last generated (tokenised) message. */
export function pinRowOf(entries: SampleEntry[], promptKey: string): PinRow | null {
  for (const e of entries) {
    if (e.sample.promptKey !== promptKey) continue;
    for (let m = e.sample.messages.length - 1; m >= 0; m--) {
      const msg = e.sample.messages[m];
      if (!msg.tokens) continue;
      return {
        runId: e.runId,
        step: e.step,
        role: msg.role,
        pieces: msg.tokens.pieces,
        entropy: msg.tokens.entropy,
        logp: msg.tokens.logp,
      };
    }
  }
  return null;
}

/** Pin rows rebuilt from the retained samples of the active run (used on pin and run switch). */
function rebuildPinRows(d: RunData): PinRow[] {
  if (d.pinnedKey === null || d.activeRunId === null) return [];
  const byStep = new Map<number, SampleEntry[]>();
  for (const e of d.samples) {
    if (e.runId !== d.activeRunId || e.sample.promptKey !== d.pinnedKey) continue;
    const list = byStep.get(e.step);
    if (list) list.push(e);
    else byStep.set(e.step, [e]);
  }
  const rows: PinRow[] = [];
  for (const step of [...byStep.keys()].sort((a, b) => a - b)) {
    const row = pinRowOf(byStep.get(step)!, d.pinnedKey);
    if (row) rows.push(row);
  }
  return rows.slice(-d.maxPinRows);
}

/**
 * Appends one StepReport. A new runId starts a new run (a live run hides the recorded example);
 * a step at or before the run's last step means the run resumed from a checkpoint: the later
 * points, samples and pin rows of that run are dropped first so every curve stays sorted by step.
 */
export function appendReport(d: RunData, report: StepReport, source: RunSource = 'live', label?: string): RunData {
  let runs = d.runs;
  let order = d.order;
  let series = runs[report.runId];
  const resumed = series !== undefined && series.info.reports > 0 && report.step <= series.info.lastStep;
  if (!series) {
    series = {
      info: {
        runId: report.runId,
        recipe: report.recipe,
        source,
        label: label ?? report.runId,
        colour: nextColour(d),
        hidden: false,
        picked: false,
        ended: false,
        reports: 0,
        lastStep: -Infinity,
      },
      metrics: {},
    };
    runs = { ...runs };
    // A new live run shows alone, or beside the few runs the user ticked on (at most
    // MAX_SHOWN - 1, newest first): after five recipes the charts would otherwise overlay five.
    if (source === 'live') {
      const keep = new Set(
        order
          .filter((id) => runs[id].info.picked && !runs[id].info.hidden && runs[id].info.source !== 'example')
          .slice(-(MAX_SHOWN - 1)),
      );
      for (const id of order) {
        if (!keep.has(id) && !runs[id].info.hidden)
          runs[id] = { ...runs[id], info: { ...runs[id].info, hidden: true } };
      }
    }
    order = [...order, report.runId];
  }
  if (resumed) for (const ring of Object.values(series.metrics)) ringTruncateFrom(ring, report.step);
  for (const [name, value] of Object.entries(report.metrics)) {
    let ring = series.metrics[name];
    if (!ring) ring = series.metrics[name] = ringCreate(d.capacity);
    // JSON writes NaN as null: keep it as a gap, never as 0.
    ringPush(ring, report.step, typeof value === 'number' ? value : NaN);
  }
  const info: RunInfo = {
    ...series.info,
    // A report of an ended run means it was resumed: it is live again.
    ended: false,
    recipe: report.recipe,
    reports: series.info.reports + 1,
    lastStep: report.step,
  };
  runs = { ...runs, [report.runId]: { info, metrics: series.metrics } };

  const keep = resumed ? d.samples.filter((e) => e.runId !== report.runId || e.step < report.step) : d.samples;
  const fresh: SampleEntry[] = report.samples.map((sample) => ({
    runId: report.runId,
    step: report.step,
    phase: report.phase,
    sample,
  }));
  let samples = keep.concat(fresh);
  if (samples.length > d.maxSamples) samples = samples.slice(samples.length - d.maxSamples);

  const activeRunId = source === 'live' || d.activeRunId === null ? report.runId : d.activeRunId;
  let pinRows = d.pinRows;
  if (activeRunId !== d.activeRunId) {
    pinRows = rebuildPinRows({ ...d, samples, activeRunId });
  } else if (d.pinnedKey !== null && activeRunId === report.runId) {
    if (resumed) pinRows = pinRows.filter((r) => r.step < report.step);
    const row = pinRowOf(fresh, d.pinnedKey);
    if (row) {
      pinRows = pinRows.concat(row);
      if (pinRows.length > d.maxPinRows) pinRows = pinRows.slice(pinRows.length - d.maxPinRows);
    }
  }
  return { ...d, runs, order, samples, activeRunId, pinRows, version: d.version + 1 };
}

/** Loads a whole recorded run (replay or example), replacing any run with the same runId, and
 *  makes the last report's run the active one. */
export function importReports(d: RunData, reports: StepReport[], source: RunSource, label?: string): RunData {
  let out = d;
  for (const id of new Set(reports.map((r) => r.runId))) out = removeRun(out, id);
  for (const r of reports) out = appendReport(out, r, source, label);
  if (reports.length > 0) out = setActiveRun(out, reports[reports.length - 1].runId);
  return out;
}

export function removeRun(d: RunData, runId: string): RunData {
  if (!d.runs[runId]) return d;
  const runs = { ...d.runs };
  delete runs[runId];
  const order = d.order.filter((id) => id !== runId);
  const samples = d.samples.filter((e) => e.runId !== runId);
  const activeRunId = d.activeRunId === runId ? (order[order.length - 1] ?? null) : d.activeRunId;
  const next = { ...d, runs, order, samples, activeRunId, version: d.version + 1 };
  return { ...next, pinRows: rebuildPinRows(next) };
}

export function setActiveRun(d: RunData, runId: string): RunData {
  if (!d.runs[runId] || d.activeRunId === runId) return d;
  const next = { ...d, activeRunId: runId, version: d.version + 1 };
  return { ...next, pinRows: rebuildPinRows(next) };
}

/** At most this many runs on the charts at once: more curves per panel stop being readable. */
export const MAX_SHOWN = 4;

/**
 * Shows or hides a run by the user's hand (showing one "picks" it: a new live run keeps it).
 * Showing a run beyond MAX_SHOWN hides the longest-shown others.
 */
export function setRunHidden(d: RunData, runId: string, hidden: boolean): RunData {
  const s = d.runs[runId];
  if (!s || (s.info.hidden === hidden && s.info.picked === !hidden)) return d;
  const runs = { ...d.runs, [runId]: { ...s, info: { ...s.info, hidden, picked: !hidden } } };
  if (!hidden) {
    const shown = d.order.filter((id) => id !== runId && !runs[id].info.hidden);
    for (const id of shown.slice(0, Math.max(0, shown.length - (MAX_SHOWN - 1))))
      runs[id] = { ...runs[id], info: { ...runs[id].info, hidden: true, picked: false } };
  }
  return { ...d, runs, version: d.version + 1 };
}

/** A live run stopped, finished or failed: the legend stops calling it live. */
export function endRun(d: RunData, runId: string, stopReason: StopReason | null = null): RunData {
  const s = d.runs[runId];
  const known = s?.info.stopReason;
  if (!s || (s.info.ended && (!stopReason || (known?.kind === stopReason.kind && known.text === stopReason.text))))
    return d;
  const info = { ...s.info, ended: true, stopReason: stopReason ?? s.info.stopReason ?? null };
  return { ...d, runs: { ...d.runs, [runId]: { ...s, info } }, version: d.version + 1 };
}

/** Pins a prompt (null unpins); its rows are backfilled from the samples still retained. */
export function setPinned(d: RunData, promptKey: string | null): RunData {
  const next = { ...d, pinnedKey: promptKey, version: d.version + 1 };
  return { ...next, pinRows: rebuildPinRows(next) };
}

export function setSmoothing(d: RunData, smoothing: number): RunData {
  const s = Number.isFinite(smoothing) ? Math.min(0.99, Math.max(0, smoothing)) : 0;
  return { ...d, smoothing: s };
}

export function setFilter(d: RunData, filter: SampleFilter): RunData {
  return { ...d, filter };
}

export function matchesFilter(e: SampleEntry, filter: SampleFilter): boolean {
  if (filter === 'all') return true;
  return filter === 'successes' ? e.sample.verdict.success : !e.sample.verdict.success;
}

/** Steps of the active run that still have samples, ascending. */
export function sampleSteps(d: Pick<RunData, 'samples' | 'activeRunId'>): number[] {
  const steps = new Set<number>();
  for (const e of d.samples) if (e.runId === d.activeRunId) steps.add(e.step);
  return [...steps].sort((a, b) => a - b);
}

/** Samples of the active run at `step` (default: its latest sampled step), filtered. */
export function samplesAt(d: Pick<RunData, 'samples' | 'activeRunId' | 'filter'>, step?: number): SampleEntry[] {
  const steps = sampleSteps(d);
  const at = step ?? steps[steps.length - 1];
  return d.samples.filter((e) => e.runId === d.activeRunId && e.step === at && matchesFilter(e, d.filter));
}

/** Every metric name of the given runs, sorted. */
export function metricNames(d: RunData, runIds: string[] = d.order): string[] {
  const names = new Set<string>();
  for (const id of runIds) for (const name of Object.keys(d.runs[id]?.metrics ?? {})) names.add(name);
  return [...names].sort();
}

function csvCell(s: string): string {
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/**
 * The metric table as CSV: header `run,step,<metric names sorted>`, then one row per run and step
 * (runs in arrival order, steps ascending). A metric missing at a step is an empty cell; a
 * non-finite value is written as NaN / Infinity / -Infinity.
 */
export function metricTableCsv(d: RunData, runIds: string[] = d.order): string {
  const names = metricNames(d, runIds);
  const lines = [['run', 'step', ...names].map(csvCell).join(',')];
  for (const id of runIds) {
    const s = d.runs[id];
    if (!s) continue;
    const byStep = new Map<number, (number | undefined)[]>();
    names.forEach((name, col) => {
      const ring = s.metrics[name];
      if (!ring) return;
      const { x, y } = ringArrays(ring);
      for (let i = 0; i < x.length; i++) {
        let row = byStep.get(x[i]);
        if (!row) byStep.set(x[i], (row = new Array(names.length).fill(undefined)));
        row[col] = y[i];
      }
    });
    for (const step of [...byStep.keys()].sort((a, b) => a - b)) {
      const cells = byStep.get(step)!.map((v) => (v === undefined ? '' : String(v)));
      lines.push([csvCell(id), String(step), ...cells].join(','));
    }
  }
  return lines.join('\n') + '\n';
}

/** Last step with a point in any metric of the run. */
export function lastMetricStep(s: RunSeries): number | undefined {
  let last: number | undefined;
  for (const ring of Object.values(s.metrics)) {
    const x = ringLastX(ring);
    if (x !== undefined && (last === undefined || x > last)) last = x;
  }
  return last;
}

export interface RunState extends RunData {
  append(report: StepReport, source?: RunSource, label?: string): void;
  importRun(reports: StepReport[], source: RunSource, label?: string): void;
  removeRun(runId: string): void;
  setActiveRun(runId: string): void;
  setRunHidden(runId: string, hidden: boolean): void;
  endRun(runId: string, stopReason?: StopReason | null): void;
  pin(promptKey: string | null): void;
  setSmoothing(smoothing: number): void;
  setFilter(filter: SampleFilter): void;
}

export const useRunStore = create<RunState>()((set) => ({
  ...initialRunData(),
  append: (report, source, label) => set((s) => appendReport(s, report, source, label)),
  importRun: (reports, source, label) => set((s) => importReports(s, reports, source, label)),
  removeRun: (runId) => set((s) => removeRun(s, runId)),
  setActiveRun: (runId) => set((s) => setActiveRun(s, runId)),
  setRunHidden: (runId, hidden) => set((s) => setRunHidden(s, runId, hidden)),
  endRun: (runId, stopReason) => set((s) => endRun(s, runId, stopReason)),
  pin: (promptKey) => set((s) => setPinned(s, promptKey)),
  setSmoothing: (smoothing) => set((s) => setSmoothing(s, smoothing)),
  setFilter: (filter) => set((s) => setFilter(s, filter)),
}));
