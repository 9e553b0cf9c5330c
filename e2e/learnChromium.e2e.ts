// The planned learning step in Chromium (SwiftShader) through the worker: one learnStep on the same
// fixed, left-padded batch from the same seeded adapters on the planned path and on tfjs (the
// reference), on the tiny fixture in f32 and int4. The update is made linear in the gradient
// (dev/bench/learnBench.ts learnCheck), so equal adapter changes mean equal gradients. Then each LoRA
// variable's gradient against tfjs autodiff for every loss type, base and LoRA subset, against
// float64 finite differences on the host, and a checkpoint at step k reproducing step k + 1.
import { resolve } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { sharedHarnessPage } from './browser';
import type { HarnessEngine } from '../dev/harness/harnessApi';
import type { ProjName } from '../src/model/llama';
import { mulberry32 } from '../src/model/random';
import type { GradCheckCase, GradCheckResult } from '../dev/harness/learnGradCheck';
import type { RlLoopConfig } from '../src/rl/loop';
import type { TrainerConfig } from '../src/rl/trainer';
import { f64Stats, loadF64, type F64Lora, type F64Model } from './llamaF64';
import { dequantizeInt8, quantizeInt4, quantizeInt8 } from '../src/model/quant';
import { FIXTURES_DIR } from './serve';

/** An integer weight format of the gradient checks (the float64 reference dequantises it). */
type QuantizeSpec = { kind: 'int8' | 'int4'; groupSize?: number };

// WebGPU is forced: on headless Chromium's software adapter (SwiftShader) the lab's auto choice is wasm.
const lab = sharedHarnessPage('?backend=webgpu');
const CASE = { prompts: 2, groupSize: 2, promptLen: 6, newTokens: 4, rank: 4 };

const relErr = (got: number, want: number) => Math.abs(got - want) / Math.max(Math.abs(want), 1e-12);

describe('the planned learning step in Chromium on WebGPU', () => {
  for (const [label, quantize] of [
    ['f32', undefined],
    ['int4', { kind: 'int4' as const, groupSize: 32 }],
  ] as const) {
    it(`${label}: the planned step's loss, grad norm and adapter update match tfjs within 1e-4`, async () => {
      const name = `learn-${label}`;
      const baseUrl = `${inject('fixturesURL')}tiny-llama-f32/`;
      await lab.page.evaluate(
        ([n, u, q]) =>
          (window.sparring!.engine as HarnessEngine).loadModel(
            n,
            { kind: 'url', baseUrl: u },
            q ? { quantize: q } : {},
          ),
        [name, baseUrl, quantize] as const,
      );
      const run = (path: 'planned' | 'tfjs') =>
        lab.page.evaluate(([n, p, c]) => (window.sparring!.engine as HarnessEngine).learnCheck(n, p, c), [
          name,
          path,
          CASE,
        ] as const);
      const ref = await run('tfjs');
      const got = await run('planned');
      // The planned pass really ran (no silent fallback), with fewer dispatches; the reference did not.
      expect(ref.plannedMicroBatches).toBe(0);
      expect(got.plannedMicroBatches).toBeGreaterThan(0);
      expect(got.dispatches).toBeLessThan(ref.dispatches);
      expect(got.metrics['grad/skipped']).toBe(0);
      expect(relErr(got.metrics['loss/total'], ref.metrics['loss/total'])).toBeLessThan(1e-4);
      expect(relErr(got.metrics['grad/norm'], ref.metrics['grad/norm'])).toBeLessThan(1e-4);
      expect(got.deltas.length).toBe(ref.deltas.length);
      const scale = Math.max(...ref.deltas.map(Math.abs));
      expect(scale).toBeGreaterThan(0);
      let worst = 0;
      got.deltas.forEach((d, i) => (worst = Math.max(worst, Math.abs(d - ref.deltas[i]))));
      expect(worst / scale).toBeLessThan(1e-4);
      expect((await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).status())).gpuErrors).toEqual(
        [],
      );
      await lab.page.evaluate((n) => (window.sparring!.engine as HarnessEngine).unloadModel(n), name);
    });
  }
});

