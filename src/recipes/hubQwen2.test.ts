// End to end on a model that is not a sandbox model: a generated Qwen2 repository (q/k/v biases,
// untied head, Qwen2's pre-tokenizer, a ChatML template with a default system message, two eos
// ids in generation_config.json) served the way the hub serves one, loaded by hub id through the
// recipe env (model/hub.ts sources, model/load.ts, the tokenizer and template code) in int4, and
// checked against a float64 Qwen2 forward written here from the architecture's definition.
import * as tf from '@tensorflow/tfjs';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveHubRepos, type HubServer } from '../../dev/servers/hubServer';
import { nodeRecipeEnv } from '../cli/recipe-env';
import { generate } from '../model/generate';
import { forward } from '../model/llama';
import {
  CHAT_TEMPLATE,
  DEFAULT_SYSTEM,
  ENDOFTEXT,
  IM_END,
  IM_START,
  qwen2Weights,
  QWEN2_DIMS as D,
  VOCAB,
  writeQwen2Fixture,
} from '../../dev/test/testdata/qwen2Fixture';
import { createRun } from './registry';
import type { StepReport } from '../contract/report';
import type { LoadedModel } from './kit/types';

const ID = 'test-org/qwen2-tiny';
let hub: HubServer;

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'qwen2-tiny-'));
  writeQwen2Fixture(dir);
  hub = await serveHubRepos({ [ID]: dir });
});
afterAll(() => hub?.close());

// ------------------------------------------------------------------ float64 Qwen2 reference

type W = Map<string, { shape: number[]; data: Float64Array }>;

/** int4, groups of 32 inputs: scale = max|w| / 7 (a float32), q = round half away from zero, clamped to [-8, 7]. */
function int4Dequant(w: Float64Array, out: number, inp: number, g = 32): Float64Array {
  const r = new Float64Array(w.length);
  for (let o = 0; o < out; o++) {
    for (let j = 0; j < inp; j += g) {
      let m = 0;
      for (let i = 0; i < g; i++) m = Math.max(m, Math.abs(w[o * inp + j + i]));
      const s = Math.fround(m / 7);
      for (let i = 0; i < g; i++) {
        const v = s === 0 ? 0 : w[o * inp + j + i] / s;
        r[o * inp + j + i] = Math.max(-8, Math.min(7, Math.sign(v) * Math.round(Math.abs(v)))) * s;
      }
    }
  }
  return r;
}

