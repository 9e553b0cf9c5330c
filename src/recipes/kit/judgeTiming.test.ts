// Judge latency in the step report: a clock test on hand-set times (overlapping calls count once),
// and every recipe that scores with a judge, run one step with a stand-in judge that takes a known
// time per call: the reported latency is at least that and its share lies in (0, 1].
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeRecipeEnv } from '../../cli/recipe-env';
import { summaryLine } from '../../cli/recipe-run';
import { createRulesJudge } from '../../judges/rules';
import type { Judge } from '../../judges/types';
import { JudgeClock } from './judgeTiming';
import { createRun } from '../registry';
import { loadWithCharCodec } from '../../../dev/test/recipeTesting';

const FIXTURE = resolve('dev/fixtures/tiny-llama-f32');
const DELAY = 40;

describe('JudgeClock', () => {
  it('counts busy wall time per judge and in all, overlapping calls once, and resets per step', async () => {
    let t = 0;
    const clock = new JudgeClock(() => t);
    const gate = () => {
      let open!: () => void;
      const p = new Promise<void>((ok) => (open = ok));
      return { p, open };
    };
    const g1 = gate();
    const g2 = gate();
    const g3 = gate();
    const stub = (name: string, g: { p: Promise<void> }): Judge => ({ name, score: async () => (await g.p, []) });
    const a = clock.timed(stub('a', g1));
    const a2 = clock.timed(stub('a', g2));
    const b = clock.timed(stub('b', g3));
    const c1 = a.score([]); // a busy from 0
    t = 10;
    const c2 = a2.score([]); // a still busy: overlaps
    const c3 = b.score([]); // b busy from 10
    t = 30;
    g1.open();
    await c1;
    t = 50;
    g2.open();
    await c2; // a: 0..50
    t = 70;
    g3.open();
    await c3; // b: 10..70; all: 0..70
    expect(clock.take(100)).toEqual({
      'perf/judge_ms': 70,
      'perf/judge_share': 0.7,
      'perf/judge_ms/a': 50,
      'perf/judge_share/a': 0.5,
      'perf/judge_ms/b': 60,
      'perf/judge_share/b': 0.6,
    });
    expect(clock.take(100)['perf/judge_ms/a']).toBe(0);
  });
});

describe('every recipe with a judge reports its latency and share of the step', () => {
  /** The rules judge, DELAY ms slower per call. */
  const slow = (): Judge => {
    const inner = createRulesJudge();
    return {
      name: 'slow',
      score: async (items, o) => (await new Promise((ok) => setTimeout(ok, DELAY)), inner.score(items, o)),
    };
  };
  const env = nodeRecipeEnv({ modelsDir: resolve(FIXTURE, '..'), load: loadWithCharCodec, judges: { slow } });
  const M = 'tiny-llama-f32';
  const cases: [string, Record<string, unknown>][] = [
    ['redteam', { defender: M, prompts: 2, groupSize: 2, maxNewTokens: 3, promptPool: 8, samples: 1 }],
    [
      'attack',
      {
        attacker: M,
        defender: M,
        goals: 2,
        groupSize: 2,
        attackerMaxTokens: 3,
        defenderMaxTokens: 3,
        goalPool: 8,
        samples: 1,
      },
    ],
    [
      'defend',
      {
        attacker: M,
        defender: M,
        goals: 2,
        benignPrompts: 1,
        groupSize: 2,
        attackerMaxTokens: 3,
        maxNewTokens: 3,
        goalPool: 8,
        samples: 1,
        evalEvery: 0,
      },
    ],
    [
      'arena',
      {
        attacker: M,
        defender: M,
        phaseSteps: 1,
        goals: 2,
        benignPrompts: 1,
        groupSize: 2,
        attackerMaxTokens: 3,
        defenderMaxTokens: 3,
        goalPool: 8,
        samples: 1,
      },
    ],
    [
      'tokenbuncher',
      { defender: M, prompts: 2, benignPrompts: 1, groupSize: 2, maxNewTokens: 3, promptPool: 8, samples: 1 },
    ],
    [
      'multiturn',
      {
        defender: M,
        followUps: 'attacker',
        attacker: M,
        episodes: 1,
        benignEpisodes: 1,
        groupSize: 2,
        maxNewTokens: 3,
        maxTurns: 2,
        goalPool: 8,
        samples: 1,
      },
    ],
  ];
  for (const [recipe, config] of cases) {
    it(
      recipe,
      async () => {
        const { run } = await createRun(env, recipe, { ...config, judge: 'slow' }, 1);
        try {
          const r = await run.step();
          expect(r.metrics['perf/judge_ms/slow'], recipe).toBeGreaterThanOrEqual(DELAY - 1);
          expect(r.metrics['perf/judge_ms']).toBeGreaterThanOrEqual(r.metrics['perf/judge_ms/slow']);
          expect(r.metrics['perf/judge_share/slow']).toBeGreaterThan(0);
          expect(r.metrics['perf/judge_share/slow']).toBeLessThanOrEqual(1);
          // The share is of this step's wall time: latency / share is about the step's own time.
          expect(r.metrics['perf/judge_ms/slow'] / r.metrics['perf/judge_share/slow']).toBeLessThanOrEqual(
            r.timings.total_ms + 50,
          );
          expect(summaryLine(r)).toMatch(/judge slow \d+(\.\d+)? ms \(\d+%\)/);
        } finally {
          run.dispose();
        }
      },
      60_000,
    );
  }

  it('a recipe that calls no judge reports zero judge time', async () => {
    const { run } = await createRun(
      env,
      'rlhf',
      { policy: M, monitor: M, judge: 'none', items: 2, groupSize: 2, policyMaxTokens: 3, itemPool: 8, samples: 1 },
      1,
    );
    try {
      const r = await run.step();
      expect([r.metrics['perf/judge_ms'], r.metrics['perf/judge_share']]).toEqual([0, 0]);
    } finally {
      run.dispose();
    }
  }, 60_000);
});
