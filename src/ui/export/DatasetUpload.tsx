// Upload a JSONL / CSV of prompts: parsed here (one error naming the file, line and field), then
// kept in the worker as `upload:<file name>`, which a recipe's dataset field can name. Nothing
// about the run in progress changes.
import { useState } from 'react';
import { parseDataset } from '../../data/loaders';
import { rowsToJsonl } from '../../worker/datasets';
import type { DatasetInfo } from '../../worker/storageProtocol';
import { engineApi } from './engineApi';

export function DatasetUpload() {
  const [uploads, setUploads] = useState<DatasetInfo[]>([]);
  const [error, setError] = useState<string | null>(null);

  const upload = async (file: File) => {
    setError(null);
    try {
      const rows = parseDataset(await file.text(), file.name);
      const info = await engineApi().putDataset(file.name, rowsToJsonl(rows), rows.length);
      setUploads((u) => [...u.filter((x) => x.ref !== info.ref), info]);
    } catch (e) {
      setError(`Dataset not uploaded: ${(e as Error).message}`);
    }
  };

  return (
    <div className="dataset-upload" data-testid="dataset-upload">
      <label className="control">
        Upload prompts (JSONL / CSV)
        <input
          data-testid="dataset-file"
          type="file"
          accept=".jsonl,.ndjson,.csv,application/json,text/csv"
          onChange={(e) => {
            const f = e.target.files?.[0];
            e.target.value = '';
            if (f) void upload(f);
          }}
        />
      </label>
      {error && <div className="error" role="alert" data-testid="dataset-error">{error}</div>}
      {uploads.length > 0 && (
        <ul className="small" data-testid="dataset-list">
          {uploads.map((u) => (
            <li key={u.ref} data-testid="dataset-item" data-ref={u.ref}>
              <code>{u.ref}</code>: {u.rows} rows — type it in a recipe's dataset field (e.g. attacker-sft).
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