/** The Hugging Face Qwen2 forward (Qwen2ForCausalLM, eval mode) in float64; `quant` dequantises each projection first. */
function qwen2Reference(w: W, ids: number[], quant: boolean): number[][] {
  const H = D.hidden;
  const hd = D.headDim;
  const T = ids.length;
  const get = (n: string) => w.get(n)!.data;
  const proj = (n: string, out: number, inp: number) => (quant ? int4Dequant(get(n), out, inp) : get(n));
  const linear = (x: Float64Array[], W: Float64Array, out: number, inp: number, b?: Float64Array) =>
    x.map((v) => {
      const y = new Float64Array(out);
      for (let o = 0; o < out; o++) {
        let s = b ? b[o] : 0;
        for (let i = 0; i < inp; i++) s += W[o * inp + i] * v[i];
        y[o] = s;
      }
      return y;
    });
  const rms = (x: Float64Array[], g: Float64Array) =>
    x.map((v) => {
      let ss = 0;
      for (const a of v) ss += a * a;
      const r = 1 / Math.sqrt(ss / v.length + D.eps);
      return v.map((a, i) => a * r * g[i]);
    });
  // RoPE, rotate_half convention: dims i and i + hd/2 rotate together at inv_freq[i] = theta^(-2i/hd).
  const rope = (x: Float64Array[], heads: number) =>
    x.map((v, p) => {
      const y = new Float64Array(v.length);
      for (let h = 0; h < heads; h++) {
        for (let i = 0; i < hd / 2; i++) {
          const a = p * Math.pow(D.ropeTheta, (-2 * i) / hd);
          const x1 = v[h * hd + i];
          const x2 = v[h * hd + i + hd / 2];
          y[h * hd + i] = x1 * Math.cos(a) - x2 * Math.sin(a);
          y[h * hd + i + hd / 2] = x2 * Math.cos(a) + x1 * Math.sin(a);
        }
      }
      return y;
    });
  const emb = get('model.embed_tokens.weight');
  let x = ids.map((t) => emb.slice(t * H, (t + 1) * H));
  for (let l = 0; l < D.layers; l++) {
    const p = `model.layers.${l}`;
    const n1 = rms(x, get(`${p}.input_layernorm.weight`));
    const q = rope(
      linear(
        n1,
        proj(`${p}.self_attn.q_proj.weight`, D.heads * hd, H),
        D.heads * hd,
        H,
        get(`${p}.self_attn.q_proj.bias`),
      ),
      D.heads,
    );
    const k = rope(
      linear(
        n1,
        proj(`${p}.self_attn.k_proj.weight`, D.kvHeads * hd, H),
        D.kvHeads * hd,
        H,
        get(`${p}.self_attn.k_proj.bias`),
      ),
      D.kvHeads,
    );
    const v = linear(
      n1,
      proj(`${p}.self_attn.v_proj.weight`, D.kvHeads * hd, H),
      D.kvHeads * hd,
      H,
      get(`${p}.self_attn.v_proj.bias`),
    );
    const att = Array.from({ length: T }, () => new Float64Array(D.heads * hd));
    for (let h = 0; h < D.heads; h++) {
      const kh = Math.floor(h / (D.heads / D.kvHeads));
      for (let t = 0; t < T; t++) {
        const sc = Array.from({ length: t + 1 }, (_, s) => {
          let d = 0;
          for (let i = 0; i < hd; i++) d += q[t][h * hd + i] * k[s][kh * hd + i];
          return d / Math.sqrt(hd);
        });
        const mx = Math.max(...sc);
        const e = sc.map((a) => Math.exp(a - mx));
        const z = e.reduce((a, b) => a + b, 0);
        for (let s = 0; s <= t; s++) for (let i = 0; i < hd; i++) att[t][h * hd + i] += (e[s] / z) * v[s][kh * hd + i];
      }
    }
    const o = linear(att, proj(`${p}.self_attn.o_proj.weight`, H, D.heads * hd), H, D.heads * hd);
    x = x.map((a, t) => a.map((b, i) => b + o[t][i]));
    const n2 = rms(x, get(`${p}.post_attention_layernorm.weight`));
    const g = linear(n2, proj(`${p}.mlp.gate_proj.weight`, D.intermediate, H), D.intermediate, H);
    const u = linear(n2, proj(`${p}.mlp.up_proj.weight`, D.intermediate, H), D.intermediate, H);
    const act = g.map((a, t) => a.map((b, i) => (b / (1 + Math.exp(-b))) * u[t][i]));
    const d = linear(act, proj(`${p}.mlp.down_proj.weight`, H, D.intermediate), H, D.intermediate);
    x = x.map((a, t) => a.map((b, i) => b + d[t][i]));
  }
  const n = rms(x, get('model.norm.weight'));
  return linear(n, proj('lm_head.weight', D.vocab, H), D.vocab, H).map((r) => Array.from(r));
}

// ------------------------------------------------------------------ tests

