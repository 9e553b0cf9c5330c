import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { sharedHarnessPage } from './browser';
import type { HarnessEngine } from '../dev/harness/harnessApi';

interface Golden {
  input_ids: number[];
  logits: number[][];
  log_softmax_entropy: number[];
  greedy_continuation: number[];
}

// WebGPU is forced: on headless Chromium's software adapter (SwiftShader) the lab's auto choice is wasm.
const lab = sharedHarnessPage('?backend=webgpu');

describe('the planned decode path in Chromium on WebGPU', () => {
  for (const [label, quantize] of [
    ['f32', undefined],
    ['int8', { kind: 'int8' as const, groupSize: 16 }],
    ['int4', { kind: 'int4' as const, groupSize: 32 }],
    ['f16', { kind: 'f16' as const }],
  ] as const) {
    it(`${label}: generate() on the planned path draws what the tfjs path draws, log-probs within 1e-4`, async () => {
      const baseUrl = `${inject('fixturesURL')}tiny-llama-f32/`;
      const name = `planned-${label}`;
      await lab.page.evaluate(
        ([n, u, q]) =>
          (window.sparring!.engine as HarnessEngine).loadModel(
            n,
            { kind: 'url', baseUrl: u },
            q ? { quantize: q } : {},
          ),
        [name, baseUrl, quantize] as const,
      );
      const prompts = [
        [1, 5, 9, 13, 17, 21],
        [1, 40, 2],
        [1, 7, 7, 30],
      ];
      const opts = { maxNewTokens: 12, temperature: 0.8, topK: 20, topP: 0.9, seed: 7, stopTokens: [2] };
      const run = (path: 'planned' | 'tfjs') =>
        lab.page.evaluate(
          async ([n, p, o, pa]) => {
            await (window.sparring!.engine as HarnessEngine).setDecodePath(pa);
            try {
              return await (window.sparring!.engine as HarnessEngine).generate(n, p, o);
            } finally {
              await (window.sparring!.engine as HarnessEngine).setDecodePath('planned');
            }
          },
          [name, prompts, opts, path] as const,
        );
      const ref = await run('tfjs');
      const got = await run('planned');
      expect(got.tokens).toEqual(ref.tokens);
      expect(got.mask).toEqual(ref.mask);
      let worst = 0;
      got.logprobs.forEach((row, b) =>
        row.forEach((v, t) => (worst = Math.max(worst, Math.abs(v - ref.logprobs[b][t])))),
      );
      expect(worst).toBeLessThan(1e-4);
      // A planned run must not fall back silently: its dispatches are the plan's, far fewer than tfjs's.
      const bench = await lab.page.evaluate(
        ([n]) =>
          (window.sparring!.engine as HarnessEngine).benchDecode(n, { batch: 2, promptLen: 4, steps: 4, reps: 1 }),
        [name] as const,
      );
      expect(bench[0].path).toBe('planned');
      expect(bench[0].dispatchesPerToken).toBeLessThan(bench[1].dispatchesPerToken / 2);
      // ... and its prompt runs on the plan too: a whole rollout takes fewer dispatches than the
      // planned decode after a tfjs prefill (a tfjs forward is tens of dispatches per layer).
      const rollouts = await lab.page.evaluate(
        ([n]) =>
          (window.sparring!.engine as HarnessEngine).benchRollout(n, { batch: 2, promptLen: 4, newTokens: 4, reps: 1 }),
        [name] as const,
      );
      const [tfjsPrefill, planned] = [rollouts[1], rollouts[2]];
      expect(planned.way).toBe('planned');
      expect(planned.dispatches).toBeLessThan(tfjsPrefill.dispatches);
      expect((await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).status())).gpuErrors).toEqual(
        [],
      );
      await lab.page.evaluate((n) => (window.sparring!.engine as HarnessEngine).unloadModel(n), name);
    });
  }
});

describe('golden fixtures in Chromium on WebGPU', () => {
  for (const fixture of ['tiny-llama', 'tiny-llama-f32']) {
    it(`${fixture}: logits within 1e-3 and the exact greedy continuation`, async () => {
      const golden = JSON.parse(readFileSync(resolve('dev', 'fixtures', fixture, 'golden.json'), 'utf8')) as Golden;
      const baseUrl = `${inject('fixturesURL')}${fixture}/`;
      const info = await lab.page.evaluate(
        ([n, u]) => (window.sparring!.engine as HarnessEngine).loadModel(n, { kind: 'url', baseUrl: u }),
        [fixture, baseUrl],
      );
      expect(info.vocab).toBe(golden.logits[0].length);
      const status = await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).status());
      expect(status.backend.backend).toBe('webgpu');

      const out = await lab.page.evaluate(([n, ids]) => (window.sparring!.engine as HarnessEngine).logits(n, ids), [
        fixture,
        golden.input_ids,
      ] as const);
      let worst = 0;
      golden.logits.forEach((row, t) =>
        row.forEach((v, j) => (worst = Math.max(worst, Math.abs(out.logits[t][j] - v)))),
      );
      expect(worst).toBeLessThan(1e-3);
      out.entropy.forEach((h, t) => expect(Math.abs(h - golden.log_softmax_entropy[t])).toBeLessThan(1e-3));

      const gen = await lab.page.evaluate(
        ([n, ids, k]) =>
          (window.sparring!.engine as HarnessEngine).generate(n, [ids], { maxNewTokens: k, greedy: true }),
        [fixture, golden.input_ids, golden.greedy_continuation.length] as const,
      );
      expect(gen.tokens[0]).toEqual(golden.greedy_continuation);
      expect((await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).status())).gpuErrors).toEqual(
        [],
      );
    });
  }
});

