// A dataset field of the setup form: the sandbox data, an uploaded file (stored in IndexedDB as
// `upload:<name>`, here or from the Export / import panel), or a URL typed in the box. An upload
// is read in the page first: rows that cannot be used are named (line, field) and left out; a
// file with no usable row changes nothing.
import { useCallback, useEffect, useState } from 'react';
import { useEngine } from '../../store/engineStore';
import type { DatasetInfo } from '../../worker/storageProtocol';
import { uploadPromptFile } from './uploadDataset';

interface Props {
  name: string;
  value: string;
  invalid: boolean;
  disabled: boolean;
  onChange(v: string): void;
}

const SANDBOX = 'sandbox';

export function DatasetPicker({ name, value, invalid, disabled, onChange }: Props) {
  const [uploads, setUploads] = useState<DatasetInfo[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [note, setNote] = useState('');
  const refresh = useCallback(() => {
    void window.sparring?.engine.listDatasets().then(setUploads, () => undefined);
  }, []);
  // Stored uploads outlive the tab: list them once the worker is up (after a reload too).
  const ready = useEngine((s) => s.status !== null);
  useEffect(refresh, [refresh, ready]);

  const upload = async (file: File) => {
    setError(null);
    setNote('');
    try {
      const { info, note } = await uploadPromptFile(file, (n, j, r) => window.sparring!.engine.putDataset(n, j, r));
      setNote(note);
      refresh();
      onChange(info.ref);
    } catch (e) {
      setError(`Dataset not uploaded: ${(e as Error).message}`);
    }
  };

  const known = value === SANDBOX || uploads.some((u) => u.ref === value);
  return (
    <div className="model-picker" data-testid={`dataset-picker-${name}`}>
      <div className="model-picker-row">
        <select data-testid={`dataset-pick-${name}`} value={known ? value : ''} disabled={disabled} aria-label={`${name}: data source`} onFocus={refresh} onChange={(e) => e.target.value && onChange(e.target.value)}>
          <option value="">URL (type below)…</option>
          <option value={SANDBOX}>sandbox data</option>
          {uploads.map((u) => (
            <option key={u.ref} value={u.ref}>{u.ref} ({u.rows} rows)</option>
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
      <input id={`field-${name}`} data-testid={`field-${name}`} aria-invalid={invalid} aria-describedby={`field-${name}-help`} type="text" value={value} disabled={disabled} onChange={(e) => onChange(e.target.value)} />
      {error && <div className="field-error error small" role="alert" data-testid={`dataset-error-${name}`}>{error}</div>}
      {note && <div className="small" data-testid={`dataset-note-${name}`}>{note}</div>}
    </div>
  );
}