describe('a Qwen2 repository from a hub, in int4', () => {
  const ids = [VOCAB['h'], VOCAB['e'], 260, 265, VOCAB['Ġ'], VOCAB['4'], VOCAB['2'], IM_END, 100, 300];

  async function load(weights: 'int4-g32' | 'f32'): Promise<LoadedModel> {
    return nodeRecipeEnv({ hubEndpoint: hub.endpoint }).loadModel(ID, { weights });
  }

  it('loads by hub id over HTTP; int4 projections, q/k/v biases, untied head; logits match the float64 reference', async () => {
    const m = await load('int4-g32');
    try {
      expect(hub.requests).toContain(`GET /${ID}/resolve/main/model.safetensors`);
      expect(m.weights).toBe('int4-g32');
      const c = m.model.config;
      expect([c.family, c.qkvBias, c.oBias, c.tieWordEmbeddings, c.vocabSize]).toEqual([
        'qwen2',
        true,
        false,
        false,
        320,
      ]);
      const l0 = m.model.layers[0];
      expect([l0.q, l0.k, l0.v, l0.o, l0.gate, l0.up, l0.down].map((p) => p.weight.kind)).toEqual(
        Array(7).fill('int4'),
      );
      expect(l0.q.bias).not.toBeNull();
      expect(m.model.lmHead.weight.kind).toBe('int4');
      const got = tf.tidy(() => (forward(m.model, [ids]).arraySync() as number[][][])[0]);
      const want = qwen2Reference(qwen2Weights(), ids, true);
      let err = 0;
      for (let t = 0; t < ids.length; t++)
        for (let v = 0; v < D.vocab; v++) err = Math.max(err, Math.abs(got[t][v] - want[t][v]));
      expect(err).toBeLessThan(1e-4);
      // The quantisation is real: the unquantised reference differs by far more.
      const plain = qwen2Reference(qwen2Weights(), ids, false);
      let gap = 0;
      for (let t = 0; t < ids.length; t++)
        for (let v = 0; v < D.vocab; v++) gap = Math.max(gap, Math.abs(plain[t][v] - want[t][v]));
      expect(gap).toBeGreaterThan(0.1);
    } finally {
      m.dispose();
    }
  });

  it('in f32 the logits match the unquantised reference', async () => {
    const m = await load('f32');
    try {
      const got = tf.tidy(() => (forward(m.model, [ids]).arraySync() as number[][][])[0]);
      const want = qwen2Reference(qwen2Weights(), ids, false);
      let err = 0;
      for (let t = 0; t < ids.length; t++)
        for (let v = 0; v < D.vocab; v++) err = Math.max(err, Math.abs(got[t][v] - want[t][v]));
      expect(err).toBeLessThan(1e-4);
    } finally {
      m.dispose();
    }
  });

  it("tokenises with Qwen2's pre-tokenizer and renders its ChatML template with the default system message", async () => {
    const m = await load('int4-g32');
    try {
      // "(hello" is one pre-token under Qwen2's regex (GPT-2's splits off "("), so the merges make it one token.
      expect(m.codec.encodeText('(hello world')).toEqual([260, 265]);
      expect(CHAT_TEMPLATE).toContain(DEFAULT_SYSTEM);
      const text = (s: string) => m.codec.encodeText(s);
      const chat = m.codec.encodeChat([{ role: 'user', content: 'hi' }], { addGenerationPrompt: true });
      expect(chat).toEqual([
        IM_START,
        ...text(`system\n${DEFAULT_SYSTEM}`),
        IM_END,
        ...text('\n'),
        IM_START,
        ...text('user\nhi'),
        IM_END,
        ...text('\n'),
        IM_START,
        ...text('assistant\n'),
      ]);
      expect(m.codec.decode(chat)).toBe(`system\n${DEFAULT_SYSTEM}\nuser\nhi\nassistant\n`);
      // A system message of the conversation replaces the default one.
      const own = m.codec.encodeChat(
        [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'hi' },
        ],
        { addGenerationPrompt: false },
      );
      expect(m.codec.decode(own)).toBe('system\nBe brief.\nuser\nhi\n');
    } finally {
      m.dispose();
    }
  });

  it('stops generation at either eos id, including the one only generation_config.json lists', async () => {
    const m = await load('int4-g32');
    try {
      expect([...m.codec.eos].sort()).toEqual([ENDOFTEXT, IM_END].sort());
      const prompt = m.codec.encodeChat([{ role: 'user', content: 'hi' }], { addGenerationPrompt: true });
      // This model's greedy next token is always <|endoftext|> (see qwen2Fixture.ts).
      const free = await generate(m.model, [prompt], {
        maxNewTokens: 4,
        greedy: true,
        stopTokens: [IM_END],
        padTokenId: m.codec.pad,
      });
      expect(free.tokens[0].slice(0, free.lengths[0])).toEqual([ENDOFTEXT, ENDOFTEXT, ENDOFTEXT, ENDOFTEXT]);
      const stopped = await generate(m.model, [prompt], {
        maxNewTokens: 4,
        greedy: true,
        stopTokens: [...m.codec.eos],
        padTokenId: m.codec.pad,
      });
      expect(stopped.lengths[0]).toBe(1);
      expect(stopped.tokens[0][0]).toBe(ENDOFTEXT);
    } finally {
      m.dispose();
    }
  });
});

describe('the CLI on the hub Qwen2 model', () => {
  const ROOT = fileURLToPath(new URL('../../', import.meta.url));
  const TSX = fileURLToPath(new URL('../../node_modules/.bin/tsx', import.meta.url));

  // spawn, not spawnSync: the hub stand-in answers from this process's event loop.
  function lab(args: string[], env: Record<string, string>): Promise<{ status: number | null; stderr: string }> {
    return new Promise((ok) => {
      const p = spawn(TSX, ['--import', './src/cli/node/wgsl-register.mjs', 'src/cli/lab.ts', ...args], {
        cwd: ROOT,
        env: { ...process.env, ...env },
      });
      let stderr = '';
      p.stderr.on('data', (d) => (stderr += String(d)));
      p.on('close', (status) => ok({ status, stderr }));
    });
  }

  it('npm run lab -- --recipe redteam --model <hub id> --set defenderWeights=int4-g32 runs two steps', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'lab-qwen2-')), 'redteam.jsonl');
    const before = hub.requests.length;
    const r = await lab(
      [
        '--recipe',
        'redteam',
        '--steps',
        '2',
        '--seed',
        '3',
        '--out',
        out,
        '--backend',
        'cpu',
        '--model',
        ID,
        '--set',
        'defenderWeights=int4-g32',
        '--set',
        'prompts=2',
        '--set',
        'groupSize=2',
        '--set',
        'maxNewTokens=4',
        '--set',
        'promptPool=8',
        '--set',
        'samples=1',
        // redteam skips groups whose rewards are all equal (no loss then); the random tiny model's are.
        '--set',
        'skipZeroAdvantageGroups=false',
      ],
      { HF_ENDPOINT: hub.endpoint },
    );
    expect(r.stderr).toMatch(/\[redteam\] step 1 /);
    expect(r.status).toBe(0);
    expect(hub.requests.slice(before)).toContain(`GET /${ID}/resolve/main/model.safetensors`);
    const reps = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as StepReport);
    expect(reps.map((x) => x.step)).toEqual([0, 1]);
    for (const rep of reps)
      for (const k of ['reward/mean', 'loss/policy', 'kl/mean']) expect(Number.isFinite(rep.metrics[k]), k).toBe(true);
    // The defender writes Qwen2 tokens: every sampled answer decodes from ids of this vocabulary.
    expect(reps[0].samples[0].messages.at(-1)!.tokens!.ids.every((id) => id < 320)).toBe(true);
  }, 120_000);
});

