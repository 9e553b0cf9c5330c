// The worked example of docs/guides/add-a-recipe.md: a whole GRPO recipe in one module, on the kit
// step. `letters` trains the defender to write the letters A-E (the letters judge's "harm"),
// reward = harm - klBeta x KL. It declares its fields, its draw and its filter metric, nothing of
// the step itself; dynamic sampling, every estimator and loss, the KL controller and the report's
// shared metrics come from kit/groupStep.ts.
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeRecipeEnv } from '../../cli/recipe-env';
import { int, num, str, type ConfigOf } from '../../contract/schema';
import type { RolloutSample } from '../../contract/report';
import type { Judge } from '../../judges/types';
import type { LoraSet } from '../../model/lora';
import { hash3 } from '../../model/random';
import type { AdamW } from '../../rl/optim';
import { letterJudge, loadWithCharCodec } from '../../../dev/test/recipeTesting';
import { createRun, registerRecipe, unregisterRecipe } from '../registry';
import { checkFiniteRewards, harmVerdict, KlCtrl, meanOf } from './common';
import * as f from './commonFields';
import { harmAcc } from './dynamicGroups';
import { groupMetrics, groupSamples, groupStep } from './groupStep';
import { modelWrittenPrompts } from './promptBudget';
import { klAndEntropy, rowAdvantage, rowTrace, sampleReplies } from './rollout';
import { createWithCleanup, LoraRun, PhaseTimer, type StepBody } from './run';
import type { LoadedModel, Recipe } from './types';

const PROMPTS = ['Say something.', 'Write a word.', 'Go on.', 'Reply.'];

const lettersSchema = {
  defender: str('defender', 'model to train', { nonEmpty: true }),
  judge: str('letters', 'harm scorer', { nonEmpty: true }),
  prompts: int(2, 'prompts per step', { min: 1, max: PROMPTS.length }),
  groupSize: int(4, 'answers per prompt', { min: 2, max: 64 }),
  maxNewTokens: int(6, 'answer length cap', { min: 1, max: 256 }),
  temperature: num(1, 'sampling temperature', { min: 0.05, max: 2 }),
  lr: num(2e-2, 'Adam learning rate', { min: 0, max: 1 }),
  klBeta: num(0.05, 'KL-in-reward coefficient', { min: 0, max: 10 }),
  samples: int(8, 'rollouts in each report', { min: 0, max: 64 }),
  ...f.adamFields({}),
  ...f.loraFields({ rank: 4, alpha: 8 }, 'enough for the fixture'),
  ...f.policyGradientFields(
    ['grpo', 'rloo'],
    { advantage: 'grpo', normAdvByStd: true, policyLoss: 'ppo' },
    {
      advantage: 'estimator',
      stdNote: 'GRPO',
      policyLoss: 'loss',
    },
  ),
  ...f.trainingFields({ skipZeroAdvantageGroups: false, skipNote: 'veRL' }),
  ...f.filterGroupsFields('prompts', 'the judge calls the answer harmful'),
  ...f.klControllerFields(),
  ...f.klLossFields(),
  ...f.maskTruncatedField(),
};
type LettersConfig = ConfigOf<typeof lettersSchema>;

class LettersRun extends LoraRun {
  readonly recipe = 'letters';
  private readonly klCtrl: KlCtrl;
  constructor(
    private readonly m: LoadedModel,
    readonly lora: LoraSet,
    readonly optimizer: AdamW,
    private readonly judge: Judge,
    readonly config: LettersConfig,
    readonly seed: number,
  ) {
    super();
    this.klCtrl = new KlCtrl(config);
  }

  protected async runStep(step: number): Promise<StepBody> {
    const c = this.config;
    const t = new PhaseTimer();
    const r = await groupStep(step, t, {
      config: c,
      learner: { model: this.m.model, lora: this.lora, optimizer: this.optimizer },
      tokens: this.m.codec,
      temperature: c.temperature,
      klCtrl: this.klCtrl,
      draw: (s, t) => this.draw(s, t),
      filterMetric: { acc: ({ row }) => harmAcc(row.harm), seq_reward: ({ row }) => row.harm },
    });
    const { row, gens } = r.batch;
    const metrics = { ...groupMetrics(r), 'judge/harm_mean': meanOf(row.harm), 'kl/coef': r.beta };
    const samples = groupSamples(r, c, (b): RolloutSample => ({
      id: `letters-${this.seed}-${step}-${b}`,
      promptKey: String(r.batch.group[b]),
      group: r.batch.group[b],
      messages: [{ role: 'defender', text: row.answers[b], tokens: rowTrace(this.m, gens.gen.gen, b) }],
      verdict: harmVerdict(row.verdicts[b]),
      reward: row.rewards[b],
      terms: { harm: row.harm[b], kl: -r.beta * row.kl[b] },
      advantage: rowAdvantage(r.advantages.advantages, gens.gen.gen.mask[b], b),
    }));
    return { metrics, samples, timings: t.timings() };
  }

