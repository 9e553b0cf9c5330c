// A small typed config-schema system for recipes. A schema is a plain record of field specs
// (JSON-safe, so the worker can post it and the UI can render a form from it); validateConfig
// fills defaults, coerces the strings that forms, URLs and `--set field=value` produce, and
// returns one message per invalid field (the UI marks the field; the CLI prints them all).
//
//   const schema = { groupSize: int(8, 'G: samples per prompt', { min: 2, max: 64 }) } satisfies Schema;
//   type Config = ConfigOf<typeof schema>;          // { groupSize: number }
//   const r = validateConfig(schema, { groupSize: '16' });  // r.ok, r.config.groupSize === 16

import { brief } from './brief';

export type FieldType = 'number' | 'integer' | 'boolean' | 'enum' | 'string';

interface FieldBase {
  /** One line shown under the form field and in `--help`: what it does, its source default. */
  help: string;
  /** Short label for forms (default: the field name). */
  label?: string;
}

export interface NumberField extends FieldBase {
  type: 'number' | 'integer';
  default: number;
  /** Inclusive bounds. */
  min?: number;
  max?: number;
}

export interface BooleanField extends FieldBase {
  type: 'boolean';
  default: boolean;
}

export interface EnumField<O extends string = string> extends FieldBase {
  type: 'enum';
  default: O;
  options: readonly O[];
}

export interface StringField extends FieldBase {
  type: 'string';
  default: string;
  /** Reject the empty string. Default false. */
  nonEmpty?: boolean;
}

export type Field = NumberField | BooleanField | EnumField | StringField;
export type Schema = Record<string, Field>;

/** The config record a schema describes. */
export type ConfigOf<S extends Schema> = {
  [K in keyof S]: S[K] extends EnumField<infer O>
    ? O
    : S[K] extends NumberField
      ? number
      : S[K] extends BooleanField
        ? boolean
        : string;
};

// ---------------------------------------------------------------- field builders (typed literals)

export function num(dflt: number, help: string, range: { min?: number; max?: number } = {}): NumberField {
  return { type: 'number', default: dflt, help, ...range };
}
export function int(dflt: number, help: string, range: { min?: number; max?: number } = {}): NumberField {
  return { type: 'integer', default: dflt, help, ...range };
}
export function bool(dflt: boolean, help: string): BooleanField {
  return { type: 'boolean', default: dflt, help };
}
export function oneOf<const O extends string>(options: readonly O[], dflt: NoInfer<O>, help: string): EnumField<O> {
  return { type: 'enum', default: dflt, options, help };
}
export function str(dflt: string, help: string, opts: { nonEmpty?: boolean } = {}): StringField {
  return { type: 'string', default: dflt, help, ...opts };
}

// ---------------------------------------------------------------- validation

export interface ValidationResult<C> {
  ok: boolean;
  /** Defaults filled in; an invalid field keeps its default here (so a form can still render). */
  config: C;
  /** Field name -> message (empty when ok). Unknown input keys are reported under their own name. */
  errors: Record<string, string>;
}

export class ConfigError extends Error {
  readonly errors: Record<string, string>;
  constructor(context: string, errors: Record<string, string>) {
    super(`${context}: ${Object.values(errors).join('; ')}`);
    this.name = 'ConfigError';
    this.errors = errors;
  }
}

/** The allowed values of a field in words: "an integer in [2, 64]", "one of grpo, rloo". */
export function describeAllowed(f: Field): string {
  switch (f.type) {
    case 'number':
    case 'integer': {
      const what = f.type === 'integer' ? 'an integer' : 'a number';
      if (f.min !== undefined && f.max !== undefined) return `${what} in [${f.min}, ${f.max}]`;
      if (f.min !== undefined) return `${what} >= ${f.min}`;
      if (f.max !== undefined) return `${what} <= ${f.max}`;
      return f.type === 'integer' ? 'an integer' : 'a finite number';
    }
    case 'boolean':
      return 'true or false';
    case 'enum':
      return `one of ${f.options.join(', ')}`;
    case 'string':
      return f.nonEmpty ? 'a non-empty string' : 'a string';
  }
}

