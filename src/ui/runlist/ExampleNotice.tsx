import { useRunStore } from '../../store/runStore';

/** Says plainly that what is on screen is the recorded example, not a live run. */
export function ExampleNotice({ where }: { where: 'charts' | 'arena' }) {
  const shown = useRunStore((s) =>
    where === 'arena'
      ? s.activeRunId !== null && s.runs[s.activeRunId]?.info.source === 'example'
      : s.order.some((id) => s.runs[id].info.source === 'example' && !s.runs[id].info.hidden),
  );
  if (!shown) return null;
  return (
    <p className="example-notice" data-testid={`example-notice-${where}`}>
      <strong>Recorded example</strong> — synthetic data generated for illustration, not a live run. Start a run or load
      a .jsonl log to see real results.
    </p>
  );
}
