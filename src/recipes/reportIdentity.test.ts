// Behaviour unchanged (issue 45): every recipe's report over three steps, for three configurations
// each, is byte-identical to the one captured before its step moved into the kit. The fixtures
// (dev/fixtures/recipe-reports/<recipe>.json) name the commit they came from; this is a refactoring
// guard, the recipes' own tests check what the numbers mean. The same runs check that no tensor
// outlives its step or its run. Regenerate one recipe's fixture on
// purpose with UPDATE_REPORT_FIXTURES=<recipe,...|all> (dev/test/reportCases.ts says when).
import { execSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { beforeAll, describe, expect, it } from 'vitest';
import { createRun } from './registry';
import {
  canonicalReport,
  REPORT_CASES,
  REPORT_FIXTURES,
  REPORT_STEPS,
  reportEnv,
  type ReportCase,
} from '../../dev/test/reportCases';

interface Fixture {
  recipe: string;
  commit: string;
  note: string;
  cases: (ReportCase & { reports: string[] })[];
}

const update = new Set((process.env.UPDATE_REPORT_FIXTURES ?? '').split(',').filter(Boolean));
const env = reportEnv();

/** The case's reports, and tfjs's live tensor count before the run, after each step and after dispose. */
async function reports(recipe: string, c: ReportCase): Promise<{ out: string[]; tensors: number[] }> {
  const tensors = [tf.memory().numTensors];
  const { run } = await createRun(env, recipe, c.config, c.seed);
  try {
    const out: string[] = [];
    for (let s = 0; s < REPORT_STEPS; s++) {
      out.push(canonicalReport(await run.step()));
      tensors.push(tf.memory().numTensors);
    }
    return { out, tensors };
  } finally {
    run.dispose();
    tensors.push(tf.memory().numTensors);
  }
}

describe.each(Object.keys(REPORT_CASES))('%s: 3-step reports byte-identical to the fixture', (recipe) => {
  const file = resolve(REPORT_FIXTURES, `${recipe}.json`);
  const regenerate = update.has(recipe) || update.has('all');
  // The env caches the fixture model at its first load; load it before any case counts tensors.
  beforeAll(async () => {
    const c = REPORT_CASES[recipe][0];
    (await createRun(env, recipe, c.config, c.seed)).run.dispose();
  }, 120_000);

  it.skipIf(!regenerate)(
    'regenerates the fixture',
    async () => {
      const cases = [];
      for (const c of REPORT_CASES[recipe]) cases.push({ ...c, reports: (await reports(recipe, c)).out });
      const commit = execSync('git rev-parse HEAD').toString().trim();
      const fixture: Fixture = {
        recipe,
        commit,
        note: `3-step reports (canonicalReport) of ${recipe} on the fixture model, tfjs CPU, at commit ${commit}`,
        cases,
      };
      writeFileSync(file, JSON.stringify(fixture, null, 1) + '\n');
    },
    600_000,
  );

  it.skipIf(regenerate)(
    'each configuration',
    async () => {
      expect(existsSync(file), file).toBe(true);
      const fixture = JSON.parse(readFileSync(file, 'utf8')) as Fixture;
      expect(fixture.cases.map((c) => c.name)).toEqual(REPORT_CASES[recipe].map((c) => c.name));
      for (const [i, c] of REPORT_CASES[recipe].entries()) {
        expect(fixture.cases[i].config, c.name).toEqual(c.config);
        const { out: got, tensors } = await reports(recipe, c);
        for (let s = 0; s < REPORT_STEPS; s++) expect(got[s], `${c.name} step ${s}`).toBe(fixture.cases[i].reports[s]);
        // The same runs show that a step frees what it allocates: after two steps (the optimizer's
        // moments, lazily built heads) the third leaves the live count as it was, and dispose
        // returns it to the count before the run. One leaked tensor a step is a 2,000-step run's
        // memory held again and again until the tab dies.
        const counts = `live tensors before, after each step, after dispose: ${tensors.join(', ')}`;
        if (!c.lazyThirdStep) expect(tensors[REPORT_STEPS], `${c.name}: ${counts}`).toBe(tensors[REPORT_STEPS - 1]);
        expect(tensors[REPORT_STEPS + 1], `${c.name}: ${counts}`).toBe(tensors[0]);
      }
    },
    300_000,
  );
});
