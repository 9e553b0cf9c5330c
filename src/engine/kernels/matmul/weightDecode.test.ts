import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { WEIGHTS_PER_WORD, WEIGHT_DECODE_WGSL } from './weightDecode';

const SHADERS = join(import.meta.dirname, '../../../../shaders');

describe('the weight formats decoded once in WGSL', () => {
  it("each packed kind's snippet declares its words' width and the decode functions the kernels call", () => {
    for (const [kind, src] of Object.entries(WEIGHT_DECODE_WGSL)) {
      const wpw = /const WPW : u32 = (\d+)u;/.exec(src);
      expect(wpw, kind).not.toBeNull();
      expect(Number(wpw![1]), kind).toBe(WEIGHTS_PER_WORD[kind as keyof typeof WEIGHTS_PER_WORD]);
      for (const fn of ['weightAt', 'weightsAt', 'weightRun4']) expect(src, `${kind} ${fn}`).toContain(`fn ${fn}(`);
    }
  });

  it('no other shader reads a format’s bits (unpack2x16float, nibble masks, byte sign shifts)', () => {
    const dirs = readdirSync(SHADERS);
    const offenders: string[] = [];
    for (const d of dirs)
      for (const f of readdirSync(join(SHADERS, d))) {
        if (!f.endsWith('.wgsl') || f.startsWith('weight_decode_')) continue;
        const src = readFileSync(join(SHADERS, d, f), 'utf8').replace(/\/\/.*$/gm, '');
        if (/unpack2x16float|& 15\b|& vec4<i32>\(15\)|>> (vec4<u32>\()?24u|extractBits/.test(src))
          offenders.push(`${d}/${f}`);
      }
    expect(offenders).toEqual([]);
  });

  it('no kernel builder in TypeScript writes a decode of its own', () => {
    const files = ['../../plan/decodeKernels.ts', '../../plan/learnKernels.ts', './quantMatmul.ts'];
    for (const f of files) {
      const src = readFileSync(join(import.meta.dirname, f), 'utf8').replace(/\/\/.*$/gm, '');
      expect(src, f).not.toMatch(/unpack2x16float|& 15\b|>> 24u|extractBits/);
    }
  });
});
