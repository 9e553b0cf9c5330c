// Run progress from the finish times of the latest steps: steps per second over a recent window
// (so a slow first step, shader compiles and model loading, fades out) and, with a step limit,
// the time left.

export const PROGRESS_WINDOW = 10;

export interface Progress {
  stepsPerSec: number | null;
  remainingMs: number | null;
}

/** `times`: finish time (ms) of each recent step, oldest first. */
export function progressOf(times: readonly number[], step: number, maxSteps: number | null): Progress {
  const w = times.slice(-PROGRESS_WINDOW);
  if (w.length < 2 || w[w.length - 1] <= w[0]) return { stepsPerSec: null, remainingMs: null };
  const stepsPerSec = (w.length - 1) / ((w[w.length - 1] - w[0]) / 1000);
  const remainingMs = maxSteps !== null && maxSteps >= step ? ((maxSteps - step) / stepsPerSec) * 1000 : null;
  return { stepsPerSec, remainingMs };
}

export function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h ${String(m % 60).padStart(2, '0')}m`;
}