// ---------------------------------------------------------------------------------------------
// Gradients, not only the update: learnStep's gradients on each path, captured at the optimiser
// (dev/harness/learnGradCheck.ts), for every loss type and option the recipes use, on f32 / int8 /
// int4 bases and LoRA subsets, all on one left-padded batch with stopped rows. A few worker calls
// carry all cases (CI has 2 cores).

// Four rows: prompts of 3, 6, 2 and 4 tokens (left padding), 4 response tokens, row 1 stopped
// after 2 and row 3 after 3. The same shape as CASE's batch above (4 rows x (6 + 4)), so tfjs's
// reference reuses the kernels it compiled there (compiling them takes SwiftShader ~20 s).
const BASE = {
  prompts: [
    [5, 9, 17],
    [3, 44, 12, 8, 30, 27],
    [61, 2],
    [7, 7, 19, 4],
  ],
  responses: [
    [7, 21, 33, 4],
    [50, 6, 0, 0],
    [13, 13, 40, 9],
    [11, 22, 33, 44],
  ],
  mask: [
    [1, 1, 1, 1],
    [1, 1, 0, 0],
    [1, 1, 1, 1],
    [1, 1, 1, 0],
  ],
  // Spread around the fixture's log-probs (about -4.2): ratios from about e^-1.5 to e^2.5, so the
  // PPO clip binds on some tokens and not others, and the dual clip (ratio > 3, A < 0) on row 3.
  oldLogp: [
    [-3.1, -2.0, -4.2, -5.3],
    [-2.5, -3.9, 0, 0],
    [-4.0, -5.2, -3.0, -2.2],
    [-6.5, -6.9, -4.4, 0],
  ],
  advantages: [
    [0.8, 0.8, 0.8, 0.8],
    [-1.1, -1.1, -1.1, -1.1],
    [0.3, 0.3, 0.3, 0.3],
    [-0.5, -0.5, -0.5, -0.5],
  ],
};
const REF = BASE.oldLogp.map((r, i) => r.map((x, t) => x - 0.3 + 0.1 * ((i + t) % 3)));
const ALL = ['q', 'k', 'v', 'o', 'gate', 'up', 'down'] as ProjName[];
const LORA = { r: 4, alpha: 8, targets: ALL, seed: 3 };
const TEMP = 0.7;
const gradCase = (label: string, trainer: TrainerConfig, more: Partial<GradCheckCase> = {}): GradCheckCase => ({
  label,
  lora: LORA,
  batch: { ...BASE, refLogp: REF },
  trainer: { temperature: TEMP, ...trainer },
  ...more,
});

// The finite-difference case (on every base): smooth, no clip and no clamp, so central differences
// cannot step over a kink. Its loss is written out in float64 in f64Loss. Rollout log-probs of -3:
// with BASE's (down to -6.9) the int4 base's near-certain token (p = 0.998) gets a ratio of ~1000
// and dominates the gradient, and float32's 1 - p there (tfjs and the plan alike) is off by ~7e-5
// of the exact gradient: conditioning, not the code under test.
const FD_CASE = gradCase(
  'importance sampling, token-mean, kl (k1) KL loss, entropy bonus',
  {
    policyLoss: 'importance_sampling',
    lossAggMode: 'token-mean',
    kl: { estimator: 'kl', coef: 0.1 },
    entropyCoeff: 0.02,
  },
  {
    batch: { ...BASE, oldLogp: BASE.mask.map((r) => r.map((m) => (m ? -3 : 0))), refLogp: REF },
  },
);

