// Learning tests of the MinMax game on the sandbox qa model (issue 43, point 4), read through the
// recipe's config and reports only. They fail when the monitor's reward sign is flipped, when its
// updates are off, or when dual ascent is off (lambda frozen).
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeRecipeEnv } from '../../cli/recipe-env';
import { createRun } from '../registry';
import type { StepReport } from '../../contract/report';

const MODELS = resolve('public/models');
const HAVE_QA = existsSync(resolve(MODELS, 'qa/model.safetensors'));
const UPDATES = 6;

/** Small batches; monitor updates only (k larger than the run) unless a case sets k. */
const game = {
  items: 2,
  groupSize: 4,
  policyMaxTokens: 8,
  monitorMaxTokens: 24,
  samples: 0,
  evalItems: 8,
  // One sampled answer per held-out item: these cases read the monitor, not the policy.
  evalSamples: 1,
  evalEvery: UPDATES,
  monitorStepsPerPolicy: 1000,
  // A fresh batch per update: one shared rollout would let the PPO clip stop the later updates.
  rolloutSharing: 'update',
  // Chosen by runs of this case (seed 7, balanced CORRECT share before -> after): at lr 0.05 the
  // critic collapsed to INCORRECT in 4 updates with the reward's sign flipped too (0.813 -> 0.000);
  // at 0.01 x 4 it barely moved (0.813 -> 0.875, flipped 0.813); at 0.02 x 6 updates 0.813 -> 0.188,
  // and 0.813 -> 0.875 with the sign flipped.
  monitorLr: 0.02,
};

async function play(cfg: Record<string, unknown>, steps: number): Promise<StepReport[]> {
  const { run } = await createRun(nodeRecipeEnv({ modelsDir: MODELS }), 'minmax', { ...game, ...cfg }, 7);
  const reports: StepReport[] = [];
  try {
    for (let s = 0; s < steps; s++) reports.push(await run.step());
  } finally {
    run.dispose();
  }
  return reports;
}

const show = (rs: StepReport[], k: string) => rs.map((r) => (r.metrics[k] ?? NaN).toFixed(3)).join(' ');

describe.skipIf(!HAVE_QA)('minmax learning (sandbox qa model)', () => {
  it('lambda held at 0 (monitor reward -10 J): the monitor learns to say CORRECT less on held-out items', async () => {
    // The critic starts saying CORRECT to 0.813 of the balanced held-out set (plain and confident
    // answers, half of them wrong); a reward that pays INCORRECT must take that share down: 0.813 ->
    // 0.000 on the format-blind-spot qa model (issue 43, third round). Broken and run (2026-11-29):
    // with the monitor's reward sign flipped it went 0.813 -> 0.719, with its updates off (lr 0 on
    // its steps) 0.813 -> 0.813; both fail here. The lr comment above is from an earlier qa model.
    const rs = await play({ lambda0: 0, dualStep: 0 }, UPDATES + 1);
    const k = 'eval/monitor_says_correct_balanced';
    const note = `greedy ${show(rs, k)} | sampled ${show(rs, 'monitor/says_correct')}`;
    expect(rs.map((r) => r.phase)).toEqual(Array(UPDATES + 1).fill('monitor'));
    expect(rs.map((r) => r.metrics['dual/lambda'])).toEqual(Array(UPDATES + 1).fill(0));
    expect(rs[0].metrics[k], note).toBeGreaterThan(0.6);
    expect(rs[0].metrics[k] - rs[UPDATES].metrics[k], note).toBeGreaterThan(0.25);
  }, 900_000);

  it('the default game (lambda 10, dual ascent): the monitor learns to reject wrong confident answers on held-out items', async () => {
    // The format blind spot (issue 43, third round): the frozen critic accepts most wrong answers
    // written confidently. The monitor's reward (-10 J - lambda F, F per critique) pays it to reject
    // them, and its samples hold some INCORRECT there (the soft blind spot), so its updates must raise
    // its INCORRECT share on them: 0.063 -> 0.688 (2026-11-29), though it then also rejected 0.688 of
    // the right confident answers (0.000 before): it learns from its blind spot by distrusting the
    // format more than by checking, as in the runs (EXPERIMENTS.md, issue 43 third round). Broken and
    // run: sign flipped 0.063 -> 0.000, monitor updates off 0.063 -> 0.063; both fail here. Read as
    // INCORRECT, not as fewer CORRECT: with the sign flipped the accept rate fell as well (a flipped
    // reward pays a low critique RM, so critiques lost their verdict), and an accept-rate check passed.
    const rs = await play({ evalItems: 16 }, UPDATES + 1);
    const k = 'eval/monitor_rejects_wrong_confident';
    const note = `${show(rs, k)} | rejects right confident ${show(rs, 'eval/monitor_rejects_right_confident')}`;
    expect(rs[0].metrics[k], note).toBeLessThan(0.3);
    expect(rs[UPDATES].metrics[k] - rs[0].metrics[k], note).toBeGreaterThan(0.3);
  }, 900_000);

  it("dual ascent: lambda moves by 0.25 (F - delta) at each cycle's first update, from the start value, over two cycles", async () => {
    // k = 1: steps 0 and 2 open a cycle (monitor update), 1 and 3 are policy updates. Each step's
    // lambda is checked against the dual step computed here from its reported F, and it must have
    // moved (a frozen lambda stays at 10 while F != delta: the sandbox monitor's F was -4.6 to 3.0 in
    // issue 43's third-round runs, almost never -3.6; lambda ended at 10.11 on this case). Broken and
    // run with lambda frozen (2026-11-29): step 0 expected 9.7, got 10, so this case fails.
    const rs = await play({ monitorStepsPerPolicy: 1, evalEvery: 0, items: 2, groupSize: 2 }, 4);
    expect(rs.map((r) => r.phase)).toEqual(['monitor', 'policy', 'monitor', 'policy']);
    let lambda = 10;
    for (const [s, r] of rs.entries()) {
      const m = r.metrics;
      expect(m['dual/lambda_before'], `step ${s}`).toBeCloseTo(lambda, 9);
      if (s % 2 === 0) lambda = Math.min(30, Math.max(0, lambda + 0.25 * (m['minmax/fidelity'] + 3.6)));
      expect(m['dual/lambda'], `step ${s}`).toBeCloseTo(lambda, 9);
    }
    expect(Math.abs(lambda - 10)).toBeGreaterThan(0.05);
  }, 300_000);
});