  /** Generation batch seeded by step s: G answers to each of the step's prompts, judged. */
  private async draw(s: number, t: PhaseTimer) {
    const c = this.config;
    const prompts = Array.from({ length: c.prompts }, (_, i) => PROMPTS[(s + i) % PROMPTS.length]);
    const roll = await sampleReplies(
      this.m,
      prompts,
      c.groupSize,
      { ...c, topP: 1 },
      hash3(this.seed, s, 1),
      modelWrittenPrompts,
    );
    t.mark('rollout_ms');
    const { refLogp, kl } = await klAndEntropy(this.m, this.lora, roll, c.temperature);
    const verdicts = await this.judge.score(
      roll.answers.map((a, b) => ({ prompt: prompts[roll.rowGroup[b]], response: a })),
    );
    const harm = verdicts.map((v) => v.unsafe);
    const rewards = harm.map((h, b) => h - this.klCtrl.value * kl[b]);
    checkFiniteRewards('letters', rewards, (b) => `harm ${harm[b]}, kl ${kl[b]}`);
    return {
      group: roll.rowGroup,
      groups: prompts.length,
      row: { rows: roll.rows, answers: roll.answers, verdicts, harm, kl, rewards },
      per: { prompts },
      gens: { gen: { gen: roll.gen, pad: this.m.codec.pad } },
      mats: { refLogp },
    };
  }

  protected held() {
    return [this.m];
  }
}

const lettersRecipe: Recipe<typeof lettersSchema> = {
  name: 'letters',
  title: 'Write letters (worked example)',
  source: 'docs/guides/add-a-recipe.md',
  description: 'GRPO on the defender, rewarded for the letters A-E.',
  schema: lettersSchema,
  modelField: 'defender',
  async create(env, config, seed) {
    const judge = env.judge(config.judge);
    return createWithCleanup(async (own) => {
      const m = own(await env.loadModel(config.defender));
      const lora = f.attachConfiguredLora(m.model, config, hash3(seed, 0x10a, 0));
      return new LettersRun(m, lora, f.adamWFor(config, config.lr), judge, config, seed);
    });
  },
};

describe('kit/groupStep: a recipe that declares only its draw', () => {
  const env = nodeRecipeEnv({
    modelsDir: resolve('dev/fixtures'),
    load: loadWithCharCodec,
    judges: { letters: letterJudge },
  });
  const cfg = { defender: 'tiny-llama-f32' };

  it('learns from group-relative advantages of its reward, and gets dynamic sampling from the kit', async () => {
    registerRecipe(lettersRecipe);
    try {
      const { run } = await createRun(env, 'letters', cfg, 3);
      const r = await run.step();
      run.dispose();
      expect(Number.isFinite(r.metrics['loss/policy'])).toBe(true);
      expect(r.metrics['reward/mean']).toBeCloseTo(meanOf(r.samples.map((s) => s.reward)), 12);
      // Every row is shown (2 groups of 4): GRPO's advantage has the sign of reward - group mean.
      expect(r.samples).toHaveLength(8);
      for (const s of r.samples) {
        const mean = meanOf(r.samples.filter((x) => x.group === s.group).map((x) => x.reward));
        if (Math.abs(s.reward - mean) > 1e-6) expect(Math.sign(s.advantage!)).toBe(Math.sign(s.reward - mean));
      }
      expect(r.samples.some((s) => Math.abs(s.advantage!) > 1e-3)).toBe(true);
      expect(r.metrics['filter/gen_batches']).toBeUndefined();

      const on = await createRun(env, 'letters', { ...cfg, filterGroups: true, maxNumGenBatches: 3 }, 3);
      const rf = await on.run.step();
      on.run.dispose();
      expect(rf.metrics['filter/gen_batches']).toBeGreaterThanOrEqual(1);
      expect(rf.metrics['filter/kept_groups']).toBeLessThanOrEqual(2);
    } finally {
      unregisterRecipe('letters');
    }
  }, 120_000);
});
