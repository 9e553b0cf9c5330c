// The weight format of each model field: `<model>Weights` next to `<model>` in every schema (so
// the form, the setup URL and `--set defenderWeights=int4-g32` take it like any field), and the
// checks that a checkpoint or a frozen adapter was trained on a base in the same format.
import { WEIGHT_FORMATS, type WeightFormat } from './weightFormat';
import { oneOf, type EnumField } from './schema';

/** The weights field of a model field: `defender` -> `defenderWeights`. */
export const weightsFieldOf = (modelField: string): string => `${modelField}Weights`;

export function weightsField(model: string): EnumField<WeightFormat> {
  return oneOf(
    WEIGHT_FORMATS,
    'f32',
    `storage of the ${model} model's frozen projections: f32, f16 (halves, float32 arithmetic), int8 (a scale per output channel), int4-gN (a scale per N inputs); the LoRA adapter stays float32`,
  );
}

/** The model fields of a config that have a weights field, each with its format. */
export function weightFormatsOf(config: Record<string, unknown>): Record<string, WeightFormat> {
  const out: Record<string, WeightFormat> = {};
  for (const [k, v] of Object.entries(config)) {
    if (k.endsWith('Weights') && (WEIGHT_FORMATS as readonly unknown[]).includes(v))
      out[k.slice(0, -'Weights'.length)] = v as WeightFormat;
  }
  return out;
}

/**
 * Throws when a saved config's format for `model` differs from `format`. A config saved before
 * weights fields existed had float32 bases, so an absent field reads as f32.
 */
export function checkSavedWeights(
  saved: Record<string, unknown>,
  model: string,
  format: WeightFormat,
  where: string,
): void {
  const field = weightsFieldOf(model);
  const was = saved[field] ?? 'f32';
  if (was !== format) {
    throw new Error(
      `${where}: the ${model} model was ${JSON.stringify(was)} when saved (field "${field}"), this run loads it as ${JSON.stringify(format)}; ` +
        `an adapter trained on one base does not compute the same function on the other: set ${field}=${String(was)}`,
    );
  }
}
