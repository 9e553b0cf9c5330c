// Upload a JSONL / CSV of prompts: read here (rows that cannot be used are named by line and
// field and left out; a file with no usable row is an error), then stored in IndexedDB as
// `upload:<file name>`, which a recipe's dataset field can name, after a reload too. Stored
// uploads are listed and can be deleted. Nothing about the run in progress changes.
import { useEffect, useState } from 'react';
import { formatBytes } from '../../contract/formatBytes';
import { uploadPromptFile } from '../controls/uploadDataset';
import { engine as engineApi, useEngine } from '../../store/engineStore';
import { refreshDatasets, useDatasets } from '../../store/datasetsStore';

export function DatasetUpload() {
  const uploads = useDatasets((s) => s.uploads);
  const [error, setError] = useState<string | null>(null);
  const [note, setNote] = useState('');
  // The worker may not be up yet when this mounts: list what is stored once it is.
  const refresh = () => void refreshDatasets();
  const ready = useEngine((s) => s.status !== null);
  useEffect(() => void refreshDatasets(), [ready]);

  const upload = async (file: File) => {
    setError(null);
    setNote('');
    try {
      const r = await uploadPromptFile(file, (n, j, rows, l) => engineApi().putDataset(n, j, rows, l));
      setNote(r.note);
      refresh();
    } catch (e) {
      setError(`Dataset not uploaded: ${(e as Error).message}`);
    }
  };
  const remove = async (ref: string) => {
    try {
      await engineApi().deleteDataset(ref);
    } catch (e) {
      setError(`Not deleted: ${(e as Error).message}`);
    }
    refresh();
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
      {error && (
        <div className="error" role="alert" data-testid="dataset-error">
          {error}
        </div>
      )}
      {note && (
        <div className="small" data-testid="dataset-note">
          {note}
        </div>
      )}
      {uploads.length > 0 && (
        <ul className="small" data-testid="dataset-list">
          {uploads.map((u) => (
            <li key={u.ref} data-testid="dataset-item" data-ref={u.ref}>
              <code>{u.ref}</code>: {u.rows} rows, {formatBytes(u.bytes)} — offered in each recipe's dataset field (Run
              setup, Models and data).{' '}
              <button type="button" data-testid="dataset-delete" onClick={() => void remove(u.ref)}>
                Delete
              </button>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
