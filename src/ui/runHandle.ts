// Console and test handle on the run store: feed StepReports as a live run would (the worker's
// report stream calls the same `append`), and read a summary. Plain data only.
import type { StepReport } from '../recipes/report';
import { useRunStore } from '../store/runStore';

export interface RunHandle {
  append(report: StepReport): void;
  summary(): { runs: { runId: string; source: string; hidden: boolean; reports: number }[]; activeRunId: string | null; version: number };
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
        runs: s.order.map((id) => ({ runId: id, source: s.runs[id].info.source, hidden: s.runs[id].info.hidden, reports: s.runs[id].info.reports })),
        activeRunId: s.activeRunId,
        version: s.version,
      };
    },
  };
}
