// The form's help names each field's veRL key and TRL name. "Export for veRL" in the browser: the current Run setup (typed in the form) downloads as a zip
// with the veRL config, reward.py, the parquet dataset (read back here with hyparquet) and the
// sandbox model.
import { strFromU8, unzipSync } from 'fflate';
import { parquetReadObjects } from 'hyparquet';
import { describe, expect, it } from 'vitest';
import { sharedLabPage } from './browser';

const lab = sharedLabPage('?backend=wasm');

describe('export for veRL', () => {
  it('zips the setup as a veRL job, form values and seed included', async () => {
    const { page } = lab;
    await page.waitForSelector('[data-testid="recipe-select"] option[value="redteam"]', {
      state: 'attached',
      timeout: 30_000,
    });
    await page.selectOption('[data-testid="recipe-select"]', 'redteam');
    expect(await page.textContent('[data-testid="field-aliases-groupSize"]')).toBe(
      ' (veRL actor_rollout_ref.rollout.n, TRL num_generations)',
    );
    await page.fill('[data-testid="field-groupSize"]', '12');
    await page.fill('[data-testid="field-klBeta"]', '0.03');
    await page.fill('[data-testid="run-seed"]', '5');
    const [d] = await Promise.all([
      page.waitForEvent('download', { timeout: 60_000 }),
      page.click('[data-testid="export-verl"]'),
    ]);
    expect(d.suggestedFilename()).toBe('sparring-redteam-verl.zip');
    const parts: Buffer[] = [];
    for await (const c of await d.createReadStream()) parts.push(c as Buffer);
    const files = unzipSync(new Uint8Array(Buffer.concat(parts)));
    const dir = 'sparring-redteam-verl/';
    expect(
      Object.keys(files)
        .map((f) => f.slice(dir.length))
        .sort(),
    ).toEqual(
      expect.arrayContaining([
        'README.md',
        'data/train.parquet',
        'reward.py',
        'run.sh',
        'trl_grpo.py',
        'verl_config.yaml',
        'models/defender/model.safetensors',
      ]),
    );
    const yaml = strFromU8(files[`${dir}verl_config.yaml`]);
    expect(yaml).toMatch(/\n {4}'n': 12\n/);
    expect(yaml).toMatch(/\n {4}kl_coef: 0\.03\n/);
    expect(JSON.parse(strFromU8(files[`${dir}sparring_export.json`]))).toMatchObject({
      recipe: 'redteam',
      seed: 5,
      config: { groupSize: 12 },
    });
    const pq = files[`${dir}data/train.parquet`];
    const rows = await parquetReadObjects({
      file: pq.buffer.slice(pq.byteOffset, pq.byteOffset + pq.byteLength) as ArrayBuffer,
    });
    expect(rows).toHaveLength(256);
    expect((rows[0] as { data_source: string }).data_source).toBe('sparring/redteam');
    // Every recipe exports (attacker-sft as an SFT job).
    await page.selectOption('[data-testid="recipe-select"]', 'attacker-sft');
    expect(await page.isDisabled('[data-testid="export-verl"]')).toBe(false);
  }, 120_000);
});