/** Every policy loss, aggregation, KL estimator and placement, entropy bonus and value head the recipes reach (src/recipes/kit/common.ts). */
const LOSS_CASES: GradCheckCase[] = [
  gradCase(
    'GRPO default: ppo clip + dual clip, token-mean, k3 KL loss, entropy bonus',
    { policyLoss: 'ppo', kl: { estimator: 'k3', coef: 0.05 }, entropyCoeff: 0.01 },
    { countBuffers: true },
  ),
  gradCase('vanilla (veRL name), clip-higher 0.28, dual clip c 2, seq-mean-token-mean, k1 KL loss', {
    policyLoss: 'vanilla',
    clipRatioHigh: 0.28,
    clipRatioC: 2,
    lossAggMode: 'seq-mean-token-mean',
    kl: { estimator: 'k1', coef: 0.1 },
  }),
  gradCase('importance_sampling (Tinker), token-sum, entropy bonus, temperature 1', {
    policyLoss: 'importance_sampling',
    entropyCoeff: 0.02,
    temperature: 1,
  }),
  FD_CASE,
  gradCase('ppo, seq-mean-token-sum, k2 KL loss', {
    lossAggMode: 'seq-mean-token-sum',
    kl: { estimator: 'k2', coef: 0.1 },
  }),
  gradCase('ppo, seq-mean-token-sum-norm (Dr. GRPO), abs KL loss, entropy bonus', {
    lossAggMode: 'seq-mean-token-sum-norm',
    kl: { estimator: 'abs', coef: 0.1 },
    entropyCoeff: 0.01,
  }),
  gradCase('TRL grpo loss type, mse KL loss', { trlLossType: 'grpo', kl: { estimator: 'mse', coef: 0.1 } }),
  gradCase('TRL bnpo loss type, entropy bonus', { trlLossType: 'bnpo', entropyCoeff: 0.02 }),
  gradCase('TRL dr_grpo loss type (max completion length 6), low_var_kl KL loss, entropy bonus', {
    trlLossType: 'dr_grpo',
    maxCompletionLength: 6,
    kl: { estimator: 'low_var_kl', coef: 0.05 },
    entropyCoeff: 0.02,
  }),
  gradCase(
    'KL in the reward (TRL dapo loss type): no KL loss (coef 0, kl/mean only), reference log-probs from the plan',
    { trlLossType: 'dapo', kl: { estimator: 'k1', coef: 0 } },
    { reference: true },
  ),
  gradCase(
    'a skipped zero-advantage group: lossMask drops rows 0 and 2, regMask keeps KL and entropy there',
    { kl: { estimator: 'k3', coef: 0.05 }, entropyCoeff: 0.01 },
    {
      batch: {
        ...BASE,
        refLogp: REF,
        lossMask: BASE.mask.map((r, i) => (i % 2 === 0 ? r.map(() => 0) : r)),
        regMask: BASE.mask,
      },
    },
  ),
  gradCase(
    'PPO with a value head (GAE): value loss, vfCoef 0.5, value clip 0.2',
    { vfCoef: 0.5, cliprangeValue: 0.2 },
    {
      valueHead: true,
      batch: {
        ...BASE,
        values: [
          [0.1, 0.2, 0.3, 0.1],
          [0.0, -0.2, 0, 0],
          [0.4, 0.1, 0.2, 0.3],
          [0.5, -0.4, 0.2, 0],
        ],
        returns: [
          [0.9, 0.7, 0.5, 0.4],
          [-0.8, -0.6, 0, 0],
          [0.2, 0.6, 0.3, 0.1],
          [-0.3, 0.1, 0.6, 0],
        ],
      },
    },
  ),
  // Against tfjs's one pass over the batch: the accumulated gradient is the full batch's (and tfjs
  // would compile all its kernels again for 2-row shapes).
  gradCase(
    'micro-batches of 2 rows on the planned path (gradient accumulation), token-mean, k3 KL loss, entropy bonus',
    { kl: { estimator: 'k3', coef: 0.05 }, entropyCoeff: 0.01 },
    { plannedTrainer: { microBatchSize: 2 } },
  ),
];

/** Quantised bases, each with a LoRA subset, with GRPO's default loss and its terms. */
const BASES: {
  label: string;
  quantize: QuantizeSpec;
  lora: GradCheckCase['lora'];
  names: string[];
}[] = [
  {
    label: 'int8 (one scale per output channel), LoRA on q and v only, rank 8',
    quantize: { kind: 'int8' },
    lora: { r: 8, alpha: 16, targets: ['q', 'v'], seed: 3 },
    names: modules([0, 1], ['self_attn.q_proj', 'self_attn.v_proj']),
  },
  {
    label: 'int8 (groups of 16), LoRA on q, k and v of layer 1 only, rank 2',
    quantize: { kind: 'int8', groupSize: 16 },
    lora: { r: 2, alpha: 4, targets: ['q', 'k', 'v'], layers: [1], seed: 3 },
    names: modules([1], ['self_attn.q_proj', 'self_attn.k_proj', 'self_attn.v_proj']),
  },
  {
    label: 'int4 (groups of 32), LoRA on o, gate and down only',
    quantize: { kind: 'int4', groupSize: 32 },
    lora: { r: 4, alpha: 8, targets: ['o', 'gate', 'down'], seed: 3 },
    names: modules([0, 1], ['self_attn.o_proj', 'mlp.gate_proj', 'mlp.down_proj']),
  },
];

