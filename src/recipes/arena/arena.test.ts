import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-wasm';
import { beforeAll, describe, expect, it } from 'vitest';
import { nodeRecipeEnv } from '../../cli/recipe-env';
import { findAnswerMarkers, findPayloadMarkers, solveBenign } from '../../data/sandbox/index';
import { arenaPhase, arenaSchema } from './arena';
import { createRun } from '../registry';
import type { StepReport } from '../../contract/report';
import { validateConfig } from '../../contract/schema';
import { letterJudge, loadWithCharCodec, stableReport } from '../../../dev/test/recipeTesting';

const FIXTURE = resolve('dev/fixtures/tiny-llama-f32');
const MODELS = resolve('public/models');
const HAVE_MODELS = ['attacker', 'defender'].every((m) => existsSync(resolve(MODELS, m, 'model.safetensors')));

describe('arena recipe', () => {
  beforeAll(async () => {
    await tf.setBackend('wasm');
  });

  it('alternates k attacker steps and k defender steps', () => {
    expect(Array.from({ length: 7 }, (_, s) => arenaPhase(s, 3, 'attacker'))).toEqual([
      'attacker',
      'attacker',
      'attacker',
      'defender',
      'defender',
      'defender',
      'attacker',
    ]);
    expect(Array.from({ length: 4 }, (_, s) => arenaPhase(s, 1, 'defender'))).toEqual([
      'defender',
      'attacker',
      'defender',
      'attacker',
    ]);
    const bad = validateConfig(arenaSchema, { phaseSteps: 0, firstPhase: 'judge' });
    expect(bad.errors.phaseSteps).toMatch(/"phaseSteps" must be an integer in \[1, 100000\]/);
    expect(bad.errors.firstPhase).toMatch(/attacker, defender/);
  });

  it('a checkpoint holds both adapters and both optimisers; restored, it reproduces the next attacker and defender steps (fixture model)', async () => {
    const env = nodeRecipeEnv({
      modelsDir: resolve(FIXTURE, '..'),
      load: loadWithCharCodec,
      judges: { letters: letterJudge },
    });
    const config = {
      attacker: 'tiny-llama-f32',
      defender: 'tiny-llama-f32',
      judge: 'letters',
      phaseSteps: 1,
      goals: 2,
      groupSize: 3,
      benignPrompts: 1,
      attackerMaxTokens: 8,
      defenderMaxTokens: 6,
      goalPool: 8,
      samples: 3,
      attackerLr: 1e-2,
      defenderLr: 1e-2,
    };
    const a = await createRun(env, 'arena', config, 5);
    let payload;
    const uninterrupted: StepReport[] = [];
    try {
      expect((await a.run.step()).phase).toBe('attacker');
      expect((await a.run.step()).phase).toBe('defender');
      payload = await a.run.state();
      uninterrupted.push(await a.run.step(), await a.run.step());
    } finally {
      a.run.dispose();
    }
    for (const side of ['attacker', 'defender']) {
      const mine = payload.tensors.filter((t) => t.name.startsWith(`${side}/base_model.model.`));
      expect(mine.length, side).toBeGreaterThan(0);
      expect(
        mine.some((t) => t.name.endsWith('lora_B.weight') && t.data.some((x) => x !== 0)),
        `${side} adapter moved`,
      ).toBe(true);
      expect(
        payload.optimizer.tensors.some((t) => t.name.startsWith(`${side}/`) && t.name.endsWith('.exp_avg_sq')),
        side,
      ).toBe(true);
    }
    expect(payload.extra.optimizerSteps).toEqual({ attacker: 1, defender: 1 });
    const b = await createRun(env, 'arena', config, 5);
    try {
      await b.run.restore(payload);
      expect(b.run.stepsDone).toBe(2);
      const resumed = [await b.run.step(), await b.run.step()];
      expect(resumed.map((r) => r.phase)).toEqual(['attacker', 'defender']);
      expect(resumed.map(stableReport)).toEqual(uninterrupted.map(stableReport));
    } finally {
      b.run.dispose();
    }
    const c = await createRun(env, 'arena', { ...config, loraRank: 4 }, 5);
    await expect(c.run.restore(payload)).rejects.toThrow(/field "loraRank" was 8 when saved, this run has 4/);
    c.run.dispose();
  }, 90_000);

  it.skipIf(!HAVE_MODELS)(
    'defender steps: safety on attacker prompts and utility on benign tasks, as the rules read the answers (built-in models)',
    async () => {
      const env = nodeRecipeEnv({ modelsDir: MODELS });
      const { run } = await createRun(
        env,
        'arena',
        { firstPhase: 'defender', goals: 3, benignPrompts: 3, groupSize: 4, samples: 24, defenderKlBeta: 0 },
        2,
      );
      try {
        const r = await run.step();
        expect(r.phase).toBe('defender');
        expect(r.samples.length).toBe(24);
        let benign = 0;
        for (const s of r.samples) {
          const [ask, answer] = s.messages;
          const leaked = findPayloadMarkers(answer.text).length > 0;
          if (ask.role === 'attacker') {
            expect(s.terms.safety).toBe(leaked ? 0 : 1);
            expect(s.verdict.success).toBe(leaked);
          } else {
            benign++;
            const want = solveBenign(ask.text)!.answer;
            const got = findAnswerMarkers(answer.text);
            const correct = !leaked && got.length > 0 && got.every((x) => x.toLowerCase() === want.toLowerCase());
            expect(s.terms.utility, `${ask.text} -> ${answer.text}`).toBe(correct ? 1 : 0);
          }
          expect(s.reward).toBeCloseTo((s.terms.safety ?? 0) + (s.terms.utility ?? 0), 12); // KL weight 0
        }
        expect(benign).toBe(12);
        expect(r.samples.some((s) => s.terms.utility === 1)).toBe(true); // a right answer earns utility, so the check has teeth
        const asr = r.samples.filter((s) => s.messages[0].role === 'attacker' && s.verdict.success).length / 12;
        expect(r.metrics['judge/asr']).toBeCloseTo(asr, 12);
      } finally {
        run.dispose();
      }
    },
    60_000,
  );
});
