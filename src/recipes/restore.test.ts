// A malformed checkpoint must change nothing: restore validates the payload whole (names, shapes,
// finiteness, optimiser moments, counters) before it assigns a single tensor. Each case below
// first perturbs every value (so a partial assignment would show), then breaks one late part.
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeRecipeEnv } from '../cli/recipe-env';
import type { NamedTensor } from '../contract/namedTensor';
import { createRun } from './registry';
import { letterJudge, loadWithCharCodec } from '../../dev/test/recipeTesting';
import type { RecipeCheckpoint, RecipeRun } from './kit/types';

const FIXTURE = resolve('dev/fixtures/tiny-llama-f32');
const env = nodeRecipeEnv({
  modelsDir: resolve(FIXTURE, '..'),
  load: loadWithCharCodec,
  judges: { letters: letterJudge },
});

/** The run's whole trainable state as bytes: adapters, moments, optimiser step, counters. */
async function fingerprint(run: RecipeRun): Promise<string> {
  const s = await run.state();
  const bytes = (ts: NamedTensor[]) =>
    ts.map(
      (t) =>
        `${t.name}[${t.shape}]=${Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength).toString('base64')}`,
    );
  return JSON.stringify({
    step: s.step,
    opt: s.optimizer.state,
    rng: s.rng,
    extra: s.extra,
    t: bytes(s.tensors),
    m: bytes(s.optimizer.tensors),
  });
}

const shift = (ts: NamedTensor[]): NamedTensor[] =>
  ts.map((t) => ({ ...t, data: (t.data as Float32Array).map((x) => x + 0.25) }));

/** A deep copy of the payload with every tensor and moment moved by +0.25. */
function perturbed(p: RecipeCheckpoint): RecipeCheckpoint {
  return {
    ...p,
    tensors: shift(p.tensors),
    optimizer: { state: { ...p.optimizer.state }, tensors: shift(p.optimizer.tensors) },
    rng: { ...p.rng },
    extra: { ...p.extra },
  };
}

type Break = [string, (p: RecipeCheckpoint) => void, RegExp];

async function expectUntouched(run: RecipeRun, good: RecipeCheckpoint, cases: Break[]): Promise<void> {
  const before = await fingerprint(run);
  for (const [what, mutate, message] of cases) {
    const p = perturbed(good);
    mutate(p);
    await expect(run.restore(p), what).rejects.toThrow(message);
    expect(await fingerprint(run), `${what}: the run changed`).toBe(before);
  }
  // The same perturbed payload, unbroken, does restore and does change the state: the fingerprint sees it.
  await run.restore(perturbed(good));
  expect(await fingerprint(run)).not.toBe(before);
}

const last = <T>(xs: T[]): T => xs[xs.length - 1];

