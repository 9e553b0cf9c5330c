// A dataset field of the setup form: the sandbox data, a file uploaded in this tab (kept in the
// worker as `upload:<name>`, here or from the Export / import panel), or a URL typed in the box.
// An upload is parsed in the page first: a bad row is named (file, line, field) and nothing changes.
import { useCallback, useEffect, useState } from 'react';
import { parseDataset } from '../../data/loaders';
import { rowsToJsonl } from '../../worker/datasets';
import type { DatasetInfo } from '../../worker/storageProtocol';

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
  const refresh = useCallback(() => {
    void window.sparring?.engine.listDatasets().then(setUploads, () => undefined);
  }, []);
  useEffect(refresh, [refresh]);

  const upload = async (file: File) => {
    setError(null);
    try {
      const rows = parseDataset(await file.text(), file.name);
      const info = await window.sparring!.engine.putDataset(file.name, rowsToJsonl(rows), rows.length);
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
    </div>
  );
}
