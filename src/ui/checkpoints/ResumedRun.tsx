// Status and controls of a run resumed from a checkpoint. The run setup controls only follow runs
// they started, so a resumed run gets its own Pause / Resume / Step / Stop here.
import { useState } from 'react';
import { useCheckpoints } from '../../store/checkpointStore';
import type { RunStatus } from '../../contract/workerApi';
import { engine as engineApi } from '../../store/engineStore';

export function ResumedRun() {
  const s = useCheckpoints((x) => x.resumed);
  const setResumed = useCheckpoints((x) => x.setResumed);
  const [busy, setBusy] = useState(false);
  if (!s) return null;
  const cmd = (fn: () => Promise<RunStatus>) => {
    setBusy(true);
    void fn()
      .then(setResumed)
      .catch((e: Error) => useCheckpoints.getState().setMessage({ text: e.message, error: true }))
      .finally(() => setBusy(false));
  };
  const api = engineApi;
  return (
    <div className="controls-row resumed-run" data-testid="resumed-run">
      <span
        className="run-state"
        data-testid="resumed-state"
        data-state={s.state}
        data-step={s.step}
        data-stepping={s.stepping ? 'true' : 'false'}
        data-run={s.runId ?? ''}
        role="status"
      >
        Resumed {s.runId}: {s.state} · step {s.step}
        {s.detail && <span className="small"> · {s.detail}</span>}
      </span>
      <button
        type="button"
        data-testid="resumed-pause"
        disabled={busy || s.state !== 'running'}
        onClick={() => cmd(() => api().pauseRun())}
      >
        Pause
      </button>
      <button
        type="button"
        data-testid="resumed-resume"
        disabled={busy || s.state !== 'paused'}
        onClick={() => cmd(() => api().resumeRun())}
      >
        Resume
      </button>
      <button
        type="button"
        data-testid="resumed-step"
        disabled={busy || s.state !== 'paused'}
        onClick={() => cmd(() => api().stepRun())}
      >
        Step
      </button>
      <button
        type="button"
        data-testid="resumed-stop"
        disabled={busy || (s.state !== 'running' && s.state !== 'paused')}
        onClick={() => cmd(() => api().stopRun())}
      >
        Stop
      </button>
      {s.state === 'error' && s.error && (
        <span className="error" role="alert" data-testid="resumed-error">
          {s.error}
        </span>
      )}
    </div>
  );
}
