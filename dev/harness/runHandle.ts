// Test handle on the lab page's run store: feed StepReports as a live run would (the worker's
// report stream calls the same `append`), read a summary or a run's metrics and rollouts by step,
// and start a run the way the Start button does (the form's start path, its step limit).
// Plain data only. The product never installs it: the harness page that renders the lab for the
// browser tests calls installRunHandle() (the lab itself puts nothing on `window`).
import type { RolloutSample, StepReport } from '../../src/contract/report';
import { useRunStore } from '../../src/store/runStore';
import { ringArrays } from '../../src/store/runStoreSeries';
import { startRun } from '../../src/ui/controls/runActions';

export interface RunHandle {
  append(report: StepReport): void;
  summary(): {
    runs: { runId: string; source: string; hidden: boolean; reports: number }[];
    activeRunId: string | null;
    version: number;
  };
  /** A run's metrics by step (NaN written as null), in step order. */
  metrics(runId: string): { step: number; metrics: Record<string, number | null> }[];
  /** The run's rollouts the store keeps (the latest, at most its sample cap). */
  samples(runId: string): { step: number; sample: RolloutSample }[];
  /** Start `recipe` with these field values (strings, as the form holds them); it stops after `maxSteps`. False when refused. */
  start(recipe: string, values: Record<string, string | boolean>, seed: number, maxSteps: number): Promise<boolean>;
}

declare global {
  interface Window {
    sparringRuns?: RunHandle;
  }
}

export function installRunHandle(): void {
  window.sparringRuns = {
    append: (report) => useRunStore.getState().append(report, 'live'),
    summary: () => {
      const s = useRunStore.getState();
      return {
        runs: s.order.map((id) => ({
          runId: id,
          source: s.runs[id].info.source,
          hidden: s.runs[id].info.hidden,
          reports: s.runs[id].info.reports,
        })),
        activeRunId: s.activeRunId,
        version: s.version,
      };
    },
    metrics: (runId) => {
      const series = useRunStore.getState().runs[runId];
      const steps = new Map<number, Record<string, number | null>>();
      for (const [name, ring] of Object.entries(series?.metrics ?? {})) {
        const { x, y } = ringArrays(ring);
        x.forEach((step, i) => {
          if (!steps.has(step)) steps.set(step, {});
          steps.get(step)![name] = Number.isNaN(y[i]) ? null : y[i];
        });
      }
      return [...steps].sort((a, b) => a[0] - b[0]).map(([step, metrics]) => ({ step, metrics }));
    },
    samples: (runId) =>
      useRunStore
        .getState()
        .samples.filter((e) => e.runId === runId)
        .map((e) => ({ step: e.step, sample: e.sample })),
    start: (recipe, values, seed, maxSteps) =>
      startRun({ recipe, values, seed: String(seed), maxSteps: String(maxSteps), atMax: 'stop' }),
  };
}
