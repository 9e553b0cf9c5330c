// A dataset field of the setup form: the sandbox data, an uploaded file (stored in IndexedDB as
// `upload:<name>`, here or from the Export / import panel), or a URL typed in the box. An upload
// is read in the page first: rows that cannot be used are named (line, field) and left out; a
// file with no usable row changes nothing, and when it has columns none of the recognised names
// match, they are offered here to pick the prompt column from.
import { useEffect, useState } from 'react';
import { engine, useEngine } from '../../store/engineStore';
import { refreshDatasets, useDatasets } from '../../store/datasetsStore';
import { columnsOf, type ColumnMap } from '../../contract/promptSets';
import { uploadPromptFile } from './uploadDataset';
import { LONG_PROMPTS, MAX_PROMPT_CHARS, type LongPrompts } from '../../contract/promptBounds';

const LONG_LABELS: Record<LongPrompts, string> = {
  refuse: 'leave the row out (named by line)',
  'keep-start': 'cut, keeping the start',
  'keep-end': 'cut, keeping the end',
};

interface Props {
  name: string;
  value: string;
  invalid: boolean;
  disabled: boolean;
  onChange(v: string): void;
}

const SANDBOX = 'sandbox';

export function DatasetPicker({ name, value, invalid, disabled, onChange }: Props) {
  const uploads = useDatasets((s) => s.uploads);
  const [error, setError] = useState<string | null>(null);
  const [note, setNote] = useState('');
  // A file whose columns were not recognised, kept to upload again with a picked prompt column.
  const [pending, setPending] = useState<{ name: string; text: string; columns: string[] } | null>(null);
  const [promptColumn, setPromptColumn] = useState('');
  // Prompts over the upload's memory guard (MAX_PROMPT_CHARS): refused by line, or cut as the user
  // chooses. The rollout's own cut is in tokens (the recipe's maxPromptLength and truncation).
  const [long, setLong] = useState<LongPrompts>('refuse');
  const refresh = () => void refreshDatasets();
  // Stored uploads outlive the tab: list them once the worker is up (after a reload too).
  const ready = useEngine((s) => s.status !== null);
  useEffect(() => void refreshDatasets(), [ready]);

  const upload = async (file: { name: string; text(): Promise<string> }, map: ColumnMap = {}) => {
    setError(null);
    setNote('');
    setPending(null);
    const text = await file.text();
    try {
      const { info, note } = await uploadPromptFile(
        { name: file.name, text: async () => text },
        (n, j, r, l) => engine().putDataset(n, j, r, l),
        map,
        { long, maxChars: MAX_PROMPT_CHARS },
      );
      setNote(note);
      refresh();
      onChange(info.ref);
    } catch (e) {
      setError(`Dataset not uploaded: ${(e as Error).message}`);
      let columns: string[] = [];
      try {
        columns = columnsOf(text, file.name);
      } catch {
        // Not even a header: nothing to map.
      }
      if (columns.length > 0 && !map.prompt) {
        setPending({ name: file.name, text, columns });
        setPromptColumn(columns[0]);
      }
    }
  };

  const known = value === SANDBOX || uploads.some((u) => u.ref === value);
  return (
    <div className="model-picker" data-testid={`dataset-picker-${name}`}>
      <div className="model-picker-row">
        <select
          data-testid={`dataset-pick-${name}`}
          value={known ? value : ''}
          disabled={disabled}
          aria-label={`${name}: data source`}
          onFocus={refresh}
          onChange={(e) => e.target.value && onChange(e.target.value)}
        >
          <option value="">URL (type below)…</option>
          <option value={SANDBOX}>sandbox data</option>
          {uploads.map((u) => (
            <option key={u.ref} value={u.ref}>
              {u.ref} ({u.rows} rows)
            </option>
          ))}
        </select>
        <input
          data-testid={`dataset-file-${name}`}
          type="file"
          accept=".jsonl,.ndjson,.csv,application/json,text/csv"
          disabled={disabled}
          aria-label={`${name}: upload a JSONL or CSV file`}
          onChange={(e) => {
            const f = e.target.files?.[0];
            e.target.value = '';
            if (f) void upload(f);
          }}
        />
      </div>
      <input
        id={`field-${name}`}
        data-testid={`field-${name}`}
        aria-invalid={invalid}
        aria-describedby={`field-${name}-help`}
        type="text"
        value={value}
        disabled={disabled}
        onChange={(e) => onChange(e.target.value)}
      />
      <div className="model-picker-row small">
        <label>
          uploaded prompts over {MAX_PROMPT_CHARS.toLocaleString('en-US')} characters (a memory guard; runs cut prompts
          to the recipe&apos;s maxPromptLength in tokens):{' '}
          <select
            data-testid={`dataset-long-${name}`}
            value={long}
            disabled={disabled}
            onChange={(e) => setLong(e.target.value as LongPrompts)}
          >
            {LONG_PROMPTS.map((l) => (
              <option key={l} value={l}>
                {LONG_LABELS[l]}
              </option>
            ))}
          </select>
        </label>
      </div>
      {error && (
        <div className="field-error error small" role="alert" data-testid={`dataset-error-${name}`}>
          {error}
        </div>
      )}
      {note && (
        <div className="small" data-testid={`dataset-note-${name}`}>
          {note}
        </div>
      )}
      {pending && (
        <div className="model-picker-row small" data-testid={`dataset-map-${name}`}>
          <label>
            prompt column{' '}
            <select
              data-testid={`dataset-map-prompt-${name}`}
              value={promptColumn}
              disabled={disabled}
              onChange={(e) => setPromptColumn(e.target.value)}
            >
              {pending.columns.map((c) => (
                <option key={c} value={c}>
                  {c}
                </option>
              ))}
            </select>
          </label>
          <button
            type="button"
            data-testid={`dataset-map-apply-${name}`}
            disabled={disabled}
            onClick={() =>
              void upload({ name: pending.name, text: async () => pending.text }, { prompt: promptColumn })
            }
          >
            Upload {pending.name} with this column
          </button>
        </div>
      )}
    </div>
  );
}
