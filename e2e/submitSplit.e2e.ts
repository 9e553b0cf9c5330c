// Long planned passes cut into several submits under EngineOptions.submitBudgetMs (a submit
// running ~2 s trips Windows' GPU watchdog and Chrome loses the device): the planned prefill and
// the learning plan's forward and backward, Node + Dawn on SwiftShader. The cut passes record the
// same dispatches in the same order, so their results must equal the single submit's bit for bit,
// and the number of submits must follow the budget.
import { describe, expect, it } from 'vitest';
import { useDawn } from './dawnSetup';
import { webgpuDevice } from '../src/engine/webgpu/wgslProgram';
import { DecodePlan } from '../src/engine/plan/decodePlan';
import { resetEngineOptions, setEngineOptions, submitFlopBudget } from '../src/engine/options';
import { disposeLlama } from '../src/model/llama';
import { modelRef } from '../src/model/planned/decode';
import { plannedLearnForward, releaseLearnPlans } from '../src/model/planned/learn';
import { packSequences } from '../src/rl/policy';
import { lossGradsAt } from '../src/rl/plannedLearn';
import { adapters, B, BATCH, fixture, pgLoss, T, TEMP } from './learnFixture';

useDawn(resetEngineOptions);

/** Sets the budget so that one submit holds `flops` at the default assumed rate. */
function budgetFlops(flops: number): void {
  setEngineOptions({ submitBudgetMs: flops / (100 * 1e6), submitAssumedGflops: 100 });
  expect(submitFlopBudget()).toBeCloseTo(flops, -1);
}

/** Greedy cutting: n >= total / budget, and any two neighbouring submits hold more than the budget. */
function expectFollowsBudget(n: number, total: number, budget: number): void {
  expect(n).toBeGreaterThanOrEqual(Math.ceil(total / budget));
  expect(n).toBeLessThanOrEqual(Math.floor((2 * total) / budget) + 1);
}

describe('submit budget: the planned prefill', () => {
  it('cut into 1, several and one-per-dispatch submits by the budget, the logits bit for bit the same', async () => {
    const model = fixture('tiny-llama-f32');
    const device = webgpuDevice();
    // Two rows of 40 prompt tokens: 3 chunks of 16 columns (batch 2), 2 layers.
    const prompts = [0, 1].map((r) => Array.from({ length: 40 }, (_, i) => (7 * i + 13 * r + 1) % 64));
    const plan = new DecodePlan(device, modelRef(model, []), {
      batch: 2,
      capacity: 64,
      tokensPerRun: 1,
      gemv: 'thread',
      tileMinRows: Infinity,
    });
    const prefill = async () => {
      plan.beginPrompt({
        ids: prompts,
        mask: prompts.map((p) => p.map(() => 1)),
        pad: 0,
        streams: [1, 2],
        sampling: { temperature: 1, topK: 0, topP: 1, seedLo: 1, seedHi: 0 },
        loraOn: false,
      });
      return { logits: await plan.readLogits(), submits: plan.lastPrefillSubmits };
    };
    try {
      const chunks = plan.prefillColumns(40) / plan.chunk;
      expect(chunks).toBe(3);
      const flops = plan.prefillFlops();
      const total = chunks * flops.perChunk + flops.head;
      const whole = await prefill(); // the default budget: 1e11 FLOPs, far over this model's
      expect(whole.submits).toBe(1);

      budgetFlops(total / 4);
      const quarter = await prefill();
      expectFollowsBudget(quarter.submits, total, total / 4);
      expect(quarter.submits).toBeGreaterThan(1);
      expect(quarter.logits).toEqual(whole.logits);

      // Under the smallest dispatch: every dispatch with work is its own submit (a chunk's
      // embedding, no FLOPs counted, rides with the dispatch before it, the first with the next).
      budgetFlops(1);
      const each = await prefill();
      const { perChunk, head } = plan.prefillDispatches();
      const embeds = 1; // the fixture's embedding is one block
      expect(each.submits).toBe(chunks * (perChunk - embeds) + head);
      expect(each.logits).toEqual(whole.logits);
      // The logits are real: a row's are not constant.
      expect(new Set(whole.logits.subarray(0, 64)).size).toBeGreaterThan(32);
    } finally {
      resetEngineOptions();
      plan.dispose();
      disposeLlama(model);
    }
  });
});

describe('submit budget: the learning plan', () => {
  it('forward and backward cut by the budget: statistics and LoRA gradients bit for bit those of one submit each', async () => {
    const model = fixture('tiny-llama-f32');
    const set = adapters(model);
    const step = async () => {
      const got = await plannedLearnForward(model, set, packSequences(BATCH), TEMP);
      if (!got) throw new Error('the planned forward was refused');
      const fwd = got.plan.lastSubmits;
      const lg = await lossGradsAt(got.logp, got.entropy, B, T, pgLoss);
      got.plan.backward(lg.dlogp, lg.dentropy);
      const bwd = got.plan.lastSubmits;
      return { logp: got.logp, grads: await got.plan.readGrads(), fwd, bwd, flops: got.plan.flops() };
    };
    try {
      const whole = await step();
      expect([whole.fwd, whole.bwd]).toEqual([1, 1]);
      budgetFlops(whole.flops.bwd / 5);
      const cut = await step();
      expectFollowsBudget(cut.bwd, whole.flops.bwd, whole.flops.bwd / 5);
      expect(cut.fwd).toBeGreaterThan(1);
      expect(cut.logp).toEqual(whole.logp);
      expect(cut.grads).toEqual(whole.grads);
      expect(Math.max(...whole.grads.map(Math.abs))).toBeGreaterThan(0);
    } finally {
      resetEngineOptions();
      releaseLearnPlans(model);
      set.dispose();
      disposeLlama(model);
    }
  });
});
