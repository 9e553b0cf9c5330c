// An algorithm option added in the kit once reaches every recipe (issue 45): topEntropyQuantile
// (TRL top_entropy_quantile) lives in kit/commonFields trainingFields, kit/common
// learnFromTokenRewards and rl/entropyMask.ts, and no recipe file names it. Each GRPO-family
// recipe's first RL report-identity configuration takes it, and its step's update learns from about
// that share of the response tokens (batch/high_entropy_tokens, computed inside the update from
// the mask it applies); off (the default) nothing is reported.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createRun } from './registry';
import { REPORT_CASES, REPORT_FIXTURES, reportEnv } from '../../dev/test/reportCases';

const env = reportEnv();
// tokenbuncher's first case runs TokenNoiser, whose SFT steps replace the RL update: its second (noiser off).
const CASE: Record<string, number> = { tokenbuncher: 1 };

async function firstStep(recipe: string, extra: Record<string, unknown>) {
  const c = REPORT_CASES[recipe][CASE[recipe] ?? 0];
  const { run } = await createRun(env, recipe, { ...c.config, ...extra }, c.seed);
  try {
    return await run.step();
  } finally {
    run.dispose();
  }
}

/**
 * The same case's first step at the default: its report fixture, which reportIdentity.test.ts
 * proves byte-identical to a run of it (running it again here was half of this file's 25 s on CI).
 */
function defaultFirstStep(recipe: string): { metrics: Record<string, number | null> } {
  const i = CASE[recipe] ?? 0;
  const fixture = JSON.parse(readFileSync(resolve(REPORT_FIXTURES, `${recipe}.json`), 'utf8')) as {
    cases: { name: string; config: unknown; reports: string[] }[];
  };
  expect(fixture.cases[i].name).toBe(REPORT_CASES[recipe][i].name);
  expect(fixture.cases[i].config).toEqual(REPORT_CASES[recipe][i].config);
  return JSON.parse(fixture.cases[i].reports[0]) as { metrics: Record<string, number | null> };
}

describe('topEntropyQuantile reaches every GRPO-family recipe from the kit', () => {
  it.each(Object.keys(REPORT_CASES))(
    '%s: the update keeps about a quarter of the tokens at 0.25, and reports nothing at the default',
    async (recipe) => {
      const on = await firstStep(recipe, { topEntropyQuantile: 0.25 });
      const share = on.metrics['batch/high_entropy_tokens'];
      // (1 - 0.75 interpolated) of n tokens: between 0.25 - 1/n and 0.25 + 1/n, n >= 10 here.
      expect(share).toBeGreaterThan(0.14);
      expect(share).toBeLessThan(0.36);
      const off = defaultFirstStep(recipe);
      expect(off.metrics['grad/norm']).toBeGreaterThan(0);
      expect(off.metrics).not.toHaveProperty('batch/high_entropy_tokens');
      // The policy term changed: fewer tokens carry an advantage, so the gradient differs.
      expect(on.metrics['grad/norm']).not.toBe(off.metrics['grad/norm']);
    },
    180_000,
  );
});