describe('every recipe runs two steps on the hub Qwen2 model (int4, sandbox data, rules judge)', () => {
  const q = { weights: 'int4-g32' };
  const cases: [string, Record<string, unknown>][] = [
    [
      'redteam',
      {
        defender: ID,
        defenderWeights: q.weights,
        prompts: 2,
        groupSize: 2,
        maxNewTokens: 4,
        promptPool: 8,
        samples: 1,
      },
    ],
    [
      'attack',
      {
        attacker: ID,
        attackerWeights: q.weights,
        defender: ID,
        defenderWeights: 'int8',
        goals: 2,
        groupSize: 2,
        attackerMaxTokens: 4,
        defenderMaxTokens: 4,
        goalPool: 8,
        samples: 1,
      },
    ],
    [
      'attacker-sft',
      { attacker: ID, attackerWeights: q.weights, dataSize: 16, batchSize: 2, sampleGoals: 2, sampleMaxTokens: 4 },
    ],
    [
      'defend',
      {
        attacker: ID,
        attackerWeights: 'int8',
        defender: ID,
        defenderWeights: q.weights,
        goals: 2,
        benignPrompts: 1,
        groupSize: 2,
        attackerMaxTokens: 4,
        maxNewTokens: 4,
        goalPool: 8,
        samples: 1,
      },
    ],
    [
      'arena',
      {
        attacker: ID,
        attackerWeights: q.weights,
        defender: ID,
        defenderWeights: q.weights,
        phaseSteps: 1,
        goals: 2,
        benignPrompts: 1,
        groupSize: 2,
        attackerMaxTokens: 4,
        defenderMaxTokens: 4,
        goalPool: 8,
        samples: 1,
      },
    ],
    [
      'tokenbuncher',
      {
        defender: ID,
        defenderWeights: q.weights,
        prompts: 2,
        benignPrompts: 1,
        groupSize: 2,
        maxNewTokens: 4,
        promptPool: 8,
        samples: 1,
      },
    ],
    [
      'multiturn',
      {
        defender: ID,
        defenderWeights: q.weights,
        episodes: 1,
        benignEpisodes: 1,
        groupSize: 2,
        maxNewTokens: 4,
        maxTurns: 2,
        goalPool: 8,
        samples: 1,
      },
    ],
    [
      'minmax',
      {
        policy: ID,
        policyWeights: q.weights,
        monitor: ID,
        monitorWeights: q.weights,
        items: 2,
        groupSize: 2,
        policyMaxTokens: 4,
        monitorMaxTokens: 4,
        itemPool: 8,
        samples: 1,
      },
    ],
    [
      'rlhf',
      { policy: ID, policyWeights: q.weights, items: 2, groupSize: 2, policyMaxTokens: 4, itemPool: 8, samples: 1 },
    ],
  ];
  for (const [recipe, config] of cases) {
    it(
      recipe,
      async () => {
        const { run } = await createRun(nodeRecipeEnv({ hubEndpoint: hub.endpoint }), recipe, config, 1);
        try {
          const reps = [await run.step(), await run.step()];
          expect(reps.map((r) => r.step)).toEqual([0, 1]);
          for (const r of reps)
            for (const [k, v] of Object.entries(r.metrics)) expect(Number.isNaN(v), `${recipe} ${k}`).toBe(false);
        } finally {
          run.dispose();
        }
      },
      // rlhf took 18 CPU-s, 41.5 s wall at load 9 and timed out at 60 s at load 11: 5x the loaded time.
      300_000,
    );
  }
});
