import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-wasm';
import { beforeAll, describe, expect, it } from 'vitest';
import { folderSource } from '../../cli/fs-source';
import { nodeRecipeEnv } from '../../cli/recipe-env';
import { policyStats } from '../../rl/policy';
import { asUserMessage } from '../kit/rollout';
import { findPayloadMarkers } from '../../data/sandbox/index';
import { createRulesJudge } from '../../judges/rules';
import type { Judge, JudgeItem } from '../../judges/types';
import { checkpointFromJson, checkpointToJson } from '../kit/checkpointFile';
import { defendReward, defendSchema } from './defend';
import { createRun } from '../registry';
import type { StepReport } from '../../contract/report';
import { validateConfig } from '../../contract/schema';
import { lettersWithTasks, loadWithCharCodec, stableReport } from '../../../dev/test/recipeTesting';

const FIXTURE = resolve('dev/fixtures/tiny-llama-f32');
const MODELS = resolve('public/models');
const HAVE_MODELS = ['attacker', 'defender'].every((m) => existsSync(resolve(MODELS, m, 'model.safetensors')));

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

describe('defend recipe', () => {
  beforeAll(async () => {
    await tf.setBackend('wasm');
  });

  const fixtureEnv = nodeRecipeEnv({
    modelsDir: resolve(FIXTURE, '..'),
    load: loadWithCharCodec,
    judges: { letters: lettersWithTasks },
  });
  const small = {
    attacker: 'tiny-llama-f32',
    defender: 'tiny-llama-f32',
    judge: 'letters',
    goals: 2,
    benignPrompts: 1,
    groupSize: 3,
    attackerMaxTokens: 8,
    maxNewTokens: 6,
    goalPool: 8,
    samples: 9,
    lr: 2e-2,
  };

  it('schema: MTSA defaults, invalid values named', () => {
    const d = validateConfig(defendSchema, {});
    expect(d.config).toMatchObject({
      groupSize: 4,
      entropyCoef: 1,
      klBeta: 0.001,
      safetyWeight: 1,
      utilityWeight: 1,
      advantage: 'grpo',
      policyLoss: 'ppo',
      temperature: 0.7,
      topP: 0.9,
      attackerCheckpoint: '',
    });
    const bad = validateConfig(defendSchema, { entropyCoef: -1, groupSize: 1 });
    expect(bad.errors.entropyCoef).toMatch(/"entropyCoef" must be a number in \[0, 100\]/);
    expect(bad.errors.groupSize).toMatch(/"groupSize" must be an integer in \[2, 64\]/);
  });

  it('each reward term moves the reward: safety, utility, entropy, KL (hand-computed)', () => {
    const w = { safetyWeight: 1, utilityWeight: 2, entropyCoef: 0.5, klBeta: 0.1 };
    const harmful = { harmful: true, unsafe: 0.25, correct: false, meanEntropy: 0.4, klSum: 0.3 };
    // 0.75 - 0.5 x 0.4 - 0.1 x 0.3 (klSum: the sum of k1 over the answer's tokens)
    expect(defendReward(harmful, w).reward).toBeCloseTo(0.75 - 0.2 - 0.03, 12);
    expect(defendReward(harmful, w).terms).toEqual({ safety: 0.75, entropy: -0.2, kl: expect.closeTo(-0.03, 12) });
    expect(defendReward({ ...harmful, unsafe: 1 }, w).reward).toBeCloseTo(-0.23, 12); // safety
    expect(defendReward(harmful, { ...w, entropyCoef: 0 }).reward).toBeCloseTo(0.72, 12); // entropy
    expect(defendReward(harmful, { ...w, klBeta: 0 }).reward).toBeCloseTo(0.55, 12); // KL
    const benign = { harmful: false, unsafe: 0, correct: true, meanEntropy: 0.4, klSum: 0.3 };
    expect(defendReward(benign, w).reward).toBeCloseTo(2 - 0.2 - 0.03, 12); // utility
    expect(defendReward({ ...benign, correct: false }, w).reward).toBeCloseTo(-0.23, 12);
    expect(defendReward(benign, w).terms.safety).toBeUndefined();
  });

  it("in a run, every answer's reward is P(safe) or utility + the entropy term (its own token entropies) + the KL term (fixture model)", async () => {
    const { run } = await createRun(fixtureEnv, 'defend', { ...small, entropyCoef: 2, klBeta: 0.5 }, 4);
    try {
      const reports = [await run.step(), await run.step()];
      for (const r of reports) {
        expect(r.samples).toHaveLength(9);
        for (const s of r.samples) {
          const answer = s.messages[1];
          const H = mean(answer.tokens!.entropy);
          expect(s.terms.entropy).toBeCloseTo(-2 * H, 5);
          expect(H).toBeGreaterThan(0.01); // so the entropy term is not a silent zero
          if (s.messages[0].role === 'attacker') {
            // The attacker model wrote it (its trace is not kept): the card must not call it scripted.
            expect(s.messages[0].writtenBy).toBe('the frozen attacker model');
            const n = [...answer.text].filter((c) => 'ABCDE'.includes(c)).length;
            expect(s.terms.safety).toBeCloseTo(1 - Math.min(1, (4 * n) / Math.max(1, answer.text.length)), 12);
            expect(s.terms.utility).toBeUndefined();
          } else {
            expect(s.messages[0].writtenBy).toBeUndefined();
            expect(s.terms.utility).toBe(answer.text.length % 2 === 0 ? 1 : 0);
          }
          expect(s.reward).toBeCloseTo(
            (s.terms.safety ?? 0) + (s.terms.utility ?? 0) + s.terms.entropy! + s.terms.kl!,
            10,
          );
        }
      }
      // After one update the adapter moved, so the KL term is live.
      expect(reports[1].samples.some((s) => Math.abs(s.terms.kl!) > 1e-6)).toBe(true);
      // KL scale: beta x k1 on every token (MTSA / veRL), i.e. -beta x the SUM over the answer of
      // (logp_rollout - logp_ref), with the reference recomputed here on a fresh base model.
      const base = await loadWithCharCodec(folderSource(FIXTURE), 'ref');
      try {
        for (const s of reports[1].samples.slice(0, 4)) {
          const ans = s.messages[1].tokens!;
          const prompt = base.codec.encodeChat([{ role: 'user', content: asUserMessage(s.messages[0].text) }], {
            addGenerationPrompt: true,
          });
          const ref = policyStats(
            base.model,
            { prompts: [prompt], responses: [ans.ids], mask: [ans.ids.map(() => 1)] },
            { temperature: 0.7, padTokenId: base.codec.pad },
          );
          const refLogp = Array.from(ref.logp.dataSync());
          tf.dispose([ref.logp, ref.entropy]);
          const sum = ans.logp.reduce((a, lp, t) => a + lp - refLogp[t], 0);
          expect(s.terms.kl!).toBeCloseTo(-0.5 * sum, 4);
        }
      } finally {
        base.dispose();
      }
      expect(reports[1].metrics['reward/kl_mean']).toBeCloseTo(mean(reports[1].samples.map((s) => s.terms.kl!)), 10);
    } finally {
      run.dispose();
    }
  }, 60_000);

  it('a checkpoint at step k restored into a fresh run reproduces step k, with a trained attacker adapter loaded from a file (fixture model)', async () => {
    // A trained attacker: two `attack` steps, saved as the CLI's --save-checkpoint does.
    const atk = await createRun(
      fixtureEnv,
      'attack',
      {
        attacker: 'tiny-llama-f32',
        defender: 'tiny-llama-f32',
        judge: 'letters',
        goals: 2,
        groupSize: 3,
        attackerMaxTokens: 8,
        defenderMaxTokens: 4,
        goalPool: 8,
        lr: 5e-2,
      },
      2,
    );
    const file = join(mkdtempSync(join(tmpdir(), 'defend-')), 'attacker.json');
    try {
      await atk.run.step();
      await atk.run.step();
      const p = await atk.run.state();
      const text = checkpointToJson(p);
      const back = checkpointFromJson(text, 'x');
      expect(back.tensors.map((t) => [t.name, Array.from(t.data)])).toEqual(
        p.tensors.map((t) => [t.name, Array.from(t.data)]),
      );
      expect(back.optimizer.tensors.length).toBe(p.optimizer.tensors.length);
      writeFileSync(file, text);
    } finally {
      atk.run.dispose();
    }
    const config = { ...small, attackerCheckpoint: file };
    const a = await createRun(fixtureEnv, 'defend', config, 9);
    let payload;
    let uninterrupted: StepReport;
    let first: StepReport | undefined;
    try {
      first = await a.run.step();
      await a.run.step();
      payload = await a.run.state();
      uninterrupted = await a.run.step();
    } finally {
      a.run.dispose();
    }
    expect(payload.tensors.some((t) => t.name.endsWith('lora_B.weight') && t.data.some((x) => x !== 0))).toBe(true);
    const b = await createRun(fixtureEnv, 'defend', config, 9);
    try {
      await b.run.restore(payload);
      expect(stableReport(await b.run.step())).toEqual(stableReport(uninterrupted));
    } finally {
      b.run.dispose();
    }
    // The adapter really changes what the attacker writes (same seed, same step, no checkpoint).
    const c = await createRun(fixtureEnv, 'defend', small, 9);
    try {
      const prompts = (r: StepReport) =>
        r.samples.filter((s) => s.messages[0].role === 'attacker').map((s) => s.messages[0].text);
      expect(prompts(await c.run.step())).not.toEqual(prompts(first!));
    } finally {
      c.run.dispose();
    }
  }, 120_000);

  it('bad checkpoint files are refused with the file named', async () => {
    expect(() => checkpointFromJson('{', 'a.json')).toThrow(/a\.json: not valid JSON/);
    expect(() => checkpointFromJson('{"x":1}', 'a.json')).toThrow(/a\.json: not a recipe checkpoint/);
    const file = join(mkdtempSync(join(tmpdir(), 'defend-')), 'bad.json');
    writeFileSync(
      file,
      '{"kind":"sparring-recipe-checkpoint","format":1,"recipe":"attack","seed":1,"step":1,"config":{},"tensors":[]}',
    );
    await expect(createRun(fixtureEnv, 'defend', { ...small, attackerCheckpoint: file }, 1)).rejects.toThrow(
      /field "attackerCheckpoint": .*bad\.json: config has no loraRank/,
    );
    await expect(createRun(fixtureEnv, 'defend', { ...small, attackerCheckpoint: '/nope/x.json' }, 1)).rejects.toThrow(
      /x\.json: file not found/,
    );
    // A defender's adapter (same shapes) or another model's attacker must not load into the attacker.
    const def = await createRun(fixtureEnv, 'defend', small, 1);
    const defFile = join(mkdtempSync(join(tmpdir(), 'defend-')), 'defender.json');
    try {
      writeFileSync(defFile, checkpointToJson(await def.run.state()));
    } finally {
      def.run.dispose();
    }
    await expect(createRun(fixtureEnv, 'defend', { ...small, attackerCheckpoint: defFile }, 1)).rejects.toThrow(
      /defender\.json was saved by recipe "defend", which trains no attacker/,
    );
    const other = join(mkdtempSync(join(tmpdir(), 'defend-')), 'other.json');
    writeFileSync(
      other,
      '{"kind":"sparring-recipe-checkpoint","format":1,"recipe":"attack","seed":1,"step":1,"config":{"attacker":"someone/else","loraRank":2,"loraAlpha":4},"tensors":[]}',
    );
    await expect(createRun(fixtureEnv, 'defend', { ...small, attackerCheckpoint: other }, 1)).rejects.toThrow(
      /trained an adapter for attacker "someone\/else", but field "attacker" is "tiny-llama-f32"/,
    );
  }, 30_000);

  it.skipIf(!HAVE_MODELS)(
    'the judge reads only the generated answer, and the rules verdicts match the answers (built-in models)',
    async () => {
      const seen: JudgeItem[] = [];
      const rules = createRulesJudge();
      const spy = (): Judge => ({ name: 'spy', score: async (items) => (seen.push(...items), rules.score(items)) });
      const env = nodeRecipeEnv({ modelsDir: MODELS, judges: { spy } });
      const { run } = await createRun(
        env,
        'defend',
        { judge: 'spy', goals: 2, benignPrompts: 1, groupSize: 2, samples: 6 },
        3,
      );
      try {
        const r = await run.step();
        expect(seen).toHaveLength(6);
        expect(seen.map((x) => x.response).sort()).toEqual(r.samples.map((s) => s.messages[1].text).sort());
        for (const s of r.samples) {
          const [ask, answer] = s.messages;
          // No prompt text and no chat-template text reaches the judge as the response.
          expect(answer.text.includes(ask.text)).toBe(false);
          expect(answer.text).not.toMatch(/<\|im_(start|end)\|>|^(user|assistant)\b/);
          if (ask.role === 'attacker') expect(s.terms.safety).toBe(findPayloadMarkers(answer.text).length > 0 ? 0 : 1);
        }
      } finally {
        run.dispose();
      }
    },
    60_000,
  );
});
