// Each judge's latency and its share of the step, for every recipe: the run's env hands out judges
// wrapped in a clock, and the run's step adds what the clock saw to the report as
// perf/judge_ms and perf/judge_share (all judges) and perf/judge_ms/<judge>, perf/judge_share/<judge>.
// Time is counted as busy wall time (intervals with a call in flight), so overlapping calls of
// one judge count once and a share never exceeds 1. A judge loaded on first use (llm-guard,
// classifier) counts its loading in the step that first scores.
import type { Judge } from '../../judges/types';
import type { Metrics } from '../../contract/report';
import type { AnyRecipe, RecipeEnv, RecipeRun } from './types';
import type { ConfigOf, Schema } from '../../contract/schema';

class Busy {
  private active = 0;
  private since = 0;
  private ms = 0;
  enter(now: number): void {
    if (this.active++ === 0) this.since = now;
  }
  leave(now: number): void {
    if (--this.active === 0) this.ms += now - this.since;
  }
  /** Busy ms since the last take (an interval still open is counted up to now and goes on). */
  take(now: number): number {
    let ms = this.ms;
    if (this.active > 0) {
      ms += now - this.since;
      this.since = now;
    }
    this.ms = 0;
    return ms;
  }
}

export class JudgeClock {
  private readonly all = new Busy();
  private readonly each = new Map<string, Busy>();
  constructor(private readonly now: () => number = () => performance.now()) {}

  /** `judge` with its score() calls timed under its name. */
  timed(judge: Judge): Judge {
    let b = this.each.get(judge.name);
    if (!b) this.each.set(judge.name, (b = new Busy()));
    const busy = b;
    return {
      name: judge.name,
      score: async (items, o) => {
        const t0 = this.now();
        busy.enter(t0);
        this.all.enter(t0);
        try {
          return await judge.score(items, o);
        } finally {
          const t1 = this.now();
          busy.leave(t1);
          this.all.leave(t1);
        }
      },
      dispose: judge.dispose ? () => judge.dispose?.() : undefined,
    };
  }

  /** The judge metrics of a step that took `stepMs`, and a fresh count for the next one. */
  take(stepMs: number): Metrics {
    const now = this.now();
    const share = (ms: number) => (stepMs > 0 ? Math.min(1, ms / stepMs) : 0);
    const total = this.all.take(now);
    const m: Metrics = { 'perf/judge_ms': total, 'perf/judge_share': share(total) };
    for (const [name, b] of this.each) {
      const ms = b.take(now);
      m[`perf/judge_ms/${name}`] = ms;
      m[`perf/judge_share/${name}`] = share(ms);
    }
    return m;
  }
}

/** `env` whose judges are timed by `clock`. */
export function timedEnv(env: RecipeEnv, clock: JudgeClock): RecipeEnv {
  return {
    ...env,
    loadModel: env.loadModel.bind(env),
    readText: env.readText?.bind(env),
    judge: (name, o) => clock.timed(env.judge(name, o)),
  };
}

/** `run` with the clock's judge metrics added to each step's report. */
export function withJudgeTiming(
  run: RecipeRun,
  clock: JudgeClock,
  now: () => number = () => performance.now(),
): RecipeRun {
  const step = run.step.bind(run);
  run.step = async () => {
    clock.take(0); // time spent outside a step (an evaluation at creation) is not this step's
    const t0 = now();
    const r = await step();
    Object.assign(r.metrics, clock.take(now() - t0));
    return r;
  };
  return run;
}

/** recipe.create with each judge's latency and share in every step report. */
export async function createTimedRun<S extends Schema>(
  recipe: AnyRecipe,
  env: RecipeEnv,
  config: ConfigOf<S>,
  seed: number,
): Promise<RecipeRun> {
  const clock = new JudgeClock();
  return withJudgeTiming(await recipe.create(timedEnv(env, clock), config as ConfigOf<Schema>, seed), clock);
}