/** The LoRA variable names of these layers and modules, in model order (A then B). */
function modules(layers: number[], mods: string[]): string[] {
  return layers.flatMap((l) => mods.flatMap((m) => ['A', 'B'].map((w) => `model.layers.${l}.${m}.lora_${w}`)));
}

/** Largest |planned - tfjs| over largest |tfjs|, per variable. */
function gradErrors(r: GradCheckResult): { name: string; rel: number; scale: number }[] {
  return r.tfjs.grads.map((want, k) => {
    const got = r.planned.grads[k].values;
    let num = 0;
    let den = 0;
    want.values.forEach((w, i) => {
      num = Math.max(num, Math.abs(got[i] - w));
      den = Math.max(den, Math.abs(w));
    });
    return { name: want.name, rel: num / den, scale: den };
  });
}

/** What every case must show: the planned pass ran, the same loss and metrics, gradients within 1e-4 of tfjs. */
function expectSameStep(r: GradCheckResult, plannedPasses = 1): number {
  const at = r.label;
  expect(r.tfjs.plannedMicroBatches, at).toBe(0);
  expect(r.planned.plannedMicroBatches, at).toBe(plannedPasses);
  expect(Object.keys(r.planned.metrics).sort(), at).toEqual(Object.keys(r.tfjs.metrics).sort());
  for (const [k, want] of Object.entries(r.tfjs.metrics)) {
    // Losses and statistics within 1e-5; the gradient's norm within the gradients' 1e-4 (measured up to 1.6e-5).
    const tol = k === 'grad/norm' ? 1e-4 * want : 1e-5 * Math.max(1, Math.abs(want));
    expect(Math.abs(r.planned.metrics[k] - want), `${at}: ${k}`).toBeLessThan(tol);
  }
  expect(r.tfjs.metrics['grad/skipped'], at).toBe(0);
  expect(
    r.planned.grads.map((g) => [g.name, g.values.length]),
    at,
  ).toEqual(r.tfjs.grads.map((g) => [g.name, g.values.length]));
  const errs = gradErrors(r);
  for (const e of errs) {
    // Every variable gets a gradient (a dropped term or adapter would show as 0 here or as a big error).
    expect(e.scale, `${at}: ${e.name}`).toBeGreaterThan(1e-6);
    expect(e.rel, `${at}: ${e.name}`).toBeLessThan(1e-4);
  }
  return Math.max(...errs.map((e) => e.rel));
}

/** The first planned step of a shape builds its plan (buffers labelled learn:...); a second identical step builds none. */
function expectNoNewBuffers(r: GradCheckResult): void {
  const plan = (ls: string[]) => ls.filter((l) => l.startsWith('learn'));
  expect(plan(r.buffers!.first).length, r.label).toBeGreaterThan(0);
  expect(plan(r.buffers!.second), r.label).toEqual([]);
  console.log(
    `${r.label}: buffers created by the first planned step ${r.buffers!.first.length}, by the second ${r.buffers!.second.length} (${[...new Set(r.buffers!.second)].join(', ') || 'none'}); ms tfjs ${Math.round(r.tfjs.ms)}, planned ${Math.round(r.planned.ms)}`,
  );
}

const loadFixture = (name: string, quantize?: QuantizeSpec) =>
  lab.page.evaluate(
    ([n, u, q]) =>
      (window.sparring!.engine as HarnessEngine).loadModel(n, { kind: 'url', baseUrl: u }, q ? { quantize: q } : {}),
    [name, `${inject('fixturesURL')}tiny-llama-f32/`, quantize] as const,
  );
const unload = (name: string) =>
  lab.page.evaluate((n) => (window.sparring!.engine as HarnessEngine).unloadModel(n), name);
