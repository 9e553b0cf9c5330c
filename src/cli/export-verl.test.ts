import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exportVerlMain } from './export-verl.ts';

async function run(...argv: string[]) {
  let stderr = '';
  const code = await exportVerlMain(argv, { stderr: (s) => (stderr += s) });
  return { code, stderr };
}

describe('lab export-verl', () => {
  it('writes the job folder, with the sandbox model it trains and the aliased settings', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'export-verl-')), 'job');
    const r = await run('--recipe', 'defend', '--set', 'actor_rollout_ref.rollout.n=8', '--set', 'learning_rate=1e-4', '--seed', '3', '--steps', '20', '--models', 'public/models', '--out', out);
    expect(r.stderr).not.toMatch(/lab export-verl:/);
    expect(r.code).toBe(0);
    for (const f of ['verl_config.yaml', 'reward.py', 'data/train.parquet', 'data/val.parquet', 'run.sh', 'README.md', 'trl_grpo.py', 'models/defender/config.json']) expect(existsSync(join(out, f)), f).toBe(true);
    const yaml = readFileSync(join(out, 'verl_config.yaml'), 'utf8');
    expect(yaml).toMatch(/\n {4}n: 8\n/);
    expect(yaml).toMatch(/\n {6}lr: 0\.0001\n/);
    expect(yaml).toMatch(/total_training_steps: 20\n/);
    expect(JSON.parse(readFileSync(join(out, 'sparring_export.json'), 'utf8'))).toMatchObject({ recipe: 'defend', seed: 3, config: { groupSize: 8, lr: 1e-4 } });
  });

  it('bad input fails before writing, naming the field or flag', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'export-verl-')), 'job');
    const bad = await run('--recipe', 'redteam', '--set', 'num_generations=1', '--out', dir);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/field "groupSize" must be an integer in \[2, 64\], got "1"/);
    expect(existsSync(dir)).toBe(false);
    expect((await run('--recipe', 'redteam')).stderr).toMatch(/--out DIR is required/);
    expect((await run('--recipe', 'nope', '--out', dir)).stderr).toMatch(/unknown recipe "nope"/);
  });
});
