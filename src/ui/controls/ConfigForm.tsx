// A config form generated from a recipe schema (plain JSON from the worker): one input per field
// with its default, allowed range and one-line help; invalid fields carry their message.
import { describeAllowed, type Field, type Schema } from '../../recipes/schema';

/** Form values: text for number / integer / string / enum fields, booleans as they are. */
export type FormValues = Record<string, string | boolean>;

export function formDefaults(schema: Schema): FormValues {
  const out: FormValues = {};
  for (const [k, f] of Object.entries(schema)) out[k] = f.type === 'boolean' ? f.default : String(f.default);
  return out;
}

function FieldInput({ name, field, value, invalid, disabled, onChange }: { name: string; field: Field; value: string | boolean; invalid: boolean; disabled: boolean; onChange(v: string | boolean): void }) {
  const common = { id: `field-${name}`, 'data-testid': `field-${name}`, 'aria-invalid': invalid, 'aria-describedby': `field-${name}-help`, disabled };
  switch (field.type) {
    case 'boolean':
      return <input {...common} type="checkbox" checked={value === true} onChange={(e) => onChange(e.target.checked)} />;
    case 'enum':
      return (
        <select {...common} value={String(value)} onChange={(e) => onChange(e.target.value)}>
          {field.options.map((o) => (
            <option key={o} value={o}>{o}</option>
          ))}
        </select>
      );
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
      return <input {...common} type="text" value={String(value)} placeholder={field.default} onChange={(e) => onChange(e.target.value)} />;
  }
}

export function ConfigForm({ schema, values, errors, disabled, onChange }: { schema: Schema; values: FormValues; errors: Record<string, string>; disabled: boolean; onChange(name: string, v: string | boolean): void }) {
  return (
    <div className="config-form" data-testid="config-form">
      {Object.entries(schema).map(([name, field]) => {
        const err = errors[name];
        const value = values[name] ?? (field.type === 'boolean' ? field.default : String(field.default));
        const changed = field.type === 'boolean' ? value !== field.default : String(value) !== String(field.default);
        return (
          <div key={name} className={`field${err ? ' field-invalid' : ''}${changed ? ' field-changed' : ''}`} data-testid={`field-row-${name}`} data-invalid={err ? 'true' : 'false'}>
            <label htmlFor={`field-${name}`} className="field-label">
              {field.label ?? name}
            </label>
            <FieldInput name={name} field={field} value={value} invalid={Boolean(err)} disabled={disabled} onChange={(v) => onChange(name, v)} />
            <div className="field-help" id={`field-${name}-help`}>
              <span className="field-allowed">
                {field.type} = {JSON.stringify(field.default)} · {describeAllowed(field)}
              </span>{' '}
              — {field.help}
            </div>
            {err && (
              <div className="field-error error" role="alert" data-testid={`field-error-${name}`}>
                {err}
              </div>
            )}
          </div>
        );
      })}
    </div>
  );
}
