// The report-identity cases (issue 45): every recipe, three configurations each, three steps on
// the fixture model (dev/fixtures/tiny-llama-f32, char codec, letters judges), tfjs CPU backend.
// src/recipes/reportIdentity.test.ts recomputes them and compares each step's report, serialized
// by `canonicalReport`, byte for byte with dev/fixtures/recipe-reports/<recipe>.json, captured
// from the code before the step was moved into the kit. Regenerate (only on purpose, e.g. when the
// sandbox QA items change minmax / rlhf) with one command:
//   UPDATE_REPORT_FIXTURES=minmax,rlhf npx vitest run src/recipes/reportIdentity.test.ts
// (a comma list of recipes, or `all`).
import { resolve } from 'node:path';
import { nodeRecipeEnv } from '../../src/cli/recipe-env';
import type { StepReport } from '../../src/contract/report';
import { letterJudge, lettersWithTasks, loadWithCharCodec } from './recipeTesting';

export const REPORT_FIXTURES = resolve('dev/fixtures/recipe-reports');
export const REPORT_STEPS = 3;

/** The env every case runs in: the fixture folder, the char codec and the two letters judges. */
export const reportEnv = () =>
  nodeRecipeEnv({
    modelsDir: resolve('dev/fixtures'),
    load: loadWithCharCodec,
    judges: { letters: letterJudge, 'letters-tasks': lettersWithTasks },
  });

export interface ReportCase {
  name: string;
  seed: number;
  config: Record<string, unknown>;
  /**
   * Set when a step after the second first touches something lazily built (a player's first
   * update under two timescales builds its optimizer moments): the steady live-tensor check
   * between steps 2 and 3 does not apply; the after-dispose check still does.
   */
  lazyThirdStep?: string;
}

const M = 'tiny-llama-f32';

const redteam = {
  defender: M,
  judge: 'letters',
  prompts: 2,
  groupSize: 3,
  maxNewTokens: 5,
  promptPool: 8,
  samples: 2,
  lr: 2e-2,
};
const attack = {
  attacker: M,
  defender: M,
  judge: 'letters',
  goals: 2,
  groupSize: 3,
  attackerMaxTokens: 6,
  defenderMaxTokens: 5,
  goalPool: 8,
  samples: 2,
  lr: 2e-2,
};
const defend = {
  attacker: M,
  defender: M,
  judge: 'letters-tasks',
  goals: 2,
  benignPrompts: 1,
  groupSize: 3,
  attackerMaxTokens: 6,
  maxNewTokens: 5,
  goalPool: 8,
  samples: 3,
  lr: 2e-2,
};
const tokenbuncher = {
  defender: M,
  judge: 'letters-tasks',
  prompts: 2,
  benignPrompts: 1,
  groupSize: 3,
  maxNewTokens: 5,
  promptPool: 8,
  samples: 3,
  lr: 2e-2,
  noiserStart: 0,
};
const arena = {
  attacker: M,
  defender: M,
  judge: 'letters',
  phaseSteps: 1,
  goals: 2,
  groupSize: 3,
  benignPrompts: 1,
  attackerMaxTokens: 6,
  defenderMaxTokens: 5,
  goalPool: 8,
  samples: 3,
  attackerLr: 2e-2,
  defenderLr: 2e-2,
};
const multiturn = {
  defender: M,
  attacker: M,
  judge: 'letters',
  episodes: 1,
  benignEpisodes: 1,
  groupSize: 3,
  maxNewTokens: 5,
  attackerMaxTokens: 5,
  goalPool: 8,
  samples: 2,
  lr: 2e-2,
};
const game = {
  policy: M,
  monitor: M,
  rm: 'letters',
  items: 2,
  groupSize: 2,
  policyMaxTokens: 4,
  monitorMaxTokens: 4,
  itemPool: 8,
  samples: 2,
  policyLr: 2e-2,
  temperature: 0.7,
};
const filter = { filterGroups: true, maxNumGenBatches: 2 };

