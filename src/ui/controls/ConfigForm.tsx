// A config form generated from a recipe schema (plain JSON from the worker): one input per field
// with its default, allowed range and one-line help; invalid fields carry their message. Model
// fields get a model picker, the judge a list of known judges; models, judge and algorithm come
// first, in their own sections.
import { aliasNote } from '../../contract/aliases';
import { describeAllowed, type Field, type Schema } from '../../contract/schema';
import type { FormValues } from '../../store/setupUrl';
import { fieldKind, KNOWN_JUDGES, type FieldKind } from './fieldKinds';
import { DatasetPicker } from './DatasetPicker';
import { ModelPicker } from './ModelPicker';
import './setup.css';

export { formDefaults, type FormValues } from '../../store/setupUrl';

interface InputProps {
  name: string;
  field: Field;
  value: string | boolean;
  invalid: boolean;
  disabled: boolean;
  onChange(v: string | boolean): void;
}

function FieldInput({ name, field, value, invalid, disabled, onChange }: InputProps) {
  const common = {
    id: `field-${name}`,
    'data-testid': `field-${name}`,
    'aria-invalid': invalid,
    'aria-describedby': `field-${name}-help`,
    disabled,
  };
  switch (field.type) {
    case 'boolean':
      return (
        <input {...common} type="checkbox" checked={value === true} onChange={(e) => onChange(e.target.checked)} />
      );
    case 'enum': {
      const known = (field.options as readonly string[]).includes(String(value));
      return (
        <select {...common} value={String(value)} onChange={(e) => onChange(e.target.value)}>
          {/* A value from a link that is not an option stays visible (and marked) until changed. */}
          {!known && <option value={String(value)}>{String(value)} (not an option)</option>}
          {field.options.map((o) => (
            <option key={o} value={o}>
              {o}
            </option>
          ))}
        </select>
      );
    }
    case 'number':
    case 'integer':
      return (
        <input
          {...common}
          type="text"
          inputMode={field.type === 'integer' ? 'numeric' : 'decimal'}
          value={String(value)}
          placeholder={String(field.default)}
          onChange={(e) => onChange(e.target.value)}
        />
      );
    case 'string':
      return (
        <input
          {...common}
          type="text"
          value={String(value)}
          placeholder={field.default}
          onChange={(e) => onChange(e.target.value)}
        />
      );
  }
}

/** The judge: one of the env's judges, or any name typed (an env may provide more). */
function JudgeInput({ name, value, invalid, disabled, onChange }: InputProps) {
  return (
    <div className="judge-input">
      <select
        data-testid={`judge-pick-${name}`}
        value={(KNOWN_JUDGES as readonly string[]).includes(String(value)) ? String(value) : ''}
        disabled={disabled}
        aria-label="known judges"
        onChange={(e) => e.target.value && onChange(e.target.value)}
      >
        <option value="">other…</option>
        {KNOWN_JUDGES.map((j) => (
          <option key={j} value={j}>
            {j}
          </option>
        ))}
      </select>
      <input
        id={`field-${name}`}
        data-testid={`field-${name}`}
        aria-invalid={invalid}
        aria-describedby={`field-${name}-help`}
        type="text"
        value={String(value)}
        disabled={disabled}
        onChange={(e) => onChange(e.target.value)}
      />
    </div>
  );
}

const SECTIONS: [FieldKind[], string][] = [
  [['model', 'weights', 'dataset'], 'Models and data'],
  [['judge', 'algorithm'], 'Judge and algorithm'],
  [['plain'], 'Settings'],
];

interface FormProps {
  /** Recipe name: the veRL / TRL names of its fields (aliases.ts) show in the help. */
  recipe: string;
  schema: Schema;
  values: FormValues;
  errors: Record<string, string>;
  disabled: boolean;
  onChange(name: string, v: string | boolean): void;
}

export function ConfigForm({ recipe, schema, values, errors, disabled, onChange }: FormProps) {
  const entries = Object.entries(schema);
  const aliases = (name: string) => aliasNote(recipe, schema, name);
  const row = ([name, field]: [string, Field]) => {
    const err = errors[name];
    const value = values[name] ?? (field.type === 'boolean' ? field.default : String(field.default));
    const changed = field.type === 'boolean' ? value !== field.default : String(value) !== String(field.default);
    const kind = fieldKind(name, field);
    const props = {
      name,
      field,
      value,
      invalid: Boolean(err),
      disabled,
      onChange: (v: string | boolean) => onChange(name, v),
    };
    return (
      <div
        key={name}
        className={`field${err ? ' field-invalid' : ''}${changed ? ' field-changed' : ''}`}
        data-testid={`field-row-${name}`}
        data-invalid={err ? 'true' : 'false'}
        data-kind={kind}
      >
        <label htmlFor={`field-${name}`} className="field-label">
          {field.label ?? name}
        </label>
        {kind === 'model' ? (
          <ModelPicker
            name={name}
            value={String(value)}
            invalid={Boolean(err)}
            disabled={disabled}
            config={values}
            onChange={(v) => onChange(name, v)}
          />
        ) : kind === 'dataset' ? (
          <DatasetPicker
            name={name}
            value={String(value)}
            invalid={Boolean(err)}
            disabled={disabled}
            onChange={(v) => onChange(name, v)}
          />
        ) : kind === 'judge' ? (
          <JudgeInput {...props} />
        ) : (
          <FieldInput {...props} />
        )}
        <div className="field-help" id={`field-${name}-help`}>
          <span className="field-allowed">
            {field.type} = {JSON.stringify(field.default)} · {describeAllowed(field)}
          </span>{' '}
          — {field.help}
          {aliases(name) && (
            <span className="field-aliases" data-testid={`field-aliases-${name}`}>
              {' '}
              ({aliases(name)})
            </span>
          )}
        </div>
        {err && (
          <div className="field-error error" role="alert" data-testid={`field-error-${name}`}>
            {err}
          </div>
        )}
      </div>
    );
  };
  return (
    <div className="config-form" data-testid="config-form">
      {SECTIONS.map(([kinds, title]) => {
        const rows = entries.filter(([k, f]) => kinds.includes(fieldKind(k, f)));
        if (rows.length === 0) return null;
        return (
          <fieldset key={title} className="config-section" data-testid={`config-section-${kinds[0]}`}>
            <legend>{title}</legend>
            {rows.map(row)}
          </fieldset>
        );
      })}
    </div>
  );
}
