// The recipes that left out their rollout throughput (perf/tokens_per_s, the Charts panel's
// Throughput group, empty for them) report it: two steps each on the report-identity cases' first
// configuration (arena: one step per phase; tokenbuncher: a noiser step, then an RL step; minmax
// and rlhf: a step that samples). redteam, attack and multiturn reported it before.
import { describe, expect, it } from 'vitest';
import { REPORT_CASES, reportEnv } from '../../dev/test/reportCases';
import { createRun } from './registry';

const SAMPLING = ['defend', 'tokenbuncher', 'arena', 'minmax', 'rlhf'];
const REUSES_ROLLOUTS = new Set(['minmax', 'rlhf']);

describe.each(SAMPLING)('%s', (recipe) => {
  it('reports a positive, finite perf/tokens_per_s on every step', async () => {
    const c = REPORT_CASES[recipe][0];
    const { run } = await createRun(reportEnv(), recipe, c.config, c.seed);
    try {
      for (let s = 0; s < 2; s++) {
        const v = (await run.step()).metrics['perf/tokens_per_s'];
        // minmax's second step of a cycle may reuse the first's rollout: it sampled nothing, says nothing.
        if (s > 0 && v === undefined && REUSES_ROLLOUTS.has(recipe)) continue;
        expect(Number.isFinite(v) && v > 0, `step ${s}: ${v}`).toBe(true);
      }
    } finally {
      run.dispose();
    }
  }, 300_000);
});
