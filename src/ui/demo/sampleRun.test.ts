import { describe, expect, it } from 'vitest';
import { parseReportsJsonl } from '../../store/runStoreJsonl';
import { EXAMPLE_STEPS, pieces, sampleRun } from './sampleRun';

describe('recorded example run', () => {
  it('is deterministic, 30 steps, every metric group but dual/λ, and survives a JSONL round trip', () => {
    const a = sampleRun();
    expect(a).toHaveLength(EXAMPLE_STEPS);
    expect(JSON.stringify(sampleRun())).toBe(JSON.stringify(a));
    expect(a.map((r) => r.step)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
    for (const r of a) {
      for (const v of Object.values(r.metrics)) expect(Number.isFinite(v)).toBe(true);
      for (const s of r.samples)
        for (const m of s.messages) if (m.tokens) expect(m.tokens.pieces.join('')).toBe(m.text);
    }
    const back = parseReportsJsonl(a.map((r) => JSON.stringify(r)).join('\n'));
    expect(back).toEqual(a);
  });

  it('tells a training story: attack success falls, entropy falls, KL grows', () => {
    const a = sampleRun();
    const mean = (rs: typeof a, k: string) => rs.reduce((s, r) => s + r.metrics[k], 0) / rs.length;
    const first = a.slice(0, 5);
    const last = a.slice(-5);
    expect(mean(last, 'judge/asr')).toBeLessThan(mean(first, 'judge/asr'));
    expect(mean(last, 'entropy/mean')).toBeLessThan(mean(first, 'entropy/mean'));
    expect(mean(last, 'kl/mean')).toBeGreaterThan(mean(first, 'kl/mean'));
    expect(a.some((r) => r.samples.some((s) => s.verdict.success))).toBe(true);
    expect(a.some((r) => r.samples.some((s) => s.messages.length > 2))).toBe(true);
  });

  it('splits text into pieces that join back', () => {
    expect(pieces("I can't, sorry [ANSWER:12].")).toEqual([
      'I',
      " can't",
      ',',
      ' sorry',
      ' [',
      'ANSWER',
      ':',
      '12',
      ']',
      '.',
    ]);
  });
});
