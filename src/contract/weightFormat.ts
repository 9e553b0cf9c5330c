// The storage format of a model's frozen projections, as a recipe names it: `f32` (dense),
// `f16` (IEEE halves packed two per 32-bit word, read with WGSL's core unpack2x16float, so no
// shader-f16 feature is needed; arithmetic stays float32), `int8` (one scale per output channel)
// or `int4-gN` (a scale per group of N input features).
// Embeddings, norms and biases stay float32; an untied LM head is a projection like the others.
// Pure (no tfjs): the page's fit check reads it; the loader hook is quant.ts's weightQuantizer.

export const WEIGHT_FORMATS = ['f32', 'f16', 'int8', 'int4-g32', 'int4-g64', 'int4-g128'] as const;
export type WeightFormat = (typeof WEIGHT_FORMATS)[number];

export type WeightSpec = { kind: 'f32' } | { kind: 'f16' } | { kind: 'int8' } | { kind: 'int4'; groupSize: number };

/** A format without its group size: what the loader's packed weights and the kernels switch on. */
export type WeightKind = WeightSpec['kind'];

export function isWeightFormat(s: unknown): s is WeightFormat {
  return typeof s === 'string' && (WEIGHT_FORMATS as readonly string[]).includes(s);
}

/** What a format string means; an unknown one throws naming the formats. */
export function weightSpec(format: string): WeightSpec {
  if (!isWeightFormat(format))
    throw new Error(`unknown weight format ${JSON.stringify(format)} (formats: ${WEIGHT_FORMATS.join(', ')})`);
  if (format === 'f32') return { kind: 'f32' };
  if (format === 'f16') return { kind: 'f16' };
  if (format === 'int8') return { kind: 'int8' };
  return { kind: 'int4', groupSize: Number(format.slice('int4-g'.length)) };
}

/** Bytes one [out, in] projection takes in `format` (packed words plus float32 scales). */
export function projectionBytes(format: WeightFormat, out: number, inp: number): number {
  const spec = weightSpec(format);
  switch (spec.kind) {
    case 'f32':
      return 4 * out * inp;
    case 'f16':
      // Two halves per word, plus a unit float32 scale per row (the packed kernels' scale binding).
      return out * 4 * Math.ceil(inp / 2) + 4 * out;
    case 'int8':
      return out * 4 * Math.ceil(inp / 4) + 4 * out;
    case 'int4':
      return out * 4 * Math.ceil(inp / 8) + 4 * out * Math.ceil(inp / spec.groupSize);
  }
}