const gradCheck = (name: string, cases: GradCheckCase[]) =>
  lab.page.evaluate(([n, c]) => (window.sparring!.engine as HarnessEngine).learnGradCheck(n, c), [
    name,
    cases,
  ] as const);

type FdEntry = { r: GradCheckResult; lora: GradCheckCase['lora']; quantize?: QuantizeSpec };
/** The finite-difference case's results on each base, from the tests that ran it (the float64 test reads them). */
const fdResults: FdEntry[] = [];

describe('the planned learning step in Chromium: LoRA gradients against tfjs autodiff', () => {
  it('f32 base, LoRA on every projection: every loss type, aggregation, KL estimator and placement, entropy bonus, value head, micro-batches', async () => {
    await loadFixture('grad-f32');
    try {
      const results = await gradCheck('grad-f32', LOSS_CASES);
      fdResults.push({ r: results.find((x) => x.label === FD_CASE.label)!, lora: LORA });
      const worst: Record<string, number> = {};
      for (const r of results) worst[r.label] = expectSameStep(r, r.label.startsWith('micro-batches') ? 2 : 1);
      console.log('planned vs tfjs, worst relative gradient error per case:', worst);
      console.log(
        'ms per step, tfjs / planned:',
        results.map((r) => `${Math.round(r.tfjs.ms)} / ${Math.round(r.planned.ms)}`).join(', '),
      );
      // The batch exercises the clip: some tokens clipped, not all; the dual clip binds on row 3.
      const grpo = results.find((x) => x.label.startsWith('GRPO default'))!;
      expect(grpo.tfjs.metrics['ppo/clipfrac']).toBeGreaterThan(0);
      expect(grpo.tfjs.metrics['ppo/clipfrac']).toBeLessThan(1);
      expect(grpo.tfjs.metrics['ppo/clipfrac_lower']).toBeGreaterThan(0);
      expect(grpo.tfjs.metrics['loss/kl']).toBeGreaterThan(0);
      expect(grpo.tfjs.metrics['loss/entropy']).toBeLessThan(0);
      expectNoNewBuffers(grpo);
      // KL in the reward: the plan's reference pass (adapters off) gives tfjs's reference log-probs.
      const kr = results.find((x) => x.label.startsWith('KL in the reward'))!;
      expect(kr.reference!.planned.length).toBe(16);
      let worstRef = 0;
      kr.reference!.planned.forEach((x, i) => (worstRef = Math.max(worstRef, Math.abs(x - kr.reference!.tfjs[i]))));
      expect(worstRef).toBeLessThan(1e-4);
      expect(kr.tfjs.metrics['loss/kl']).toBeUndefined();
      expect(Math.abs(kr.tfjs.metrics['kl/mean'])).toBeGreaterThan(1e-3);
      // The value head's gradient comes from the plan's hidden rows.
      const vh = results.find((x) => x.label.startsWith('PPO with a value head'))!;
      expect(vh.tfjs.grads.map((g) => g.name).slice(-2)).toEqual(['value_head.weight', 'value_head.bias']);
      expect(vh.tfjs.metrics['loss/value']).toBeGreaterThan(0.01);
      expect((await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).status())).gpuErrors).toEqual(
        [],
      );
    } finally {
      await unload('grad-f32');
    }
  });

  it('int8 (per channel, groups of 16) and int4 bases with LoRA subsets (q and v; one layer; o, gate and down), two loss types each', async () => {
    const worst: Record<string, number> = {};
    for (const b of BASES) {
      const name = `grad-${b.label}`;
      await loadFixture(name, b.quantize);
      try {
        const [r, fd] = await gradCheck(name, [
          gradCase(
            b.label,
            { kl: { estimator: 'k3', coef: 0.05 }, entropyCoeff: 0.01 },
            { lora: b.lora, countBuffers: true },
          ),
          { ...FD_CASE, label: `${b.label}: ${FD_CASE.label}`, lora: b.lora },
        ]);
        worst[b.label] = expectSameStep(r);
        worst[fd.label] = expectSameStep(fd);
        fdResults.push({ r: fd, lora: b.lora, quantize: b.quantize });
        expect(
          r.tfjs.grads.map((g) => g.name),
          b.label,
        ).toEqual(b.names);
        expectNoNewBuffers(r);
      } finally {
        await unload(name);
      }
    }
    console.log('planned vs tfjs, worst relative gradient error per base:', worst);
    expect((await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).status())).gpuErrors).toEqual([]);
  });
});

