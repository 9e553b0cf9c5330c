// The game's held-out evaluation on the sandbox qa model (issue 43, third round), against the dev
// probe (dev/sandbox/probe.ts), which reads the same model through its own chat-template path: the
// frozen monitor's verdicts on the balanced plain and confident sets, and the policy's greedy
// accuracy, must be what the probe measures on the same items and answers.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeRecipeEnv } from '../../cli/recipe-env';
import { createRun } from '../registry';
import { qaItems } from '../../data/sandbox/datasets';
import { qaValueAnswer } from '../../data/sandbox/qa';
import { hash3 } from '../../model/random';
import { loadModel } from '../../model/load';
import { disposeLlama } from '../../model/llama';
import { loadTokenizer } from '../../model/tokenizer';
import { loadChatTemplate } from '../../model/chat';
import { mapSource } from '../../model/sources';
import { confidentCases, GREEDY, probeCritic, probeQa } from '../../../dev/sandbox/probe';

const MODELS = resolve('public/models');
const QA = join(MODELS, 'qa');
const HAVE_QA = existsSync(join(QA, 'model.safetensors'));
const SEED = 3;
const N = 12;

describe.skipIf(!HAVE_QA)('minmax evaluation (sandbox qa model)', () => {
  it("rlhf's step-0 evaluation: the frozen monitor's balanced verdicts and the greedy policy match the dev probe", async () => {
    const { run } = await createRun(
      nodeRecipeEnv({ modelsDir: MODELS }),
      'rlhf',
      { items: 1, groupSize: 2, samples: 0, evalEvery: 1, evalItems: N, evalSamples: 2 },
      SEED,
    );
    let m: Record<string, number>;
    try {
      m = (await run.step()).metrics;
    } finally {
      run.dispose();
    }
    // The held-out items the evaluation draws (GameRun.evaluate), each with its right answer and the
    // next choice as the wrong one, by value as the qa policy writes.
    const items = qaItems(N, hash3(SEED, 0xe7a1, 7) >>> 0, { split: 'eval' });
    const plain = items.flatMap((item) =>
      [item.correct, (item.correct + 1) % 4].map((c) => ({ item, answer: qaValueAnswer(item, c) })),
    );
    const files: Record<string, Uint8Array> = {};
    for (const f of readdirSync(QA)) files[f] = readFileSync(join(QA, f));
    const src = mapSource(files, { label: QA });
    const qa = { model: await loadModel(src), tok: await loadTokenizer(src), template: await loadChatTemplate(src) };
    try {
      const [p, c, policy] = [
        await probeCritic(qa, plain, GREEDY),
        await probeCritic(qa, confidentCases(plain), GREEDY),
        await probeQa(qa, items, GREEDY),
      ];
      const note = JSON.stringify({ plain: p.all, confident: c.all, m });
      expect(m['eval/monitor_accepts_wrong_confident'], note).toBeCloseTo(c.all.acceptsWrong, 9);
      expect(m['eval/monitor_rejects_right_confident'], note).toBeCloseTo(c.all.rejectsRight, 9);
      expect(m['eval/monitor_acc_balanced_confident'], note).toBeCloseTo(c.all.accuracy, 9);
      expect(m['eval/monitor_acc_balanced_plain'], note).toBeCloseTo(p.all.accuracy, 9);
      expect(m['eval/monitor_acc_balanced'], note).toBeCloseTo((p.all.accuracy + c.all.accuracy) / 2, 9);
      expect(m['eval/policy_acc_greedy'], note).toBeCloseTo(policy.all.accuracy, 9);
      // The blind spot is there to be measured: the frozen critic accepts wrong confident answers.
      expect(c.all.acceptsWrong, note).toBeGreaterThan(0.5);
      // Sampled answers: the policy's accuracy splits by form (each form's share times its accuracy).
      const share = m['eval/policy_confident'];
      const byForm =
        (share > 0 ? share * m['eval/policy_acc_confident'] : 0) +
        (share < 1 ? (1 - share) * m['eval/policy_acc_plain'] : 0);
      expect(m['eval/policy_acc'], note).toBeCloseTo(byForm, 9);
    } finally {
      disposeLlama(qa.model);
    }
  }, 900_000); // 148 s on the shared machine beside a model build
});
