import { describe, expect, it } from 'vitest';
import { LEARN_BENCH_HEADER, learnBenchRows, parseLearnCase, type LearnBenchRow } from './learnBench';

describe('learn benchmark table', () => {
  it('reads a case PxGxN+T and refuses anything else by name', () => {
    expect(parseLearnCase('8x8x64+64')).toEqual({ prompts: 8, groupSize: 8, promptLen: 64, newTokens: 64, rank: 16 });
    expect(parseLearnCase(' 2x8x16+8 ')).toEqual({ prompts: 2, groupSize: 8, promptLen: 16, newTokens: 8, rank: 16 });
    expect(() => parseLearnCase('8x8x64')).toThrow(/--learn-shape.*"8x8x64"/);
    expect(() => parseLearnCase('0x8x64+64')).toThrow(/--learn-shape/);
  });

  it('GFLOP/s from the step FLOPs and the median ms, percent of the roofline, peak in MiB, the ratios', () => {
    const base = { tokens: 512, dispatches: 0, submits: 0, buffersCreated: 0, readbacks: 0, hostMs: 0, flops: 3e9 };
    const r: LearnBenchRow[] = [
      { ...base, path: 'planned', ms: 500, peakBytes: 64 * 2 ** 20 },
      { ...base, path: 'tfjs', ms: 2000, peakBytes: 256 * 2 ** 20 },
    ];
    const rows = learnBenchRows('m', 'f32', r, 12, 60);
    // 3e9 FLOPs in 0.5 s = 6 GFLOP/s = 50% of 12 and 10% of a 60 GFLOP/s peak; in 2 s = 1.5 =
    // 12.5% and 2.5%. 512 tokens / 0.5 s = 1024 tok/s.
    expect(rows[0].slice(2, 9)).toEqual(['planned', 500, 1024, 6, '50.0%', '10.0%', 64]);
    expect(rows[1].slice(2, 9)).toEqual(['tfjs', 2000, 256, 1.5, '12.5%', '2.5%', 256]);
    expect(rows[2].slice(2, 9)).toEqual(['tfjs / planned', 4, '', '', '', '', 4]);
    expect(learnBenchRows('m', 'f32', r)[0].slice(6, 8)).toEqual(['-', '-']);
    for (const row of rows) expect(row).toHaveLength(LEARN_BENCH_HEADER.length);
  });
});
