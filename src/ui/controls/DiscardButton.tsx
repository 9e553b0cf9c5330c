// "Stop and discard" drops the steps since the last checkpoint, so it asks first (issue 41: it
// discarded on one click), in the page rather than a browser dialog: the question names what is
// lost, and "Keep running" is the default a stray Enter presses.
import { useState } from 'react';
import { useCheckpoints } from '../../store/checkpointStore';

export function DiscardButton({
  disabled,
  runId,
  onDiscard,
}: {
  disabled: boolean;
  /** The live run: its newest checkpoint says what is lost. */
  runId: string | null;
  onDiscard(): void;
}) {
  const [asking, setAsking] = useState(false);
  const lastSaved = useCheckpoints((c) => {
    const steps = c.list.filter((x) => x.runId === runId).map((x) => x.step);
    return steps.length ? Math.max(...steps) : null;
  });
  if (!asking)
    return (
      <button
        type="button"
        className="link-button"
        data-testid="run-discard"
        disabled={disabled}
        title="Stop without saving: the steps since the last checkpoint are dropped"
        onClick={() => setAsking(true)}
      >
        Stop and discard
      </button>
    );
  return (
    <span
      role="alertdialog"
      aria-label="Discard the run's unsaved steps?"
      className="small"
      data-testid="discard-confirm"
    >
      {lastSaved === null
        ? 'Stop and keep nothing of this run (it has no checkpoint yet)? '
        : `Stop and drop every step after the checkpoint at step ${lastSaved}? `}
      <button type="button" autoFocus onClick={() => setAsking(false)}>
        Keep running
      </button>{' '}
      <button
        type="button"
        disabled={disabled}
        onClick={() => {
          setAsking(false);
          onDiscard();
        }}
      >
        Discard
      </button>
    </span>
  );
}
