import { describe, expect, it } from 'vitest';
import { ringCreate, ringPush } from '../../store/runStoreSeries';
import { CHART_GROUPS, groupMetrics, OTHER_GROUP } from '../charts/groups';
import { judgeTimesAt } from './JudgeTimes';

describe("the step view's judge times", () => {
  it("reads each judge's latency and share at the shown step, not at another", () => {
    const ring = (pts: [number, number][]) => {
      const r = ringCreate(8);
      for (const [x, y] of pts) ringPush(r, x, y);
      return r;
    };
    const metrics = {
      'perf/judge_ms': ring([
        [0, 30],
        [1, 50],
      ]),
      'perf/judge_ms/rules': ring([
        [0, 10],
        [1, 20],
      ]),
      'perf/judge_share/rules': ring([
        [0, 0.1],
        [1, 0.2],
      ]),
      'perf/judge_ms/llm-guard': ring([[1, 40]]),
      'perf/judge_share/llm-guard': ring([[1, 0.4]]),
      'reward/mean': ring([
        [0, 1],
        [1, 2],
      ]),
    };
    expect(judgeTimesAt(metrics, 1)).toEqual([
      { name: 'llm-guard', ms: 40, share: 0.4 },
      { name: 'rules', ms: 20, share: 0.2 },
    ]);
    expect(judgeTimesAt(metrics, 0)).toEqual([{ name: 'rules', ms: 10, share: 0.1 }]);
    expect(judgeTimesAt(metrics, 5)).toEqual([]);
  });
});

describe('the judge share chart', () => {
  it('takes the shares, all judges and each; the latencies stay with the other metrics', () => {
    const names = [
      'perf/judge_share',
      'perf/judge_share/rules',
      'perf/judge_ms',
      'perf/judge_ms/rules',
      'perf/step_ms',
    ];
    expect(
      groupMetrics(
        CHART_GROUPS.find((g) => g.id === 'judgetime')!,
        names,
      ),
    ).toEqual(['perf/judge_share', 'perf/judge_share/rules']);
    expect(groupMetrics(OTHER_GROUP, names)).toEqual(['perf/judge_ms', 'perf/judge_ms/rules']);
  });
});
