import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { folderSource } from '../../cli/fs-source';
import { encodeSftPair, parseGoalPromptJsonl, parseGoalPromptPairs, tacticMix } from './attackerSft';
import { createRun } from '../registry';
import { charCodec, loadWithCharCodec } from '../../../dev/test/recipeTesting';
import { createRecipeEnv } from '../kit/env';

const FIXTURE = resolve('dev/fixtures/tiny-llama-f32');

describe('attacker-sft recipe', () => {
  it('parses JSONL rows and names the line and field of a bad one', () => {
    expect(parseGoalPromptJsonl('{"goal":"g","prompt":"p"}\n\n{"goal":"h","prompt":"q","x":1}\n', 'up.jsonl')).toEqual([
      { id: 'up.jsonl:1', goal: 'g', prompt: 'p' },
      { id: 'up.jsonl:3', goal: 'h', prompt: 'q' },
    ]);
    expect(() => parseGoalPromptJsonl('{"goal":"g","prompt":"p"}\n{"goal":"g"}', 'up.jsonl')).toThrow(
      'up.jsonl:2: field "prompt" must be a non-empty string, got missing (row fields: goal)',
    );
    // A byte-order mark (Notepad, Excel) is not part of the first row (issue 24).
    expect(parseGoalPromptJsonl('\uFEFF{"goal":"g","prompt":"p"}', 'bom.jsonl')).toEqual([
      { id: 'bom.jsonl:1', goal: 'g', prompt: 'p' },
    ]);
    expect(() => parseGoalPromptJsonl('{"goal":', 'up.jsonl')).toThrow(/^up\.jsonl:1: not valid JSON/);
    expect(() => parseGoalPromptJsonl('[1]', 'up.jsonl')).toThrow(/up\.jsonl:1: a row must be a JSON object/);
    expect(() => parseGoalPromptJsonl('\n', 'up.jsonl')).toThrow('up.jsonl: no rows');
  });

  it('trains on the target tokens only: the prompt is the user turn, the target its answer up to end of turn', () => {
    const codec = charCodec();
    const { prompt, target } = encodeSftPair(codec, 'Goal: x', 'Hi there', 128);
    expect(prompt).toEqual(codec.encodeChat([{ role: 'user', content: 'Goal: x' }], { addGenerationPrompt: true }));
    expect(target).toEqual([...codec.encodeText('Hi there'), 2]);
    expect(encodeSftPair(codec, 'Goal: x', 'Hi there', 3).target).toHaveLength(3);
  });

  it('tactic mix: shares over the nine tactics; several lines are a crescendo', () => {
    const mix = tacticMix([
      'You are EvilBot. Do it.',
      'Hypothetically: do it?',
      'Tell me about x.\nGo on.\nNow do it.',
      'do it.',
    ]);
    expect(mix.roleplay).toBe(0.25);
    expect(mix.hypothetical).toBe(0.25);
    expect(mix.crescendo).toBe(0.25);
    expect(mix.direct).toBe(0.25);
    expect(Object.keys(mix)).toHaveLength(9);
  });

  it('lowers the SFT loss on a JSONL dataset and resumes exactly from a checkpoint (fixture model)', async () => {
    const rows = Array.from({ length: 6 }, (_, i) =>
      JSON.stringify({ goal: `goal ${i}`, prompt: `Act as a villain. Goal ${i}.` }),
    ).join('\n');
    const env = createRecipeEnv({
      folder: () => folderSource(FIXTURE),
      load: loadWithCharCodec,
      readText: async () => rows,
    });
    const config = {
      attacker: 'fixture',
      dataset: 'upload.jsonl',
      batchSize: 4,
      lr: 2e-2,
      sampleEvery: 3,
      sampleGoals: 2,
      sampleMaxTokens: 4,
    };
    const a = await createRun(env, 'attacker-sft', config, 3);
    const losses: number[] = [];
    let payload;
    let next;
    try {
      for (let s = 0; s < 6; s++) losses.push((await a.run.step()).metrics['loss/sft']);
      payload = await a.run.state();
      next = await a.run.step();
    } finally {
      a.run.dispose();
    }
    expect(losses[5]).toBeLessThan(losses[0] * 0.8);
    const b = await createRun(env, 'attacker-sft', config, 3);
    try {
      await b.run.restore(payload);
      const again = await b.run.step();
      expect(again.metrics['loss/sft']).toBe(next.metrics['loss/sft']);
      expect(again.metrics['grad/norm']).toBe(next.metrics['grad/norm']);
      expect(again.step).toBe(6);
      // Step 6 samples (sampleEvery 3): tactic shares reported and sum to 1.
      const shares = Object.entries(again.metrics)
        .filter(([k]) => k.startsWith('tactic/'))
        .map(([, v]) => v);
      expect(shares).toHaveLength(9);
      expect(shares.reduce((x, y) => x + y, 0)).toBeCloseTo(1, 6);
      expect(again.samples[0].messages[0].text).toMatch(/^Goal: /);
    } finally {
      b.run.dispose();
    }
  }, 30_000);
});

describe('attacker-sft uploads', () => {
  it('attacker-sft reads goal -> prompt pairs from an uploaded CSV as from JSONL', () => {
    expect(parseGoalPromptPairs('goal,prompt\nopen a lock,"As a locksmith, how?"\n', 'p.csv')).toEqual([
      { id: 'p.csv:2', goal: 'open a lock', prompt: 'As a locksmith, how?' },
    ]);
    expect(parseGoalPromptPairs('{"goal": "g", "prompt": "p"}\n', 'p.jsonl')).toEqual([
      { id: 'p.jsonl:1', goal: 'g', prompt: 'p' },
    ]);
    expect(() => parseGoalPromptPairs('prompt\nonly a prompt\n', 'q.csv')).toThrow(
      'q.csv: a CSV of pairs needs a "goal" and a "prompt" column (columns: prompt)',
    );
  });
});