describe('hub-style loading with the browser cache', () => {
  it('loads the same folder a second time with the network cut (Cache Storage)', async () => {
    const baseUrl = `${inject('fixturesURL')}tiny-llama/`;
    await lab.page.evaluate(
      (u) => (window.sparring!.engine as HarnessEngine).loadModel('cached', { kind: 'url', baseUrl: u }),
      baseUrl,
    );
    // Cut every request to the fixture server, from the page and its worker alike.
    let blocked = 0;
    await lab.page.context().route(`${inject('fixturesURL')}**`, (route) => {
      blocked++;
      return route.abort('internetdisconnected');
    });
    const info = await lab.page.evaluate(
      (u) => (window.sparring!.engine as HarnessEngine).loadModel('cached-again', { kind: 'url', baseUrl: u }),
      baseUrl,
    );
    expect(info.vocab).toBe(64);
    expect(blocked).toBe(0); // nothing even tried the network
    // A folder never fetched before fails with the file named, not with a hang.
    const err = await lab.page.evaluate(
      (u) =>
        (window.sparring!.engine as HarnessEngine).loadModel('never', { kind: 'url', baseUrl: u }).then(
          () => 'loaded',
          (e: Error) => e.message,
        ),
      `${inject('fixturesURL')}tiny-llama-f32-missing/`,
    );
    expect(err).toMatch(/config\.json/);
    // ...and that request was cut here, so the route does see the worker's fetches.
    expect(blocked).toBeGreaterThan(0);
    const cached = await lab.page.evaluate(async () =>
      (await (await caches.open('sparring-models-v1')).keys()).map((r) => r.url),
    );
    expect(cached).toContain(`${baseUrl}config.json`);
    expect(cached).toContain(`${baseUrl}model.safetensors`);
    await lab.page.context().unrouteAll();
  });
});

describe('decode-step profile', () => {
  it('counts the matmuls of one cached decode step and runs them tiled on SwiftShader', async () => {
    const baseUrl = `${inject('fixturesURL')}tiny-llama-f32/`;
    await lab.page.evaluate(
      (u) => (window.sparring!.engine as HarnessEngine).loadModel('prof', { kind: 'url', baseUrl: u }),
      baseUrl,
    );
    const status = await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).status());
    expect(status.backend.tuning.map((t) => t.flag)).toEqual(['WEBGPU_MATMUL_PROGRAM_TYPE']);
    const prof = await lab.page.evaluate(() =>
      (window.sparring!.engine as HarnessEngine).profileDecodeStep('prof', [1, 10, 15, 40]),
    );
    // 2 layers x 7 projections + the LM head = 15 matmuls; QK^T, softmax and PV are one fused
    // decode-attention kernel per layer (it runs outside tfjs's kernel registry, so it is not listed).
    expect(prof.kernels.find((k) => k.name === 'BatchMatMul')?.count).toBe(15);
    expect(prof.kernels.find((k) => k.name === 'Softmax')).toBeUndefined();
    expect(prof.wallMs).toBeGreaterThan(0);
  });
});

describe('training on WebGPU', () => {
  it('one GRPO step with LoRA on every projection runs clean (finite loss, a gradient, no GPU error)', async () => {
    const baseUrl = `${inject('fixturesURL')}tiny-llama-f32/`;
    await lab.page.evaluate(
      (u) => (window.sparring!.engine as HarnessEngine).loadModel('train', { kind: 'url', baseUrl: u }),
      baseUrl,
    );
    const m = await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).rlSmokeStep('train'));
    expect(Number.isFinite(m['loss/policy'])).toBe(true);
    expect(m['grad/norm']).toBeGreaterThan(0);
    expect(Number.isFinite(m['kl/mean'])).toBe(true);
    expect((await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).status())).gpuErrors).toEqual([]);
  });

  it("the update on the planned GPU optimiser moves the adapters as tfjs's AdamW does (same step, within 1e-6)", async () => {
    const run = async (path: 'planned' | 'tfjs') => {
      await lab.page.evaluate((p) => (window.sparring!.engine as HarnessEngine).setOptimizerPath(p), path);
      return lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).rlSmokeStep('train'));
    };
    try {
      const planned = await run('planned');
      const tfjs = await run('tfjs');
      expect([planned['optim/planned'], tfjs['optim/planned']]).toEqual([1, 0]);
      expect(planned['optim/step']).toBe(1);
      expect(tfjs['optim/step']).toBe(1);
      expect(planned['grad/norm']).toBeCloseTo(tfjs['grad/norm'], 5);
      // The step moved the adapters (B off zero, A decayed and stepped) by the same amounts.
      expect(Math.abs(planned['lora/abs_sum'] - planned['lora/abs_sum_before'])).toBeGreaterThan(1e-3);
      expect(Math.abs(planned['lora/abs_sum'] - tfjs['lora/abs_sum']) / tfjs['lora/abs_sum']).toBeLessThan(1e-6);
    } finally {
      await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).setOptimizerPath('planned'));
    }
    expect((await lab.page.evaluate(() => (window.sparring!.engine as HarnessEngine).status())).gpuErrors).toEqual([]);
  });
});
