// minmax's verdict and fidelity paths on the sandbox qa model, which writes real answers and
// verdicts (the fixture model writes noise: every verdict unclear). The report's monitor and
// fidelity metrics and the dual step are recomputed by hand from the step's own texts: the
// verdict read from the critique (whole words), the truth from the answer against the item.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-wasm';
import { beforeAll, describe, expect, it } from 'vitest';
import { nodeRecipeEnv } from '../cli/recipe-env';
import { CHOICE_LETTERS, qaItems } from '../data/sandbox/index';
import { createRun } from './registry';

const MODELS = resolve('public/models');
const HAVE_QA = existsSync(resolve(MODELS, 'qa/model.safetensors'));
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

describe.skipIf(!HAVE_QA)('minmax verdicts and fidelity (sandbox qa model)', () => {
  beforeAll(async () => {
    await tf.setBackend('wasm');
  });

  it('monitor metrics, the fidelity F and the dual step match a hand computation from the critiques', async () => {
    const seed = 3;
    const cfg = { items: 3, groupSize: 2, policyMaxTokens: 10, monitorMaxTokens: 24, samples: 64, itemPool: 16 };
    const { run } = await createRun(nodeRecipeEnv({ modelsDir: MODELS }), 'minmax', cfg, seed);
    const pool = qaItems(16, seed, { split: 'train' });
    try {
      const r = await run.step();
      expect(r.phase).toBe('monitor');
      const rows = r.samples.map((s) => {
        const item = pool[Number(s.promptKey!.slice('qa-'.length))];
        const answer = /\[ANSWER:([^\]]+)\]/.exec(s.messages[1].text)?.[1]?.trim();
        const truth = answer === CHOICE_LETTERS[item.correct] || answer === item.choices[item.correct] ? 1 : 0;
        const words = new Set(s.messages[2].text.toUpperCase().match(/[A-Z]+/g) ?? []);
        const v = words.has('CORRECT') === words.has('INCORRECT') ? 0.2 : words.has('CORRECT') ? 1 : 0;
        return { truth, v };
      });
      // A monitor step: one answer per item, G critiques of each; samples cover every row.
      expect(rows.length).toBe(cfg.items * cfg.groupSize);
      // The trained qa model writes clear verdicts: the verdict path is reached.
      expect(rows.filter((x) => x.v !== 0.2).length).toBeGreaterThan(rows.length / 2);
      const m = r.metrics;
      expect(m['monitor/unclear']).toBeCloseTo(mean(rows.map((x) => (x.v === 0.2 ? 1 : 0))), 10);
      expect(m['monitor/says_correct']).toBeCloseTo(mean(rows.map((x) => (x.v === 1 ? 1 : 0))), 10);
      expect(m['monitor/verdict_acc']).toBeCloseTo(mean(rows.map((x) => (x.v === x.truth ? 1 : 0))), 10);
      const mse = mean(rows.map((x) => (x.v - x.truth) ** 2));
      expect(m['monitor/mse']).toBeCloseTo(mse, 10);
      // F = 0.6 x 15 x MSE + 0.4 x (-clamp(mean RM(critique), -15, 15)) (MinMax's fidelity).
      const F = 0.6 * 15 * mse + 0.4 * -Math.min(15, Math.max(-15, m['minmax/critique_rm']));
      expect(m['minmax/fidelity']).toBeCloseTo(F, 5);
      // Dual ascent: lambda <- clip(lambda + 0.25 (F - delta), 0, 30), lambda0 10, delta -3.6.
      expect(m['dual/lambda_before']).toBe(10);
      expect(m['dual/lambda']).toBeCloseTo(Math.min(30, Math.max(0, 10 + 0.25 * (F + 3.6))), 5);
    } finally {
      run.dispose();
    }
  }, 60_000);
});
