// The model-graded StrongREJECT evaluation wired into the recipes: a stand-in grader server
// answering canned rubric text gives the hand-computed mean, and the generated Qwen2 hub
// repository as a local grader model shows that answers which do not parse are counted, not scored.
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-wasm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveHubRepos, type HubServer } from '../../../dev/servers/hubServer';
import { nodeRecipeEnv } from '../../cli/recipe-env';
import { STRONGREJECT_SYSTEM_PROMPT } from '../../judges/strongrejectGrader';
import { createChatModelGrader } from '../../judges/textGrader';
import { writeQwen2Fixture } from '../../../dev/test/testdata/qwen2Fixture';
import { createRun, getRecipe, validateRecipeConfig } from '../registry';
import { letterJudge, loadWithCharCodec } from '../../../dev/test/recipeTesting';

const FIXTURE = resolve('dev/fixtures/tiny-llama-f32');
const M = 'tiny-llama-f32';

beforeAll(async () => {
  await tf.setBackend('wasm');
});

const rubricAnswer = (r: number, c: number, s: number) =>
  `#overall_reasoning canned\n#scores\n1.a x\n1.b ${r}\n2.a x\n2.b ${c}\n3.a x\n3.b ${s}`;

describe('strongRejectJudge field', () => {
  it('every recipe that reports ASR offers it, default rules; a bad spec is one error naming the field', () => {
    for (const name of ['redteam', 'attack', 'defend', 'tokenbuncher', 'arena', 'multiturn']) {
      const ok = validateRecipeConfig(getRecipe(name), { strongRejectJudge: 'http:http://127.0.0.1:9/v1#judge' });
      expect(ok.ok, `${name}: ${JSON.stringify(ok.errors)}`).toBe(true);
      expect(validateRecipeConfig(getRecipe(name), {}).config, name).toMatchObject({ strongRejectJudge: 'rules' });
      const bad = validateRecipeConfig(getRecipe(name), { strongRejectJudge: 'gpt4' });
      expect(bad.errors.strongRejectJudge, name).toMatch(
        /field "strongRejectJudge" must be rules, model:<ref> or http:<url> \(got "gpt4"\)/,
      );
    }
  });
});

describe('eval/strongreject through a stand-in grader server (canned rubric answers)', () => {
  let server: Server;
  let base = '';
  const bodies: { model: string; temperature: number; messages: { role: string; content: string }[] }[] = [];
  // Cycled per request, so the set of answers (and the mean) does not depend on arrival order:
  // 7/8, 0 (refused), a malformed answer, 3/8.
  const canned = [rubricAnswer(0, 4, 5), rubricAnswer(1, 5, 5), 'I am unable to evaluate this.', rubricAnswer(0, 3, 2)];
  beforeAll(async () => {
    server = createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        const body = JSON.parse(raw);
        bodies.push(body);
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            choices: [{ message: { role: 'assistant', content: canned[(bodies.length - 1) % canned.length] } }],
          }),
        );
      });
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', () => ok()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => server?.close());

  it('redteam: the mean of the parsed answers, the parse failure counted beside it, the rules proxy unchanged', async () => {
    const env = nodeRecipeEnv({
      modelsDir: resolve(FIXTURE, '..'),
      load: loadWithCharCodec,
      judges: { letters: letterJudge },
    });
    const cfg = {
      defender: M,
      judge: 'letters',
      prompts: 1,
      groupSize: 2,
      maxNewTokens: 4,
      promptPool: 4,
      samples: 0,
      evalEvery: 1,
      evalPrompts: 4,
      strongRejectJudge: `http:${base}#grader-7b`,
    };
    const { run } = await createRun(env, 'redteam', cfg, 2);
    try {
      const m = (await run.step()).metrics;
      expect(bodies).toHaveLength(4);
      expect(m['eval/strongreject']).toBeCloseTo((7 / 8 + 0 + 3 / 8) / 3, 12);
      expect(m['eval/strongreject_parse_failures']).toBe(1);
      expect(m['eval/strongreject_graded']).toBe(3);
      expect(Number.isFinite(m['eval/strongreject_rules'])).toBe(true);
      expect(bodies[0]).toMatchObject({ model: 'grader-7b', temperature: 0 });
      expect(bodies[0].messages[0]).toEqual({ role: 'system', content: STRONGREJECT_SYSTEM_PROMPT });
      expect(bodies[0].messages[1].content).toMatch(
        /^Below is an interaction between a user and an AI model\.\n\nUser instruction: .+\n\nAI model response: /,
      );
    } finally {
      run.dispose();
    }
  }, 60_000);

  it('with rules only, no grader is asked and eval/strongreject is absent', async () => {
    const env = nodeRecipeEnv({
      modelsDir: resolve(FIXTURE, '..'),
      load: loadWithCharCodec,
      judges: { letters: letterJudge },
    });
    const n = bodies.length;
    const { run } = await createRun(
      env,
      'redteam',
      {
        defender: M,
        judge: 'letters',
        prompts: 1,
        groupSize: 2,
        maxNewTokens: 4,
        promptPool: 4,
        samples: 0,
        evalEvery: 1,
        evalPrompts: 2,
      },
      2,
    );
    try {
      const m = (await run.step()).metrics;
      expect(bodies.length).toBe(n);
      expect(m['eval/strongreject']).toBeUndefined();
      expect(m['eval/strongreject_parse_failures']).toBeUndefined();
      expect(Number.isFinite(m['eval/strongreject_rules'])).toBe(true);
    } finally {
      run.dispose();
    }
  }, 60_000);
});

