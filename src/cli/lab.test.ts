import { resolve } from 'node:path';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TSX = fileURLToPath(new URL('../../node_modules/.bin/tsx', import.meta.url));
const FIXTURES = resolve('dev/fixtures') + '/';

function lab(...args: string[]) {
  const r = spawnSync(TSX, ['--import', './src/cli/node/wgsl-register.mjs', 'src/cli/lab.ts', ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const golden = (dir: string) =>
  JSON.parse(readFileSync(`${FIXTURES}${dir}/golden.json`, 'utf8')) as {
    input_ids: number[];
    logits: number[][];
    log_softmax_entropy: number[];
    greedy_continuation: number[];
  };

describe('npm run lab', () => {
  it('split --json lists both sides of the evaluation split; they share no template, benign task or QA pair', () => {
    const r = lab('split', '--seed', '2', '--json');
    expect(r.code).toBe(0);
    type Side = {
      goals: { template: string }[];
      benign: { task: string }[];
      qa: { story: string; question: string }[];
    };
    const out = JSON.parse(r.stdout) as { seed: number; splitSeed: number; train: Side; eval: Side; shared: unknown };
    expect([out.seed, out.splitSeed]).toEqual([2, 20261124]);
    expect([out.train.goals.length, out.eval.goals.length]).toEqual([44, 25]);
    const trainT = new Set(out.train.goals.map((g) => g.template));
    expect(out.eval.goals.filter((g) => trainT.has(g.template))).toEqual([]);
    const trainB = new Set(out.train.benign.map((t) => t.task));
    expect(out.eval.benign.filter((t) => trainB.has(t.task))).toEqual([]);
    const trainQ = new Set(out.train.qa.map((q) => `${q.story}|${q.question}`));
    expect(out.eval.qa.filter((q) => trainQ.has(`${q.story}|${q.question}`))).toEqual([]);
    expect(out.shared).toEqual({ templates: [], benign: [], qa: [] });
    // Without --json: sizes, template ids and shared counts only.
    const brief = JSON.parse(lab('split', '--seed', '2').stdout) as { eval: { templates: string[] }; shared: unknown };
    expect(brief.eval.templates).toHaveLength(8);
    expect(brief.shared).toEqual({ templates: 0, benign: 0, qa: 0 });
  });

  it('logits prints golden-matching logits and entropy per position', () => {
    const g = golden('tiny-llama');
    const r = lab('logits', '--model', `${FIXTURES}tiny-llama`, '--ids', g.input_ids.join(','));
    expect(r.code).toBe(0);
    // What it ran on, on stderr (stdout stays one line of JSON).
    expect(r.stderr).toMatch(/^lab logits: backend wasm \(SIMD, 1 thread: tfjs-wasm's Node build is single-threaded/);
    expect(r.stderr.split('\n').filter(Boolean)).toHaveLength(1);
    const out = JSON.parse(r.stdout) as { logits: number[][]; entropy: number[] };
    expect(out.logits).toHaveLength(g.input_ids.length);
    let err = 0;
    out.logits.forEach((row, i) => row.forEach((v, j) => (err = Math.max(err, Math.abs(v - g.logits[i][j])))));
    expect(err).toBeLessThan(1e-3);
    out.entropy.forEach((h, i) => expect(Math.abs(h - g.log_softmax_entropy[i])).toBeLessThan(1e-3));
  });

  it('--backend cpu runs on tfjs-cpu and says so; the logits are the golden ones there too', () => {
    const g = golden('tiny-llama-f32');
    const r = lab('logits', '--model', `${FIXTURES}tiny-llama-f32`, '--ids', g.input_ids.join(','), '--backend', 'cpu');
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('lab logits: backend cpu\n');
    const out = JSON.parse(r.stdout) as { logits: number[][] };
    let err = 0;
    out.logits.forEach((row, i) => row.forEach((v, j) => (err = Math.max(err, Math.abs(v - g.logits[i][j])))));
    expect(err).toBeLessThan(1e-3);
  });

  it('generate --greedy prints the golden continuation', () => {
    const g = golden('tiny-llama-f32');
    const r = lab(
      'generate',
      '--model',
      `${FIXTURES}tiny-llama-f32`,
      '--ids',
      g.input_ids.join(','),
      '--max-new-tokens',
      '10',
      '--greedy',
    );
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(g.greedy_continuation);
  });

  it('--vulkan and --kernels name their values, and need --backend webgpu', () => {
    const g = golden('tiny-llama');
    const base = ['logits', '--model', `${FIXTURES}tiny-llama`, '--ids', g.input_ids.join(',')];
    const badDriver = lab(...base, '--backend', 'webgpu', '--vulkan', 'mesa');
    expect(badDriver.code).toBe(2);
    expect(badDriver.stderr).toMatch(/--vulkan must be swiftshader, lavapipe, system, got "mesa"/);
    const noWebgpu = lab(...base, '--kernels', 'gpu');
    expect(noWebgpu.code).toBe(2);
    expect(noWebgpu.stderr).toMatch(/--kernels needs --backend webgpu/);
  });

  it('bad folder, bad ids and unknown commands fail with a message on stderr', () => {
    const missing = lab('logits', '--model', '/definitely/not/here', '--ids', '1,2');
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toMatch(/\/definitely\/not\/here does not exist/);
    expect(missing.stdout).toBe('');
    const badIds = lab('generate', '--model', `${FIXTURES}tiny-llama`, '--ids', '1,a,3');
    expect(badIds.code).not.toBe(0);
    expect(badIds.stderr).toMatch(/--ids .*"1,a,3"/);
    const outOfVocab = lab('logits', '--model', `${FIXTURES}tiny-llama`, '--ids', '1,640');
    expect(outOfVocab.code).not.toBe(0);
    expect(outOfVocab.stderr).toMatch(/token id 640/);
    const noConfig = lab('logits', '--model', ROOT + 'src', '--ids', '1');
    expect(noConfig.code).not.toBe(0);
    expect(noConfig.stderr).toMatch(/config\.json: not found/);
    const unknown = lab('frobnicate');
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toMatch(/unknown command "frobnicate"/);
  });
});