/** FD_CASE on f32 and on each quantised base, loaded here (when the float64 test runs alone). */
async function fdAlone(): Promise<FdEntry[]> {
  const out: FdEntry[] = [];
  for (const b of [{ label: 'f32', quantize: undefined, lora: LORA }, ...BASES]) {
    await loadFixture('fd-alone', b.quantize);
    try {
      const [r] = await gradCheck('fd-alone', [{ ...FD_CASE, label: `${b.label}: ${FD_CASE.label}`, lora: b.lora }]);
      out.push({ r, lora: b.lora, quantize: b.quantize });
    } finally {
      await unload('fd-alone');
    }
  }
  return out;
}

/** FD_CASE's loss as learnStep computes it (one micro-batch, token-mean over the generation mask), in float64. */
function f64Loss(m: F64Model, lora: F64Lora): number {
  const { batch } = FD_CASE;
  const s = f64Stats(m, lora, batch, TEMP);
  // mean(-exp(logp - old) A) - 0.02 mean(H) + 0.1 mean(logp - ref)
  let [pg, ent, kl, n] = [0, 0, 0, 0];
  batch.mask.forEach((row, b) =>
    row.forEach((on, t) => {
      if (!on) return;
      pg -= Math.exp(s.logp[b][t] - batch.oldLogp[b][t]) * batch.advantages[b][t];
      ent += s.entropy[b][t];
      kl += s.logp[b][t] - batch.refLogp![b][t];
      n++;
    }),
  );
  const d = n + 1e-8; // aggLoss's token-mean
  return pg / d - 0.02 * (ent / d) + 0.1 * (kl / d);
}

/**
 * The planned loss against the float64 forward's on the same (decoded) weights and adapters, and
 * every variable's planned gradient against central differences of it, at the variable's largest
 * coordinate and two seeded ones. Returns the worst |g - fd| / max |g| of the variable.
 */
function expectF64FiniteDifferences({ r, lora: cfg, quantize }: FdEntry): number {
  const decode =
    quantize &&
    ((w: Float32Array, shape: [number, number]) =>
      dequantizeInt8(
        quantize.kind === 'int8'
          ? quantizeInt8(w, shape, { groupSize: quantize.groupSize })
          : quantizeInt4(w, shape, quantize.groupSize),
      ));
  const m = loadF64(resolve(FIXTURES_DIR, 'tiny-llama-f32'), decode);
  // The adapters the gradients were taken at, exactly (float32 values, widened).
  const params = new Map(r.params.map((p) => [p.name, Float64Array.from(p.values)]));
  const lora: F64Lora = new Map();
  for (const [name, A] of params) {
    if (!name.endsWith('.lora_A')) continue;
    const mod = name.slice(0, -'.lora_A'.length);
    lora.set(mod, { A, B: params.get(`${mod}.lora_B`)!, r: cfg.r, scale: cfg.alpha / cfg.r });
  }
  expect(r.planned.plannedMicroBatches, r.label).toBe(1);
  const L = f64Loss(m, lora);
  expect(Math.abs(r.planned.metrics['loss/total'] - L), r.label).toBeLessThan(1e-5 * Math.max(1, Math.abs(L)));
  // Central differences in float64 with h = 1e-5: truncation ~ h^2 |d3L/dx3| ~ 1e-10 and rounding
  // ~ 1e-16 / h ~ 1e-11, far below the 1e-4 x max |g| tolerated (the planned gradient is float32
  // arithmetic, ~1e-6 relative).
  const h = 1e-5;
  const rand = mulberry32(21);
  let worst = 0;
  for (const g of r.planned.grads) {
    const x = params.get(g.name)!;
    const scale = Math.max(...g.values.map(Math.abs));
    const top = g.values.reduce((best, v, i) => (Math.abs(v) > Math.abs(g.values[best]) ? i : best), 0);
    for (const i of [top, Math.floor(rand() * x.length), Math.floor(rand() * x.length)]) {
      const x0 = x[i];
      x[i] = x0 + h;
      const up = f64Loss(m, lora);
      x[i] = x0 - h;
      const down = f64Loss(m, lora);
      x[i] = x0;
      const fd = (up - down) / (2 * h);
      worst = Math.max(worst, Math.abs(g.values[i] - fd) / scale);
      expect(Math.abs(g.values[i] - fd), `${r.label}: ${g.name}[${i}]`).toBeLessThan(1e-4 * scale);
    }
  }
  return worst;
}

