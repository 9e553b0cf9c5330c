import { useId, useRef, useState } from 'react';
import { useRunStore } from '../../store/runStore';
import { parseReportsJsonl, ReplayError } from '../../store/runStoreJsonl';

/** Loads a recorded run (JSONL, one StepReport per line). A bad line is reported by number and
 *  nothing on screen changes. */
export function ReplayLoader() {
  const input = useRef<HTMLInputElement>(null);
  const id = useId();
  const [error, setError] = useState<string | null>(null);
  const [loaded, setLoaded] = useState<string | null>(null);

  const onFile = async (file: File) => {
    try {
      const reports = parseReportsJsonl(await file.text(), file.name);
      useRunStore.getState().importRun(reports, 'replay', file.name);
      const runIds = new Set(reports.map((r) => r.runId));
      setError(null);
      setLoaded(
        `Loaded ${reports.length} steps (${runIds.size === 1 ? `run ${[...runIds][0]}` : `${runIds.size} runs`}) from ${file.name}.`,
      );
    } catch (err) {
      setLoaded(null);
      setError(
        err instanceof ReplayError
          ? `Could not load ${err.message}`
          : `Could not read ${file.name}: ${(err as Error).message}`,
      );
    }
  };

  return (
    <div className="replay">
      <label htmlFor={id} className="button-like">
        Load run (.jsonl)…
      </label>
      <input
        ref={input}
        id={id}
        type="file"
        accept=".jsonl,.ndjson,.json,.txt,application/x-ndjson"
        className="visually-hidden"
        data-testid="replay-input"
        onChange={(e) => {
          const f = e.target.files?.[0];
          if (f) void onFile(f);
          e.target.value = '';
        }}
      />
      {error && (
        <p className="error" role="alert" data-testid="replay-error">
          {error}
        </p>
      )}
      {loaded && (
        <p className="small" role="status" data-testid="replay-loaded">
          {loaded}
        </p>
      )}
    </div>
  );
}
