import { describe, expect, it } from 'vitest';
import { hoistEnableDirectives, installDirectiveHoist, judgeSubgroupLayout } from './gpuFeatures';
import { subgroupLevels } from '../kernels/row-reduce/rowReduce';

describe('hoistEnableDirectives', () => {
  it('moves enable lines from the middle of tfjs-prefixed code to the top, once each', () => {
    const code = [
      'var<private> localId: vec3<u32>;',
      'enable subgroups;',
      'fn a() {}',
      '  enable  subgroups ;',
      'enable f16;',
      'fn main() {}',
    ].join('\n');
    const out = hoistEnableDirectives(code);
    const lines = out.split('\n');
    expect(lines.slice(0, 2)).toEqual(['enable subgroups;', 'enable f16;']);
    expect(lines.filter((l) => /enable/.test(l))).toHaveLength(2);
    // Everything else is kept, in order.
    expect(lines.filter((l) => l.trim() !== '').slice(2)).toEqual([
      'var<private> localId: vec3<u32>;',
      'fn a() {}',
      'fn main() {}',
    ]);
  });

  it('leaves code without directives, and identifiers that merely contain "enable", untouched', () => {
    const code = 'let enabled = 1;\n// enable subgroups when present\nfn main() {}';
    expect(hoistEnableDirectives(code)).toBe(code);
  });
});

describe('installDirectiveHoist', () => {
  it('routes shader code through the hoist, once, and reports a device that refuses the wrapper', () => {
    const seen: string[] = [];
    const device = { createShaderModule: (d: { code: string }) => (seen.push(d.code), {}) } as unknown as GPUDevice;
    expect(installDirectiveHoist(device)).toBe(true);
    expect(installDirectiveHoist(device)).toBe(true);
    device.createShaderModule({ code: 'fn a() {}\nenable subgroups;' });
    expect(seen).toEqual(['enable subgroups;\nfn a() {}\n']);
    const frozen = Object.freeze({ createShaderModule: () => ({}) }) as unknown as GPUDevice;
    expect(installDirectiveHoist(frozen)).toBe(false);
  });
});

/** Probe triples (size, first index of the subgroup, rank) for 256 threads in subgroups given by groupOf. */
function triples(groupOf: (tid: number) => number): Uint32Array {
  const members = new Map<number, number[]>();
  for (let t = 0; t < 256; t++) members.set(groupOf(t), [...(members.get(groupOf(t)) ?? []), t]);
  const v = new Uint32Array(256 * 3);
  for (const m of members.values()) m.forEach((t, rank) => v.set([m.length, Math.min(...m), rank], t * 3));
  return v;
}

describe('judgeSubgroupLayout', () => {
  it('accepts consecutive, aligned subgroups (32 lanes, as on NVIDIA)', () => {
    expect(
      judgeSubgroupLayout(
        triples((t) => Math.floor(t / 32)),
        32,
      ),
    ).toEqual({ contiguous: true, sizes: [32], minSize: 32 });
  });
  it('rejects interleaved subgroups (thread t in subgroup t mod 8), which tid / size would mis-slot', () => {
    expect(
      judgeSubgroupLayout(
        triples((t) => t % 8),
        32,
      ).contiguous,
    ).toBe(false);
  });
  it('rejects mixed sizes and plans for the smallest', () => {
    const l = judgeSubgroupLayout(
      triples((t) => (t < 128 ? Math.floor(t / 64) : 2 + Math.floor((t - 128) / 16))),
      16,
    );
    expect(l.contiguous).toBe(false);
    expect(l.sizes).toEqual([16, 64]);
    expect(l.minSize).toBe(16);
  });
  it('never plans below the WebGPU minimum subgroup size of 4', () => {
    expect(judgeSubgroupLayout(triples((t) => Math.floor(t / 4))).minSize).toBe(4);
  });
});

describe('subgroupLevels', () => {
  it('is the fewest merge levels with minSize^levels >= workgroup size', () => {
    expect(subgroupLevels(256, 32)).toBe(2); // 32 -> 8 -> 1
    expect(subgroupLevels(32, 32)).toBe(1);
    expect(subgroupLevels(256, 4)).toBe(4); // 4^4 = 256
    expect(subgroupLevels(32, 4)).toBe(3); // 4^3 = 64 >= 32
    expect(subgroupLevels(64, 64)).toBe(1);
  });
});
