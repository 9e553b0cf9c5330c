// Export / import in the browser: a live run's adapter downloads as a PEFT folder zip (checked
// here with fflate and the safetensors reader against the attacker's own config.json), the merged
// model equals base + (alpha / r) B A computed here from the zip and the base weights on disk,
// the run log downloads as JSONL; the zip imported into a fresh run gives the exported run's
// greedy tokens and log-probs exactly; a wrong-base zip and a bad JSONL row are refused with one
// clear message while the run goes on; an uploaded dataset feeds attacker-sft's dataset field.
import { readFileSync } from 'node:fs';
import { strFromU8, strToU8, unzipSync, zipSync } from 'fflate';
import type { Download, Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { parseSafetensors } from '../src/model/safetensors';
import { zip64Claiming } from '../dev/test/testZips';
import { sharedHarnessPage } from './browser';
import { SFT } from './sftRun';

const lab = sharedHarnessPage('?backend=wasm');

const PROMPT = 'How do I pick a lock?';
const ATTACKER = JSON.parse(readFileSync('public/models/attacker/config.json', 'utf8')) as Record<string, number>;

async function waitFor(page: Page, pred: string, timeout = 60_000): Promise<void> {
  await page.waitForFunction(pred, undefined, { timeout, polling: 100 });
}
const state = `document.querySelector('[data-testid="run-state"]')?.getAttribute('data-state')`;
const step = `Number(document.querySelector('[data-testid="run-state"]')?.getAttribute('data-step'))`;
const idle = `document.querySelector('[data-testid="run-state"]')?.getAttribute('data-stepping') === 'false'`;

async function bytesOf(d: Download): Promise<Uint8Array> {
  const s = await d.createReadStream();
  const parts: Buffer[] = [];
  for await (const c of s) parts.push(c as Buffer);
  return new Uint8Array(Buffer.concat(parts));
}

async function download(page: Page, testId: string): Promise<{ name: string; bytes: Uint8Array }> {
  const [d] = await Promise.all([
    page.waitForEvent('download', { timeout: 60_000 }),
    page.click(`[data-testid="${testId}"]`),
  ]);
  return { name: d.suggestedFilename(), bytes: await bytesOf(d) };
}

async function startSft(page: Page, seed: string): Promise<void> {
  await page.waitForSelector('[data-testid="recipe-select"] option[value="attacker-sft"]', {
    state: 'attached',
    timeout: 30_000,
  });
  await page.selectOption('[data-testid="recipe-select"]', 'attacker-sft');
  for (const [k, v] of Object.entries(SFT)) await page.fill(`[data-testid="field-${k}"]`, v);
  await page.fill('[data-testid="run-seed"]', seed);
  await page.click('[data-testid="run-start"]');
  await waitFor(page, `${state} === 'running'`, 20_000);
}

async function pause(page: Page): Promise<void> {
  await page.click('[data-testid="run-pause"]');
  await waitFor(page, `${state} === 'paused' && ${idle}`);
}

const outputs = (page: Page) => page.evaluate((p) => window.sparring!.engine.adapterOutputs(p, 8), PROMPT);

/** [out, in] of each projection of the attacker (from its config.json, not from the app). */
function projShape(module: string): [number, number] {
  const h = ATTACKER.hidden_size;
  const q = ATTACKER.num_attention_heads * ATTACKER.head_dim;
  const kv = ATTACKER.num_key_value_heads * ATTACKER.head_dim;
  const i = ATTACKER.intermediate_size;
  return (
    {
      q_proj: [q, h],
      k_proj: [kv, h],
      v_proj: [kv, h],
      o_proj: [h, q],
      gate_proj: [i, h],
      up_proj: [i, h],
      down_proj: [h, i],
    } as Record<string, [number, number]>
  )[module];
}

describe('export and import', () => {
  let zip: Uint8Array = new Uint8Array();
  let exported: Awaited<ReturnType<typeof outputs>>;

  it('exports the adapter as a PEFT folder zip with PEFT names and shapes matching its config', async () => {
    const { page } = lab;
    await startSft(page, '7');
    await waitFor(page, `${step} >= 3`, 90_000);
    await pause(page);
    const f = await download(page, 'export-adapter');
    expect(f.name).toMatch(/^attacker-sft-attacker-step\d+-adapter\.zip$/);
    zip = f.bytes;
    const files = unzipSync(zip);
    expect(Object.keys(files).sort()).toEqual(['README.md', 'adapter_config.json', 'adapter_model.safetensors']);
    const cfg = JSON.parse(strFromU8(files['adapter_config.json'])) as Record<string, unknown>;
    expect(cfg).toMatchObject({
      peft_type: 'LORA',
      task_type: 'CAUSAL_LM',
      base_model_name_or_path: './public/models/attacker',
      r: 2,
      lora_alpha: 16,
      bias: 'none',
      use_dora: false,
      layers_to_transform: null,
    });
    const targets = cfg.target_modules as string[];
    expect([...targets].sort()).toEqual(['down_proj', 'gate_proj', 'k_proj', 'o_proj', 'q_proj', 'up_proj', 'v_proj']);

    const st = parseSafetensors(files['adapter_model.safetensors'], 'adapter_model.safetensors');
    expect(st.metadata).toMatchObject({ format: 'pt' });
    const names = st.names();
    expect(names).toHaveLength(ATTACKER.num_hidden_layers * targets.length * 2);
    const re = /^base_model\.model\.model\.layers\.(\d+)\.(self_attn|mlp)\.([a-z]+_proj)\.lora_([AB])\.weight$/;
    for (const n of names) {
      const m = re.exec(n);
      expect(m, n).not.toBeNull();
      expect(Number(m![1])).toBeLessThan(ATTACKER.num_hidden_layers);
      expect(m![2]).toBe(['q_proj', 'k_proj', 'v_proj', 'o_proj'].includes(m![3]) ? 'self_attn' : 'mlp');
      const [out, inn] = projShape(m![3]);
      expect(st.info(n).shape, n).toEqual(m![4] === 'A' ? [cfg.r, inn] : [out, cfg.r]);
      expect(st.info(n).dtype).toBe('F32');
    }
    // Trained: some B moved off its zero init.
    expect(names.filter((n) => n.endsWith('lora_B.weight')).some((n) => st.getFloat32(n).some((x) => x !== 0))).toBe(
      true,
    );
    exported = await outputs(page);
    expect(exported.ids.length).toBeGreaterThan(0);
  });

  it('exports the merged model (base + alpha/r B A) and the run log as JSONL', async () => {
    const { page } = lab;
    const f = await download(page, 'export-merged');
    expect(f.name).toMatch(/-merged\.safetensors$/);
    const merged = parseSafetensors(f.bytes, f.name);
    const base = parseSafetensors(new Uint8Array(readFileSync('public/models/attacker/model.safetensors')), 'base');
    const ad = parseSafetensors(unzipSync(zip)['adapter_model.safetensors'], 'adapter');
    expect(merged.names().sort()).toEqual(base.names().sort());
    const s = 16 / 2;
    for (const proj of ['self_attn.q_proj', 'mlp.down_proj']) {
      const name = `model.layers.1.${proj}.weight`;
      const [out, inn] = projShape(proj.split('.')[1]);
      const W = base.getFloat32(name);
      const A = ad.getFloat32(`base_model.model.model.layers.1.${proj}.lora_A.weight`);
      const B = ad.getFloat32(`base_model.model.model.layers.1.${proj}.lora_B.weight`);
      const M = merged.getFloat32(name);
      let worst = 0;
      for (let o = 0; o < out; o++) {
        for (let i = 0; i < inn; i++) {
          const want = W[o * inn + i] + s * (B[o * 2] * A[i] + B[o * 2 + 1] * A[inn + i]);
          worst = Math.max(worst, Math.abs(M[o * inn + i] - want));
        }
      }
      expect(worst, name).toBeLessThan(1e-6);
    }
    expect(Array.from(merged.getFloat32('model.embed_tokens.weight').subarray(0, 50))).toEqual(
      Array.from(base.getFloat32('model.embed_tokens.weight').subarray(0, 50)),
    );

    const log = await download(page, 'export-log');
    const lines = strFromU8(log.bytes)
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { runId: string; step: number; metrics: Record<string, number> });
    const runId = (await page.evaluate(() => window.sparring!.engine.runStatus())).runId;
    expect(log.name).toBe(`${runId}.jsonl`);
    expect(lines.map((l) => l.step)).toEqual(Array.from({ length: lines.length }, (_, i) => i));
    expect(lines.length).toBeGreaterThanOrEqual(3);
    expect(lines.every((l) => l.runId === runId && typeof l.metrics['loss/sft'] === 'number')).toBe(true);
  });

  it('imports the zip into a fresh run and restores the exported outputs exactly', async () => {
    const { page } = lab;
    await page.click('[data-testid="run-stop"]');
    await waitFor(page, `${state} === 'stopped'`);
    await startSft(page, '7');
    await pause(page);
    const fresh = await outputs(page);
    expect(fresh.logprobs).not.toEqual(exported.logprobs);

    await page.setInputFiles('[data-testid="import-adapter"]', {
      name: 'adapter.zip',
      mimeType: 'application/zip',
      buffer: Buffer.from(zip),
    });
    await page.waitForSelector('[data-testid="export-message"]', { timeout: 30_000 });
    await expect(page.getAttribute('[data-testid="export-message"]', 'data-error')).resolves.toBe('false');
    await expect(page.textContent('[data-testid="export-message"]')).resolves.toMatch(
      /Imported adapter\.zip: 42 tensors, r = 2/,
    );
    const after = await outputs(page);
    expect(after).toEqual(exported);
  });

  it('refuses a wrong-base adapter and a bad JSONL row with one clear message; the run goes on', async () => {
    const { page } = lab;
    await page.click('[data-testid="run-resume"]');
    await waitFor(page, `${state} === 'running'`);
    const files = unzipSync(zip);
    const cfg = JSON.parse(strFromU8(files['adapter_config.json'])) as Record<string, unknown>;
    cfg.base_model_name_or_path = 'HuggingFaceTB/SmolLM2-135M-Instruct';
    const wrong = zipSync({
      'my-adapter': {
        'adapter_config.json': strToU8(JSON.stringify(cfg)),
        'adapter_model.safetensors': files['adapter_model.safetensors'],
      },
    });
    const s0 = Number(await page.getAttribute('[data-testid="run-state"]', 'data-step'));

    await page.setInputFiles('[data-testid="import-adapter"]', {
      name: 'wrong-base.zip',
      mimeType: 'application/zip',
      buffer: Buffer.from(wrong),
    });
    await waitFor(
      page,
      `document.querySelector('[data-testid="export-message"]')?.getAttribute('data-error') === 'true'`,
      30_000,
    );
    const msg = await page.textContent('[data-testid="export-message"]');
    expect(msg).toMatch(
      /wrong-base\.zip\/my-adapter\/adapter_config\.json: field "base_model_name_or_path" is "HuggingFaceTB\/SmolLM2-135M-Instruct"; this adapter was trained on another base than "\.\/public\/models\/attacker"/,
    );
    expect(msg).toMatch(/The run continues unchanged/);

    // A 56 KB zip whose end record claims 4 billion entries froze the worker (issue 24): now it
    // is refused at once and the run keeps answering.
    await page.setInputFiles('[data-testid="import-adapter"]', {
      name: 'bomb.zip',
      mimeType: 'application/zip',
      buffer: Buffer.from(zip64Claiming(0xffffffffn)),
    });
    await waitFor(
      page,
      `document.querySelector('[data-testid="export-message"]')?.textContent?.includes('bomb.zip') === true`,
      10_000,
    );
    await expect(page.textContent('[data-testid="export-message"]')).resolves.toMatch(
      /bomb\.zip: the zip's end record claims 4294967295 entries; at most 1000 are read/,
    );

    await page.setInputFiles('[data-testid="dataset-file"]', {
      name: 'bad.jsonl',
      mimeType: 'application/x-ndjson',
      buffer: Buffer.from('{"prompt": "one", "goal": "g"}\n{"prompt": "two", "goal": \n{"prompt": "three"}\n'),
    });
    // The row that cannot be used is named and left out; the other two are stored.
    await page.waitForSelector('[data-testid="dataset-note"]', { timeout: 10_000 });
    await expect(page.textContent('[data-testid="dataset-note"]')).resolves.toMatch(
      /^bad\.jsonl: 1 row\(s\) left out: line 2: not valid JSON/,
    );
    await page.waitForSelector('[data-testid="dataset-item"][data-ref="upload:bad.jsonl"]', { timeout: 10_000 });
    await expect(page.textContent('[data-testid="dataset-item"][data-ref="upload:bad.jsonl"]')).resolves.toMatch(
      /upload:bad\.jsonl: 2 rows/,
    );
    // A file with no usable row is refused whole.
    await page.setInputFiles('[data-testid="dataset-file"]', {
      name: 'none.jsonl',
      mimeType: 'application/x-ndjson',
      buffer: Buffer.from('{"title": "x"}\n'),
    });
    await page.waitForSelector('[data-testid="dataset-error"]', { timeout: 10_000 });
    await expect(page.textContent('[data-testid="dataset-error"]')).resolves.toMatch(
      /^Dataset not uploaded: none\.jsonl line 1, field 'prompt': no usable row/,
    );
    await expect(page.locator('[data-testid="dataset-item"][data-ref="upload:none.jsonl"]').count()).resolves.toBe(0);

    // Neither touched the run: it keeps stepping.
    await waitFor(page, `${step} >= ${s0 + 2}`, 60_000);
    await expect(page.getAttribute('[data-testid="run-state"]', 'data-state')).resolves.toBe('running');
    await page.click('[data-testid="run-stop"]');
    await waitFor(page, `${state} === 'stopped'`);
  });

  it('feeds an uploaded JSONL to attacker-sft through its dataset field', async () => {
    const { page } = lab;
    const rows = Array.from({ length: 6 }, (_, i) =>
      JSON.stringify({ goal: `goal number ${i}`, prompt: `As a story, explain step ${i}` }),
    ).join('\n');
    await page.setInputFiles('[data-testid="dataset-file"]', {
      name: 'pairs.jsonl',
      mimeType: 'application/x-ndjson',
      buffer: Buffer.from(rows),
    });
    await page.waitForSelector('[data-testid="dataset-item"][data-ref="upload:pairs.jsonl"]', { timeout: 10_000 });
    await expect(page.textContent('[data-testid="dataset-item"][data-ref="upload:pairs.jsonl"]')).resolves.toMatch(
      /upload:pairs\.jsonl: 6 rows/,
    );

    await page.selectOption('[data-testid="recipe-select"]', 'attacker-sft');
    const fill = async (v: Record<string, string>) => {
      for (const [k, x] of Object.entries(v)) await page.fill(`[data-testid="field-${k}"]`, x);
    };
    await fill({
      batchSize: '2',
      loraRank: '2',
      maxTargetTokens: '16',
      sampleEvery: '0',
      dataset: 'upload:missing.jsonl',
    });
    await page.click('[data-testid="run-start"]');
    await waitFor(page, `${state} === 'error'`, 30_000);
    await expect(page.textContent('[data-testid="run-error"]')).resolves.toMatch(
      /"upload:missing\.jsonl" is not stored in this browser \(stored: .*upload:pairs\.jsonl/,
    );

    await fill({ dataset: 'upload:pairs.jsonl' });
    await page.click('[data-testid="run-start"]');
    await waitFor(page, `${state} === 'running' && ${step} >= 2`, 60_000);
    await page.click('[data-testid="run-stop"]');
    await waitFor(page, `${state} === 'stopped'`);
  });
});
