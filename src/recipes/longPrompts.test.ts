// Bounded prompts (issue 40), through the paths a user takes: a JSONL upload with one 60 MB prompt
// sat at step 0 for minutes at 4.5 GB; four ~100 KB prompts passed the fit check and the run died
// with `Invalid typed array length: 253435698176`. Now the upload is refused by line or cut as the
// user chooses, the longest prompt is reported, and a prompt that still does not fit the model's
// context is refused by generate before any allocation, naming both numbers.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-wasm';
import { beforeAll, describe, expect, it } from 'vitest';
import { nodeRecipeEnv } from '../cli/recipe-env';
import { DatasetError } from '../contract/datasetLoaders';
import { MAX_PROMPT_CHARS, PromptLengthError } from '../contract/promptBounds';
import { readPromptSet } from '../contract/promptSets';
import { uploadPromptFile } from '../ui/controls/uploadDataset';
import { createRun } from './registry';
import { letterJudge, loadWithCharCodec } from '../../dev/test/recipeTesting';

const FIXTURE = resolve('dev/fixtures/tiny-llama-f32');
const env = nodeRecipeEnv({
  modelsDir: resolve(FIXTURE, '..'),
  load: loadWithCharCodec,
  judges: { letters: letterJudge },
});
const dir = mkdtempSync(join(tmpdir(), 'long-prompts-'));
const cfg = (dataset: string) => ({
  defender: 'tiny-llama-f32',
  judge: 'letters',
  dataset,
  prompts: 2,
  groupSize: 2,
  maxNewTokens: 6,
  samples: 0,
  earlyStop: false,
  skipZeroAdvantageGroups: false,
});
/** Four ~100 KB prompts, as the issue's upload had. */
const hundredKb = Array.from({ length: 4 }, (_, i) => JSON.stringify({ prompt: `${'abcd '.repeat(20_000)}${i}` })).join(
  '\n',
);

beforeAll(async () => {
  await tf.setBackend('wasm');
});

describe('bounded prompts', () => {
  it('one 60 MB prompt is refused by its line (or cut), and the longest prompt is reported', () => {
    const huge = `{"prompt":"${'x'.repeat(60_000_000)}"}\n{"prompt":"fine"}`;
    const set = readPromptSet(huge, 'big.jsonl');
    expect(set.rows.map((r) => r.line)).toEqual([2]);
    expect(set.skipped).toEqual([
      {
        line: 1,
        field: 'prompt',
        problem: `prompt of 60,000,000 characters is over the 16,384-character limit (shorten it, or upload it with "cut long prompts")`,
      },
    ]);
    expect(set.longest).toEqual({ chars: 60_000_000, line: 1 });
    const cut = readPromptSet(huge, 'big.jsonl', {}, { maxChars: MAX_PROMPT_CHARS, long: 'keep-start' });
    expect(cut.rows[0].prompt).toBe('x'.repeat(MAX_PROMPT_CHARS));
    expect(cut.cut).toBe(1);
    // A file of nothing but over-long prompts is refused whole, naming the first line.
    expect(() => readPromptSet(hundredKb, 'four.jsonl')).toThrow(DatasetError);
    expect(() => readPromptSet(hundredKb, 'four.jsonl')).toThrow(/four\.jsonl line 1, field 'prompt': no usable row/);
  });

  it('the 100 KB upload cut to 60 characters (keeping the end) trains a step; uncut it is refused before allocation', async () => {
    const stored: string[] = [];
    const { note } = await uploadPromptFile(
      { name: 'four.jsonl', text: async () => hundredKb },
      async (n, t, rows) => (stored.push(t), { ref: `upload:${n}`, rows, bytes: t.length }),
      {},
      { maxChars: 60, long: 'keep-end' },
    );
    expect(note).toBe('longest prompt: 100,001 characters (line 1); 4 prompt(s) cut to 60 characters, keeping the end');
    const rows = stored[0]
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { prompt: string });
    expect(rows.map((r) => r.prompt)).toEqual([0, 1, 2, 3].map((i) => `${'abcd '.repeat(20_000)}${i}`.slice(-60)));
    writeFileSync(join(dir, 'cut.jsonl'), stored[0]);
    const a = await createRun(env, 'redteam', cfg(join(dir, 'cut.jsonl')), 1);
    try {
      const r = await a.run.step();
      expect(r.step).toBe(0);
      expect(Number.isFinite(r.metrics['reward/mean'])).toBe(true);
    } finally {
      a.run.dispose();
    }
    // Under the character limit but over the model's 256-token context: refused by generate.
    writeFileSync(
      join(dir, 'long.jsonl'),
      [0, 1, 2, 3].map((i) => JSON.stringify({ prompt: `${'word '.repeat(600)}${i}` })).join('\n'),
    );
    // (A prompt budget over the context, so the context check is what refuses it.)
    const b = await createRun(env, 'redteam', { ...cfg(join(dir, 'long.jsonl')), maxPromptLength: 4096 }, 1);
    try {
      const before = tf.memory().numBytes;
      const e = await b.run.step().then(
        () => null,
        (err: unknown) => err,
      );
      expect(e).toBeInstanceOf(PromptLengthError);
      expect((e as Error).message).toMatch(
        /^prompt \d+ is 3,\d{3} tokens; with 6 new tokens it needs 3,\d{3} positions, over the model's context of 256 \(max_position_embeddings\)/,
      );
      expect(tf.memory().numBytes - before).toBeLessThan(1 << 20);
    } finally {
      b.run.dispose();
    }
  }, 120_000);
});
