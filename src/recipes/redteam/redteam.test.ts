import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeRecipeEnv } from '../../cli/recipe-env';
import { createRun } from '../registry';
import type { StepReport } from '../../contract/report';
import { toCheckpointInput } from '../kit/state';
import { letterJudge, loadWithCharCodec, stableReport } from '../../../dev/test/recipeTesting';
import type { RecipeEnv } from '../kit/types';

const FIXTURE = resolve('dev/fixtures/tiny-llama-f32');
const MODELS = resolve('public/models');
const HAVE_DEFENDER = existsSync(resolve(MODELS, 'defender/model.safetensors'));

/** Steps 0..k-1, checkpoint, step k; then a fresh run restored from the checkpoint does step k. */
async function resumeCheck(env: RecipeEnv, config: Record<string, unknown>, seed: number, k: number) {
  const a = await createRun(env, 'redteam', config, seed);
  let uninterrupted: StepReport;
  let payload;
  const before: StepReport[] = [];
  try {
    for (let s = 0; s < k; s++) before.push(await a.run.step());
    payload = await a.run.state();
    uninterrupted = await a.run.step();
  } finally {
    a.run.dispose();
  }
  const b = await createRun(env, 'redteam', config, seed);
  let resumed: StepReport;
  try {
    await b.run.restore(payload);
    expect(b.run.stepsDone).toBe(k);
    resumed = await b.run.step();
  } finally {
    b.run.dispose();
  }
  return { before, payload, uninterrupted, resumed };
}

describe('redteam recipe', () => {
  const fixtureEnv = nodeRecipeEnv({
    modelsDir: resolve(FIXTURE, '..'),
    load: loadWithCharCodec,
    judges: { letters: letterJudge },
  });
  const small = {
    defender: 'tiny-llama-f32',
    judge: 'letters',
    prompts: 2,
    groupSize: 4,
    maxNewTokens: 6,
    promptPool: 8,
    samples: 2,
    lr: 1e-2,
  };

  it('a checkpoint at step k restored into a fresh run reproduces step k (fixture model)', async () => {
    const { before, payload, uninterrupted, resumed } = await resumeCheck(fixtureEnv, small, 11, 2);
    // The adapters moved: a restore that silently kept fresh weights would not reproduce step 2.
    expect(payload.tensors.some((t) => t.name.endsWith('lora_B.weight') && t.data.some((x) => x !== 0))).toBe(true);
    expect(payload.optimizer.state.step).toBe(2);
    expect(payload.tensors[0].name).toMatch(/^base_model\.model\.model\.layers\.0\..*\.lora_A\.weight$/);
    expect(before.every((r) => Number.isFinite(r.metrics['loss/policy']))).toBe(true);
    expect(resumed.step).toBe(2);
    expect(stableReport(resumed)).toEqual(stableReport(uninterrupted));
    // The report carries the promised metrics and sample anatomy.
    for (const k of [
      'reward/mean',
      'judge/asr',
      'kl/mean',
      'entropy/mean',
      'loss/policy',
      'grad/norm',
      'perf/step_ms',
      'perf/tokens_per_s',
    ]) {
      expect(Number.isFinite(resumed.metrics[k]), k).toBe(true);
    }
    const s = resumed.samples[0];
    expect(s.messages.map((m) => m.role)).toEqual(['user', 'defender']);
    expect(s.messages[1].tokens!.ids.length).toBe(s.messages[1].tokens!.entropy.length);
    expect(Object.keys(s.terms).sort()).toEqual(['harm', 'kl', 'repetition']);
    // And maps onto the storage layer's checkpoint input.
    const input = toCheckpointInput(payload, 'run-1');
    expect(input.step).toBe(2);
    expect(input.tensors).toBe(payload.tensors);
  });

  it('early stop ends the run and evaluates the policy it ends with (eval/asr_at_stop)', async () => {
    // Stop on any positive mean reward (letters reward every response with a letter). With lr 0 the
    // policy does not move, so the evaluation at the stop must equal the one before the step.
    const stopAt = { ...small, earlyStopReward: 0, evalEvery: 5, evalPrompts: 4 };
    const frozen = await createRun(fixtureEnv, 'redteam', { ...stopAt, lr: 0 }, 3);
    try {
      const r = await frozen.run.step();
      expect(r.metrics['reward/mean']).toBeGreaterThan(0);
      expect(frozen.run.done).toBe(true);
      expect(frozen.run.stopReason).toMatch(/^mean reward .* > 0$/);
      expect(r.metrics['eval/asr']).toBeGreaterThan(0); // 0.25 here: not two zeros
      expect(r.metrics['eval/asr_at_stop']).toBe(r.metrics['eval/asr']);
    } finally {
      frozen.run.dispose();
    }
    for (const config of [
      { ...stopAt, evalEvery: 0 },
      { ...stopAt, earlyStop: false },
    ]) {
      const a = await createRun(fixtureEnv, 'redteam', config, 3);
      try {
        expect((await a.run.step()).metrics).not.toHaveProperty('eval/asr_at_stop');
      } finally {
        a.run.dispose();
      }
    }
  });

  it('restore refuses a checkpoint of another seed or config', async () => {
    const a = await createRun(fixtureEnv, 'redteam', small, 1);
    const p = await a.run.state();
    a.run.dispose();
    const b = await createRun(fixtureEnv, 'redteam', small, 2);
    await expect(b.run.restore(p)).rejects.toThrow(/seed 1, this run has seed 2/);
    b.run.dispose();
    const c = await createRun(fixtureEnv, 'redteam', { ...small, loraRank: 4 }, 1);
    await expect(c.run.restore(p)).rejects.toThrow(/field "loraRank" was 8 when saved, this run has 4/);
    c.run.dispose();
  });

  it.skipIf(!HAVE_DEFENDER)(
    `checkpoint resume reproduces the next step on the sandbox defender${HAVE_DEFENDER ? '' : ' (skipped: public/models/defender does not exist yet)'}`,
    async () => {
      const env = nodeRecipeEnv({ modelsDir: MODELS });
      const { uninterrupted, resumed } = await resumeCheck(
        env,
        { prompts: 2, groupSize: 2, maxNewTokens: 10, samples: 1 },
        5,
        1,
      );
      expect(stableReport(resumed)).toEqual(stableReport(uninterrupted));
      expect(resumed.samples[0].messages[1].text.length).toBeGreaterThan(0);
    },
    60_000,
  );
});
