// The storage format of a model's frozen projections, as a recipe names it: `f32` (dense),
// `int8` (one scale per output channel) or `int4-gN` (a scale per group of N input features).
// Embeddings, norms and biases stay float32; an untied LM head is a projection like the others.
// There is no f16 entry: the engine has no f16 weight path (shader-f16 is optional, see DESIGN).
// Pure (no tfjs): the page's fit check reads it; the loader hook is quant.ts's weightQuantizer.

export const WEIGHT_FORMATS = ['f32', 'int8', 'int4-g32', 'int4-g64', 'int4-g128'] as const;
export type WeightFormat = (typeof WEIGHT_FORMATS)[number];

export type WeightSpec = { kind: 'f32' } | { kind: 'int8' } | { kind: 'int4'; groupSize: number };

export function isWeightFormat(s: unknown): s is WeightFormat {
  return typeof s === 'string' && (WEIGHT_FORMATS as readonly string[]).includes(s);
}

/** What a format string means; an unknown one throws naming the formats. */
export function weightSpec(format: string): WeightSpec {
  if (!isWeightFormat(format)) throw new Error(`unknown weight format ${JSON.stringify(format)} (formats: ${WEIGHT_FORMATS.join(', ')})`);
  if (format === 'f32') return { kind: 'f32' };
  if (format === 'int8') return { kind: 'int8' };
  return { kind: 'int4', groupSize: Number(format.slice('int4-g'.length)) };
}

/** Bytes one [out, in] projection takes in `format` (packed words plus float32 scales). */
export function projectionBytes(format: WeightFormat, out: number, inp: number): number {
  const spec = weightSpec(format);
  switch (spec.kind) {
    case 'f32':
      return 4 * out * inp;
    case 'int8':
      return out * 4 * Math.ceil(inp / 4) + 4 * out;
    case 'int4':
      return out * 4 * Math.ceil(inp / 8) + 4 * out * Math.ceil(inp / spec.groupSize);
  }
}