describe('the generated Qwen2 hub repository as a local grader model', () => {
  const ID = 'test-org/qwen2-grader';
  const SHORT = 'test-org/qwen2-short';
  let hub: HubServer;
  beforeAll(async () => {
    // The generated repository has 512 positions, too few for the rubric (about 2,500 byte-level
    // tokens here): one copy keeps them, one is given 4096 (RoPE has no table to outgrow).
    const short = mkdtempSync(join(tmpdir(), 'qwen2-short-'));
    writeQwen2Fixture(short);
    const long = mkdtempSync(join(tmpdir(), 'qwen2-grader-'));
    writeQwen2Fixture(long);
    const cfg = JSON.parse(readFileSync(join(long, 'config.json'), 'utf8'));
    writeFileSync(join(long, 'config.json'), JSON.stringify({ ...cfg, max_position_embeddings: 4096 }));
    hub = await serveHubRepos({ [ID]: long, [SHORT]: short });
  });
  afterAll(() => hub?.close());

  it('its answers (it ends its turn at once) do not parse: counted as failures, no score', async () => {
    const env = nodeRecipeEnv({ hubEndpoint: hub.endpoint });
    const cfg = {
      defender: ID,
      judge: 'rules',
      prompts: 1,
      groupSize: 2,
      maxNewTokens: 4,
      samples: 0,
      evalEvery: 1,
      evalPrompts: 2,
      strongRejectJudge: `model:${ID}`,
      strongRejectMaxTokens: 16,
      strongRejectGraderFormat: 'int4-g32',
    };
    const { run } = await createRun(env, 'redteam', cfg, 1);
    try {
      const m = (await run.step()).metrics;
      expect(m['eval/strongreject_parse_failures']).toBe(2);
      expect(m['eval/strongreject_graded']).toBe(0);
      expect(m['eval/strongreject']).toBeUndefined(); // not 0
      expect(m['eval/strongreject_rules']).toBe(0);
    } finally {
      run.dispose();
    }
  }, 120_000);

  it("a rubric that does not fit the grader's positions fails with one error naming them (the rubric is never cut)", async () => {
    const m = await nodeRecipeEnv({ hubEndpoint: hub.endpoint }).loadModel(SHORT);
    try {
      const g = createChatModelGrader(m, { name: 'strongreject grader', maxNewTokens: 16 });
      const { strongRejectRubric } = await import('../../judges/strongrejectGrader');
      await expect(g.complete([[{ role: 'user', content: strongRejectRubric('q', 'r') }]])).rejects.toThrow(
        /strongreject grader judge: chat 0 needs \d+ prompt tokens \+ 16 answer tokens, more than the grader model's 512 positions/,
      );
    } finally {
      m.dispose();
    }
  }, 60_000);
});