describe('restore of a malformed checkpoint changes nothing', () => {
  it('one adapter set (redteam): missing tensor, NaN, bad moments, bad step', async () => {
    const config = {
      defender: 'tiny-llama-f32',
      judge: 'letters',
      prompts: 2,
      groupSize: 2,
      maxNewTokens: 4,
      promptPool: 4,
      samples: 1,
      lr: 1e-2,
      loraRank: 2,
    };
    const { run } = await createRun(env, 'redteam', config, 1);
    try {
      // redteam skips zero-advantage groups and then takes no optimiser step: step until one did.
      let good = await run.state();
      for (let i = 0; i < 8 && good.optimizer.tensors.length === 0; i++) {
        await run.step();
        good = await run.state();
      }
      expect(good.optimizer.tensors.length).toBe(2 * good.tensors.length);
      const lastMoment = (p: RecipeCheckpoint) => last(p.optimizer.tensors);
      await expectUntouched(run, good, [
        [
          'last adapter tensor missing',
          (p) => void p.tensors.pop(),
          /no tensor for adapter "base_model\.model\..*lora_[AB]\.weight"/,
        ],
        [
          'NaN in the last tensor',
          (p) => ((last(p.tensors).data as Float32Array)[3] = NaN),
          /tensor ".*" holds NaN at index 3/,
        ],
        [
          'Infinity in the last moment',
          (p) => ((lastMoment(p).data as Float32Array)[0] = -Infinity),
          /optimiser moment ".*exp_avg_sq" holds -Infinity at index 0/,
        ],
        [
          'moment of the wrong shape',
          (p) => {
            const m = lastMoment(p);
            p.optimizer.tensors[p.optimizer.tensors.length - 1] = {
              ...m,
              shape: [m.shape[0] + 1, m.shape[1]],
              data: new Float32Array((m.shape[0] + 1) * m.shape[1]),
            };
          },
          /optimiser moment ".*" has shape \[\d+, \d+\], the run's is/,
        ],
        [
          'exp_avg without exp_avg_sq',
          (p) =>
            void p.optimizer.tensors.splice(
              p.optimizer.tensors.findIndex((t) => t.name.endsWith('.exp_avg_sq')),
              1,
            ),
          /has exp_avg but no exp_avg_sq/,
        ],
        [
          'a moment of no parameter',
          (p) => p.optimizer.tensors.push({ ...lastMoment(p), name: 'base_model.model.nothing.exp_avg' }),
          /optimiser tensor "base_model\.model\.nothing\.exp_avg" is not/,
        ],
        ['optimiser step -1', (p) => (p.optimizer.state.step = -1), /optimiser step .* non-negative integer, got -1/],
        ['checkpoint step 1.5', (p) => (p.step = 1.5), /step must be a non-negative integer, got 1\.5/],
        [
          'dropout counter Infinity',
          (p) => (p.rng.lora_dropout_calls_0 = Infinity),
          /dropout counter 0 .* got Infinity/,
        ],
        [
          'tensor data too short',
          (p) => (p.tensors[0] = { ...p.tensors[0], data: new Float32Array(1) }),
          /holds 1 values/,
        ],
      ]);
    } finally {
      run.dispose();
    }
  });

  it('two adapter sets (arena): a bad defender part leaves the attacker part unassigned too', async () => {
    const config = {
      attacker: 'tiny-llama-f32',
      defender: 'tiny-llama-f32',
      judge: 'letters',
      phaseSteps: 1,
      goals: 1,
      groupSize: 2,
      benignPrompts: 1,
      attackerMaxTokens: 4,
      defenderMaxTokens: 4,
      goalPool: 4,
      samples: 1,
      loraRank: 2,
    };
    const { run } = await createRun(env, 'arena', config, 3);
    try {
      await run.step();
      await run.step();
      const good = await run.state();
      const defenders = (p: RecipeCheckpoint) => p.tensors.filter((t) => t.name.startsWith('defender/'));
      expect(good.tensors[0].name).toMatch(/^attacker\//);
      await expectUntouched(run, good, [
        [
          'last defender tensor missing',
          (p) => void p.tensors.splice(p.tensors.indexOf(last(defenders(p))), 1),
          /no tensor for adapter "defender\/base_model/,
        ],
        [
          'NaN in a defender tensor',
          (p) => ((last(defenders(p)).data as Float32Array)[1] = NaN),
          /tensor "defender\/.*" holds NaN at index 1/,
        ],
        [
          'a tensor of no part',
          (p) => p.tensors.push({ ...good.tensors[0], name: 'judge/x' }),
          /tensor "judge\/x" belongs to none of this run's adapters/,
        ],
      ]);
    } finally {
      run.dispose();
    }
  }, 60_000);

  describe('a gae critic is checked with the rest, before anything is assigned', () => {
    type SavedCritic = {
      step: number;
      weight: { data: number[]; m: number[] | null; v: number[] | null };
      bias: { data: number[]; m: number[] | null; v: number[] | null };
    };
    /** The payload's critic (at `path` in extra) replaced by a copy whose weight moved by +0.25 and whose bias is broken by `breakBias`. */
    const withCritic = (path: string[], breakBias: (c: SavedCritic) => void) => (p: RecipeCheckpoint) => {
      const extra = structuredClone(p.extra) as Record<string, unknown>;
      let c = extra as Record<string, unknown>;
      for (const k of path) c = c[k] as Record<string, unknown>;
      const critic = c as unknown as SavedCritic;
      critic.weight.data = critic.weight.data.map((x) => x + 0.25);
      breakBias(critic);
      p.extra = extra;
    };

    it('defend: a NaN bias, a half-saved moment pair, a fractional step', async () => {
      const config = {
        attacker: 'tiny-llama-f32',
        defender: 'tiny-llama-f32',
        judge: 'letters',
        goals: 2,
        benignPrompts: 1,
        groupSize: 3,
        attackerMaxTokens: 4,
        maxNewTokens: 4,
        goalPool: 8,
        samples: 0,
        lr: 2e-2,
        loraRank: 2,
        advantage: 'gae',
        criticLr: 1e-2,
      };
      const { run } = await createRun(env, 'defend', config, 4);
      try {
        await run.step();
        const good = await run.state();
        await expectUntouched(run, good, [
          [
            'NaN in the critic bias',
            withCritic(['critic'], (c) => (c.bias.data[0] = NaN)),
            /extra\.critic\.bias must hold 1 finite numbers/,
          ],
          [
            'critic bias with m but no v',
            withCritic(['critic'], (c) => (c.bias.v = null)),
            /extra\.critic\.bias's moments m and v must both hold/,
          ],
          [
            'critic step 0.5',
            withCritic(['critic'], (c) => (c.step = 0.5)),
            /extra\.critic\.step must be a non-negative integer/,
          ],
        ]);
      } finally {
        run.dispose();
      }
    }, 60_000);

    it('arena: a bad defender critic leaves both sides and the attacker critic unassigned', async () => {
      const config = {
        attacker: 'tiny-llama-f32',
        defender: 'tiny-llama-f32',
        judge: 'letters',
        phaseSteps: 1,
        goals: 1,
        groupSize: 2,
        benignPrompts: 1,
        attackerMaxTokens: 4,
        defenderMaxTokens: 4,
        goalPool: 4,
        samples: 1,
        loraRank: 2,
        advantage: 'gae',
      };
      const { run } = await createRun(env, 'arena', config, 3);
      try {
        await run.step();
        await run.step();
        const good = await run.state();
        await expectUntouched(run, good, [
          [
            'Infinity in the defender critic bias',
            withCritic(['critics', 'defender'], (c) => (c.bias.data[0] = Infinity)),
            /extra\.critics\.defender\.bias must hold 1 finite numbers/,
          ],
        ]);
      } finally {
        run.dispose();
      }
    }, 60_000);
  });
});
