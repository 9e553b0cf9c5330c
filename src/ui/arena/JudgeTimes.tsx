// The step view's line on the judges: each judge's latency at the shown step and its share of the
// step's time (perf/judge_ms/<judge>, perf/judge_share/<judge>, recipes/kit/judgeTiming.ts).
import { ringArrays, type Ring } from '../../store/runStoreSeries';

export interface JudgeTime {
  name: string;
  ms: number;
  share: number;
}

function at(ring: Ring | undefined, step: number): number | undefined {
  if (!ring) return undefined;
  const { x, y } = ringArrays(ring);
  const i = x.lastIndexOf(step);
  return i < 0 ? undefined : y[i];
}

/** The judges a run reported at `step`, by name. */
export function judgeTimesAt(metrics: Record<string, Ring>, step: number): JudgeTime[] {
  const out: JudgeTime[] = [];
  for (const key of Object.keys(metrics)) {
    if (!key.startsWith('perf/judge_ms/')) continue;
    const name = key.slice('perf/judge_ms/'.length);
    const ms = at(metrics[key], step);
    if (ms !== undefined) out.push({ name, ms, share: at(metrics[`perf/judge_share/${name}`], step) ?? 0 });
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

export function JudgeTimes({ times }: { times: JudgeTime[] }) {
  if (times.length === 0) return null;
  return (
    <span className="small" data-testid="judge-times">
      {times
        .map(
          (t) =>
            `judge ${t.name} ${t.ms < 100 ? t.ms.toFixed(1) : t.ms.toFixed(0)} ms (${(100 * t.share).toFixed(0)}% of the step)`,
        )
        .join(' · ')}
    </span>
  );
}