describe('the planned learning step in Chromium: float64 finite differences, a checkpoint, runs that learn', () => {
  it("the planned loss equals a float64 host forward's, and its gradients match float64 central differences of that loss (f32, int8, int4)", async () => {
    // The other tests' results, or (this test run alone) the case on each base on its own.
    const entries = fdResults.length === 1 + BASES.length ? fdResults : await fdAlone();
    const worst: Record<string, number> = {};
    for (const e of entries) worst[e.r.label] = expectF64FiniteDifferences(e);
    console.log('planned gradient vs float64 central differences, worst |g - fd| / max |g| of the variable:', worst);
  });

  it('a checkpoint at step 2 restored into a fresh run reproduces step 3 bit for bit on the planned path (rollouts, learning step, AdamW)', async () => {
    await loadFixture('ckpt-f32');
    try {
      const r = await lab.page.evaluate(
        (n) => (window.sparring!.engine as HarnessEngine).learnCheckpointCheck(n),
        'ckpt-f32',
      );
      expect(r.savedStep).toBe(2);
      expect(r.plannedMicroBatches).toBe(6); // 3 + 2 + 1 steps, one planned micro-batch each
      for (const mt of r.metrics) expect(mt['grad/skipped']).toBe(0);
      // The fresh run's own draw (another seed) was replaced by the checkpoint, and step 3 moved it.
      let moved = 0;
      r.resumed.forEach((v, i) => v.forEach((x, j) => (moved = Math.max(moved, Math.abs(x - r.restored[i][j])))));
      expect(moved).toBeGreaterThan(1e-4);
      expect(r.resumed).toEqual(r.straight);
      expect((await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).status())).gpuErrors).toEqual(
        [],
      );
    } finally {
      await unload('ckpt-f32');
    }
  });

  it("GRPO and PPO + GAE runs on the tiny fixture with the planned learning step raise the mean reward above 0.9 (src/rl/loop.test.ts's task)", async () => {
    // loop.test.ts's setups: reward 1 when the first sampled token is 23; 4 prompts x G 8, 2 new tokens.
    const RUNS: [string, RlLoopConfig, boolean][] = [
      [
        'GRPO (k3 KL loss)',
        {
          groupSize: 8,
          maxNewTokens: 2,
          temperature: 1,
          seed: 1234,
          advantage: 'grpo',
          trainer: { policyLoss: 'ppo', kl: { estimator: 'k3', coef: 0.001 } },
        },
        false,
      ],
      [
        'PPO + GAE (value head)',
        {
          groupSize: 8,
          maxNewTokens: 2,
          temperature: 1,
          seed: 1234,
          advantage: 'gae',
          trainer: { policyLoss: 'ppo', vfCoef: 0.5 },
        },
        true,
      ],
    ];
    const PROMPTS = [
      [1, 14, 5, 29],
      [1, 22, 58, 55],
      [1, 22, 29, 56],
      [1, 35, 37, 42],
    ];
    await loadFixture('run-f32');
    try {
      for (const [label, config, valueHead] of RUNS) {
        const c = { prompts: PROMPTS, target: 23, steps: 6, config, valueHead, lr: 1e-2 };
        const r = await lab.page.evaluate(([n, x]) => (window.sparring!.engine as HarnessEngine).learnRunCheck(n, x), [
          'run-f32',
          c,
        ] as const);
        console.log(`${label}: mean reward per step ${r.curve.join(', ')}`);
        expect(r.curve[0], label).toBeLessThan(0.3);
        expect(r.curve[r.curve.length - 1], label).toBeGreaterThan(0.9);
        expect(r.plannedMicroBatches, label).toBe(r.curve.length); // every update took the planned pass
      }
      expect((await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).status())).gpuErrors).toEqual(
        [],
      );
    } finally {
      await unload('run-f32');
    }
  });
});
