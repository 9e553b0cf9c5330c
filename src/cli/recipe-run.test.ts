import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkpointFromJson } from '../recipes/kit/checkpointFile';
import { letterJudge, loadWithCharCodec } from '../../dev/test/recipeTesting';
import type { StepReport } from '../contract/report';
import { nodeRecipeEnv } from './recipe-env';
import { parseRecipeArgs, recipeMain } from './recipe-run';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TSX = fileURLToPath(new URL('../../node_modules/.bin/tsx', import.meta.url));
const FIXTURES = resolve('dev/fixtures') + '/';
const HAVE_MODELS = existsSync(join(ROOT, 'public/models/defender/model.safetensors'));

async function run(...argv: string[]) {
  let stderr = '';
  let stdout = '';
  const env = nodeRecipeEnv({
    modelsDir: FIXTURES,
    load: loadWithCharCodec,
    judges: { letters: letterJudge },
    backend: 'cpu',
  });
  const code = await recipeMain(argv, { env, stderr: (s) => (stderr += s), stdout: (s) => (stdout += s) });
  return { code, stderr, stdout };
}

describe('lab --recipe', () => {
  it('parses flags, repeated --set and --no-early-stop', () => {
    const a = parseRecipeArgs([
      '--recipe',
      'redteam',
      '--steps',
      '3',
      '--seed=7',
      '--set',
      'groupSize=4',
      '--set',
      'lr=0.01',
      '--model',
      'x',
      '--no-early-stop',
    ]);
    expect(a).toMatchObject({
      recipe: 'redteam',
      steps: 3,
      seed: 7,
      sets: { groupSize: '4', lr: '0.01' },
      model: 'x',
      earlyStop: false,
    });
  });

  it("--learn-path picks the learning step's path on webgpu and is refused elsewhere or misspelt", async () => {
    expect(parseRecipeArgs(['--recipe', 'redteam', '--backend', 'webgpu', '--learn-path', 'planned'])).toMatchObject({
      backend: 'webgpu',
      learnPath: 'planned',
    });
    expect(() => parseRecipeArgs(['--recipe', 'redteam', '--learn-path', 'fast'])).toThrow(
      /--learn-path must be planned or tfjs/,
    );
    const r = await run('--recipe', 'redteam', '--steps', '1', '--learn-path', 'planned');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--learn-path needs --backend webgpu/);
  });

  it('--vulkan and --kernels pick the driver and kernel variants on webgpu; --swiftshader is --vulkan swiftshader', async () => {
    expect(
      parseRecipeArgs(['--recipe', 'redteam', '--backend', 'webgpu', '--vulkan', 'lavapipe', '--kernels', 'gpu']),
    ).toMatchObject({ vulkan: 'lavapipe', kernels: 'gpu' });
    expect(parseRecipeArgs(['--recipe', 'redteam', '--backend', 'webgpu', '--swiftshader'])).toMatchObject({
      vulkan: 'swiftshader',
    });
    expect(() => parseRecipeArgs(['--recipe', 'redteam', '--kernels', 'fast'])).toThrow(
      /--kernels must be auto, gpu, software, got "fast"/,
    );
    expect(() => parseRecipeArgs(['--recipe', 'redteam', '--swiftshader', '--vulkan', 'lavapipe'])).toThrow(
      /--swiftshader contradicts --vulkan lavapipe/,
    );
    const r = await run('--recipe', 'redteam', '--steps', '1', '--vulkan', 'lavapipe');
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--vulkan needs --backend webgpu/);
  });

  it('bad recipe names, fields, values and flags fail before loading anything, with exit code 2', async () => {
    const bad = await run('--recipe', 'redtem', '--steps', '1');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/unknown recipe "redtem" \(recipes: redteam, attacker-sft/);
    const field = await run('--recipe', 'redteam', '--set', 'groupSize=1', '--set', 'nope=3');
    expect(field.code).toBe(2);
    expect(field.stderr).toMatch(/field "groupSize" must be an integer in \[2, 64\], got "1"/);
    expect(field.stderr).toMatch(/unknown field "nope"/);
    expect((await run('--recipe', 'redteam', '--steps', '0')).stderr).toMatch(
      /--steps must be a positive integer, got "0"/,
    );
    expect((await run('--recipe', 'redteam', '--frob')).stderr).toMatch(/unknown flag --frob/);
    expect((await run('--recipe', 'redteam', '--set', 'groupSize')).stderr).toMatch(/--set needs field=value/);
  });

  it('--help lists the recipe fields with defaults and ranges; --list the recipes', async () => {
    const h = await run('--recipe', 'redteam', '--help');
    expect(h.code).toBe(0);
    expect(h.stdout).toMatch(/groupSize\s+integer = 8 {2}\(an integer in \[2, 64\]\)/);
    const l = await run('--list');
    expect(l.stdout).toMatch(/redteam .*Tinker/);
    expect(l.stdout).toMatch(/attacker-sft .*MTSA/);
  });

  it('--max-prompt-length and --truncation set the prompt budget: error names the row, left cuts and runs', async () => {
    expect(parseRecipeArgs(['--truncation', 'middle', '--max-prompt-length=64'])).toMatchObject({
      sets: { truncation: 'middle', maxPromptLength: '64' },
    });
    expect(() => parseRecipeArgs(['--truncation', 'start'])).toThrow(
      '--truncation must be error, left, right, middle, got "start"',
    );
    expect(() => parseRecipeArgs(['--max-prompt-length', '0'])).toThrow(
      /--max-prompt-length must be a positive integer/,
    );
    expect((await run('--help')).stdout).toMatch(/--truncation T +a prompt over the budget \(veRL data\.truncation\)/);
    const dir = mkdtempSync(join(tmpdir(), 'lab-budget-'));
    const data = join(dir, 'p.jsonl');
    writeFileSync(
      data,
      ['a short one', 'x'.repeat(100), 'also short'].map((prompt) => JSON.stringify({ prompt })).join('\n'),
    );
    const base = [
      '--recipe',
      'redteam',
      '--steps',
      '1',
      '--seed',
      '3',
      '--model',
      'tiny-llama-f32',
      '--max-prompt-length',
      '40',
    ];
    const sets = ['judge=letters', 'prompts=3', 'groupSize=2', 'maxNewTokens=4', `dataset=${data}`].flatMap((s) => [
      '--set',
      s,
    ]);
    const refused = await run(...base, ...sets, '--truncation', 'error', '--out', join(dir, 'a.jsonl'));
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(
      /p\.jsonl line 2: prompt is \d+ tokens with the chat template, over the prompt budget of 40/,
    );
    const cut = await run(...base, ...sets, '--truncation', 'left', '--out', join(dir, 'b.jsonl'));
    expect(cut.stderr).not.toMatch(/prompt budget/);
    expect(cut.code).toBe(0);
  }, 60_000);

  it('a re-run refuses an existing --out without --force; --resume FILE continues the run, appending to its log', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lab-recipe-'));
    const out = join(dir, 'r.jsonl');
    const ckpt = join(dir, 'r.json');
    const args = (s: string) => s.split(' ');
    const base = args(
      '--model tiny-llama-f32 --set judge=letters --set prompts=2 --set groupSize=2 --set maxNewTokens=4',
    );
    const first = await run(
      ...args('--recipe redteam --steps 2 --seed 3 --no-early-stop --out'),
      out,
      '--save-checkpoint',
      ckpt,
      ...base,
    );
    expect(first.code).toBe(0);
    // A line after the checkpoint (a run killed after its save) is dropped when the run resumes.
    writeFileSync(out, readFileSync(out, 'utf8') + JSON.stringify({ step: 2, extra: true }) + '\n');
    const again = await run(...args('--recipe redteam --steps 2 --seed 3 --out'), out, ...base);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain(
      `--out ${out} exists: pass --force to overwrite it, or --resume a checkpoint to append to it`,
    );
    const resumed = await run('--resume', ckpt, ...args('--steps 2 --no-early-stop --model tiny-llama-f32 --out'), out);
    expect(resumed.stderr).not.toMatch(/lab --recipe:/);
    expect(resumed.code).toBe(0);
    expect(resumed.stderr).toMatch(/\[redteam\] seed 3, 2 steps from step 2 \(/);
    const steps = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as StepReport);
    expect(steps.map((l) => [l.step, l.recipe])).toEqual([0, 1, 2, 3].map((k) => [k, 'redteam']));
    const forced = await run(...args('--recipe redteam --steps 1 --seed 3 --force --out'), out, ...base);
    expect(forced.code).toBe(0);
    expect(readFileSync(out, 'utf8').trim().split('\n')).toHaveLength(1);
  }, 60_000);

  it('runs a recipe, one StepReport per JSONL line and a summary per step on stderr', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'lab-recipe-')), 'runs/redteam.jsonl');
    const r = await run(
      '--recipe',
      'redteam',
      '--steps',
      '2',
      '--seed',
      '3',
      '--out',
      out,
      '--model',
      'tiny-llama-f32',
      '--set',
      'judge=letters',
      '--set',
      'prompts=2',
      '--set',
      'groupSize=2',
      '--set',
      'maxNewTokens=4',
      '--no-early-stop',
    );
    expect(r.stderr).not.toMatch(/lab --recipe:/);
    expect(r.code).toBe(0);
    const lines = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as StepReport);
    expect(lines.map((l) => l.step)).toEqual([0, 1]);
    expect(lines[1].recipe).toBe('redteam');
    expect(r.stderr).toMatch(/\[redteam\] step 1 {2}reward\/mean \S+ {2}judge\/asr/);
  }, 20_000);

  it("--save-checkpoint writes the final checkpoint, which reads back with the run's step, config and adapter", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lab-recipe-'));
    const file = join(dir, 'ck/redteam.json');
    const r = await run(
      '--recipe',
      'redteam',
      '--steps',
      '2',
      '--seed',
      '3',
      '--model',
      'tiny-llama-f32',
      '--save-checkpoint',
      file,
      '--set',
      'judge=letters',
      '--set',
      'prompts=2',
      '--set',
      'groupSize=2',
      '--set',
      'maxNewTokens=4',
      '--set',
      'lr=0.05',
      '--no-early-stop',
    );
    expect(r.stderr).not.toMatch(/lab --recipe:/);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/checkpoint after 2 steps -> .*redteam\.json/);
    const p = checkpointFromJson(readFileSync(file, 'utf8'), file);
    expect(p).toMatchObject({ recipe: 'redteam', seed: 3, step: 2, config: { loraRank: 8, groupSize: 2 } });
    expect(p.optimizer.state.step).toBe(2);
    expect(p.tensors.some((t) => t.name.endsWith('lora_B.weight') && t.data.some((x) => x !== 0))).toBe(true);
    expect((await run('--recipe', 'redteam', '--save-checkpoint')).stderr).toMatch(/--save-checkpoint needs a value/);
  }, 20_000);

  it("--set takes veRL keys and TRL names; --metric-names verl writes veRL's metric names", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'lab-recipe-'));
    const file = join(dir, 'ck.json');
    const out = join(dir, 'run.jsonl');
    const r = await run(
      '--recipe',
      'redteam',
      '--steps',
      '1',
      '--seed',
      '3',
      '--model',
      'tiny-llama-f32',
      '--save-checkpoint',
      file,
      '--out',
      out,
      '--metric-names',
      'verl',
      '--set',
      'judge=letters',
      '--set',
      'data.train_batch_size=2',
      '--set',
      'actor_rollout_ref.rollout.n=3',
      '--set',
      'lora_r=4',
      '--set',
      'scale_rewards=group',
      '--set',
      'maxNewTokens=4',
      '--no-early-stop',
    );
    expect(r.stderr).not.toMatch(/lab --recipe:/);
    expect(checkpointFromJson(readFileSync(file, 'utf8'), file).config).toMatchObject({
      prompts: 2,
      groupSize: 3,
      loraRank: 4,
      normAdvByStd: true,
    });
    const rep = JSON.parse(readFileSync(out, 'utf8').trim()) as StepReport;
    expect(Object.keys(rep.metrics)).toEqual(
      expect.arrayContaining([
        'critic/score/mean',
        'actor/pg_loss',
        'actor/grad_norm',
        'response_length/mean',
        'timing_s/step',
      ]),
    );
    expect(rep.metrics['reward/mean']).toBeUndefined();
    expect(rep.metrics['timing_s/step']).toBeCloseTo(rep.timings.total_ms / 1000, 1);
    const twice = await run('--recipe', 'redteam', '--set', 'groupSize=4', '--set', 'num_generations=8');
    expect(twice.code).toBe(2);
    expect(twice.stderr).toMatch(/field "groupSize" is set twice: as "groupSize" and as "num_generations"/);
    const h = await run('--recipe', 'redteam', '--help');
    expect(h.stdout).toMatch(/groupSize .*\[veRL actor_rollout_ref\.rollout\.n, TRL num_generations\]/);
  }, 20_000);

  it.skipIf(!HAVE_MODELS)(
    `npm run lab -- --recipe runs on the sandbox models${HAVE_MODELS ? '' : ' (skipped: public/models does not exist yet)'}`,
    () => {
      const out = join(mkdtempSync(join(tmpdir(), 'lab-recipe-')), 'sft.jsonl');
      const r = spawnSync(
        TSX,
        [
          '--import',
          './src/cli/node/wgsl-register.mjs',
          'src/cli/lab.ts',
          '--recipe',
          'attacker-sft',
          '--steps',
          '1',
          '--seed',
          '1',
          '--out',
          out,
          '--backend',
          'cpu',
          '--set',
          'batchSize=2',
          '--set',
          'sampleGoals=2',
          '--set',
          'sampleMaxTokens=8',
        ],
        { cwd: ROOT, encoding: 'utf8', timeout: 25_000 },
      );
      expect(r.stderr).toMatch(/\[attacker-sft\] step 0 {2}loss\/sft \d/);
      expect(r.status).toBe(0);
      const rep = JSON.parse(readFileSync(out, 'utf8').trim()) as StepReport;
      expect(rep.metrics['loss/sft']).toBeGreaterThan(0);
      expect(rep.samples).toHaveLength(2);
      const bad = spawnSync(
        TSX,
        ['--import', './src/cli/node/wgsl-register.mjs', 'src/cli/lab.ts', '--recipe', 'nope'],
        { cwd: ROOT, encoding: 'utf8', timeout: 25_000 },
      );
      expect(bad.status).toBe(2);
      expect(bad.stderr).toMatch(/unknown recipe "nope"/);
    },
    30_000,
  );
});
