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
  it('logits prints golden-matching logits and entropy per position', () => {
    const g = golden('tiny-llama');
    const r = lab('logits', '--model', `${FIXTURES}tiny-llama`, '--ids', g.input_ids.join(','));
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { logits: number[][]; entropy: number[] };
    expect(out.logits).toHaveLength(g.input_ids.length);
    let err = 0;
    out.logits.forEach((row, i) => row.forEach((v, j) => (err = Math.max(err, Math.abs(v - g.logits[i][j])))));
    expect(err).toBeLessThan(1e-3);
    out.entropy.forEach((h, i) => expect(Math.abs(h - g.log_softmax_entropy[i])).toBeLessThan(1e-3));
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