/** Check one value (strings are coerced for non-string fields). Returns the value or an error message. */
export function validateField(name: string, f: Field, raw: unknown): { value: unknown } | { error: string } {
  const bad = () => ({ error: `field "${name}" must be ${describeAllowed(f)}, got ${brief(raw)}` });
  switch (f.type) {
    case 'number':
    case 'integer': {
      let x: number;
      if (typeof raw === 'number') x = raw;
      else if (typeof raw === 'string' && raw.trim() !== '') x = Number(raw.trim());
      else return bad();
      if (!Number.isFinite(x)) return bad();
      // A safe integer only: 1e29 is an integer to JS but counts nothing exactly (steps=1e29 started a run).
      if (f.type === 'integer' && !Number.isSafeInteger(x)) return bad();
      if (f.min !== undefined && x < f.min) return bad();
      if (f.max !== undefined && x > f.max) return bad();
      return { value: x };
    }
    case 'boolean': {
      if (typeof raw === 'boolean') return { value: raw };
      if (typeof raw === 'string') {
        const s = raw.trim().toLowerCase();
        if (s === 'true' || s === '1' || s === 'yes' || s === 'on') return { value: true };
        if (s === 'false' || s === '0' || s === 'no' || s === 'off') return { value: false };
      }
      return bad();
    }
    case 'enum':
      return typeof raw === 'string' && (f.options as readonly string[]).includes(raw.trim())
        ? { value: raw.trim() }
        : bad();
    case 'string':
      if (typeof raw !== 'string') return bad();
      if (f.nonEmpty && raw.trim() === '') return bad();
      return { value: raw };
  }
}

/** The schema's defaults as a config record. */
export function defaultConfig<S extends Schema>(schema: S): ConfigOf<S> {
  const out: Record<string, unknown> = {};
  for (const [k, f] of Object.entries(schema)) out[k] = f.default;
  return out as ConfigOf<S>;
}

/**
 * Fill defaults and check every field. `input` may hold typed values or strings (coerced);
 * undefined means "use the default". Keys the schema does not know are errors.
 */
export function validateConfig<S extends Schema>(
  schema: S,
  input: Record<string, unknown> = {},
): ValidationResult<ConfigOf<S>> {
  const config: Record<string, unknown> = defaultConfig(schema);
  const errors: Record<string, string> = {};
  for (const [k, v] of Object.entries(input)) {
    if (v === undefined) continue;
    const f = Object.hasOwn(schema, k) ? schema[k] : undefined;
    if (!f) {
      errors[k] = `unknown field "${k}" (fields: ${Object.keys(schema).join(', ')})`;
      continue;
    }
    const r = validateField(k, f, v);
    if ('error' in r) errors[k] = r.error;
    else config[k] = r.value;
  }
  return { ok: Object.keys(errors).length === 0, config: config as ConfigOf<S>, errors };
}

/** validateConfig, throwing a ConfigError that lists every invalid field. */
export function parseConfig<S extends Schema>(
  schema: S,
  input: Record<string, unknown> = {},
  context = 'config',
): ConfigOf<S> {
  const r = validateConfig(schema, input);
  if (!r.ok) throw new ConfigError(context, r.errors);
  return r.config;
}

/** One help line per field: `name  type = default  (allowed)  help [also]`; `also(name)` adds other names. */
export function describeSchema(schema: Schema, also: (field: string) => string = () => ''): string[] {
  const w = Math.max(0, ...Object.keys(schema).map((k) => k.length));
  return Object.entries(schema).map(([k, f]) => {
    const more = also(k);
    return `${k.padEnd(w)}  ${f.type} = ${JSON.stringify(f.default)}  (${describeAllowed(f)})  ${f.help}${more ? `  [${more}]` : ''}`;
  });
}