/** Three configurations per recipe: the small default, and two that switch on the options the step carries. */
export const REPORT_CASES: Record<string, ReportCase[]> = {
  redteam: [
    { name: 'tinker', seed: 11, config: redteam },
    {
      name: 'tokenbuncher-rloo-ppo-klloss-zscore',
      seed: 12,
      config: {
        ...redteam,
        rewardMode: 'tokenbuncher',
        advantage: 'rloo',
        policyLoss: 'ppo',
        klLossCoef: 0.1,
        zScoreRewards: true,
      },
    },
    {
      name: 'adaptive-remax-filter-eval',
      seed: 13,
      config: {
        ...redteam,
        rewardMode: 'tokenbuncher_adaptive',
        advantage: 'remax',
        klController: 'adaptive',
        ...filter,
        filterGroupsMetric: 'seq_final_reward',
        evalEvery: 2,
        evalPrompts: 2,
      },
    },
  ],
  attack: [
    { name: 'default', seed: 7, config: attack },
    {
      name: 'rloo-diversity-klloss',
      seed: 8,
      config: { ...attack, advantage: 'rloo', diversityCoef: 0.5, klLossCoef: 0.1, policyLoss: 'ppo' },
    },
    {
      name: 'gae-filter-adaptive',
      seed: 9,
      config: { ...attack, advantage: 'gae', ...filter, klController: 'adaptive' },
    },
  ],
  defend: [
    { name: 'default', seed: 4, config: defend },
    {
      name: 'rpp-klloss-entropy',
      seed: 5,
      config: { ...defend, advantage: 'reinforce_plus_plus', klLossCoef: 0.1, entropyCoef: 2, klBeta: 0.5 },
    },
    {
      name: 'gae-filter-eval',
      seed: 6,
      config: { ...defend, advantage: 'gae', ...filter, evalEvery: 2, evalGoals: 2, evalBenign: 1 },
    },
  ],
  tokenbuncher: [
    { name: 'default', seed: 3, config: tokenbuncher },
    {
      name: 'no-noiser-rloo-klloss',
      seed: 4,
      config: { ...tokenbuncher, noiser: false, advantage: 'rloo', klLossCoef: 0.1, klBeta: 0.5 },
    },
    {
      name: 'gae-filter-adaptive',
      seed: 5,
      config: { ...tokenbuncher, advantage: 'gae', ...filter, klController: 'adaptive', noiserStart: 1 },
    },
  ],
  arena: [
    { name: 'default', seed: 5, config: arena },
    {
      name: 'defender-first-rloo-klloss',
      seed: 6,
      config: { ...arena, firstPhase: 'defender', advantage: 'rloo', klLossCoef: 0.1, diversityCoef: 0.5 },
    },
    {
      name: 'gae-filter-adaptive',
      seed: 7,
      config: { ...arena, advantage: 'gae', ...filter, klController: 'adaptive' },
    },
  ],
  multiturn: [
    { name: 'default', seed: 11, config: multiturn },
    { name: 'rloo-ppo-klcoef', seed: 12, config: { ...multiturn, advantage: 'rloo', policyLoss: 'ppo', klCoef: 0.1 } },
    {
      name: 'gae-filter-eval',
      seed: 13,
      config: { ...multiturn, advantage: 'gae', ...filter, evalEvery: 2, evalEpisodes: 2 },
    },
  ],
  minmax: [
    {
      name: 'ttur',
      seed: 4,
      config: { ...game, monitorLr: 2e-2, monitorStepsPerPolicy: 2 },
      lazyThirdStep: "steps 1-2 update the monitor, step 3 is the policy's first update",
    },
    {
      name: 'rloo-klloss-one-to-one',
      seed: 5,
      config: { ...game, monitorLr: 2e-2, monitorStepsPerPolicy: 1, advantage: 'rloo', klLossCoef: 0.1 },
    },
    {
      name: 'filter-acc',
      seed: 4,
      config: { ...game, monitorLr: 2e-2, monitorStepsPerPolicy: 1, ...filter, filterGroupsMetric: 'acc' },
    },
  ],
  rlhf: [
    { name: 'monitor', seed: 4, config: game },
    { name: 'none-rloo', seed: 5, config: { ...game, judge: 'none', advantage: 'rloo' } },
    { name: 'filter-klloss', seed: 6, config: { ...game, ...filter, klLossCoef: 0.1 } },
  ],
};

/** JSON with keys sorted at every depth, so the bytes depend on the values only. */
function sortedJson(x: unknown): string {
  return JSON.stringify(x, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );
}

/** A step's report without what depends on the clock (time, timings, perf/*), as sorted-key JSON. */
export function canonicalReport(r: StepReport): string {
  const metrics = Object.fromEntries(Object.entries(r.metrics).filter(([k]) => !k.startsWith('perf/')));
  return sortedJson({ step: r.step, phase: r.phase ?? null, metrics, samples: r.samples });
}
