// Why a run ended, kept apart from what the run is doing (the status detail says "saving the final
// checkpoint" for a moment; the reason stays). The worker sets it when the run's loop ends, writes
// it on the run's record in IndexedDB, and the page shows it in the run status, the session's run
// list and the checkpoints list; a later save or status never overwrites it.

/** `user`: Stop pressed; `step limit`: the form's Max steps with "then stop"; `watchdog`: a step that never returned. */
export type StopKind = 'early stop' | 'step limit' | 'user' | 'error' | 'watchdog';

export const STOP_KINDS: readonly StopKind[] = ['early stop', 'step limit', 'user', 'error', 'watchdog'];

export interface StopReason {
  kind: StopKind;
  /** The recipe's own words for an early stop, the error's message, the limit's step. */
  text: string | null;
}

/** A stop the page asks for: by the user (default), at the form's step limit, or by a watchdog. */
export type RequestedStop = Extract<StopKind, 'user' | 'step limit' | 'watchdog'>;

/** The reason in the words the status and the run lists show. */
export function stopLine(r: StopReason): string {
  const more = r.text ? `: ${r.text}` : '';
  switch (r.kind) {
    case 'early stop':
      return `early stop${more}`;
    case 'step limit':
      return `stopped at the step limit${more}`;
    case 'user':
      return `stopped by the user${more}`;
    case 'error':
      return `failed${more}`;
    case 'watchdog':
      return `stopped by the watchdog${more}`;
  }
}

/** A stored reason read back (a record written before reasons were kept has none). */
export function readStopReason(v: unknown): StopReason | null {
  if (typeof v !== 'object' || v === null) return null;
  const { kind, text } = v as { kind?: unknown; text?: unknown };
  if (!STOP_KINDS.includes(kind as StopKind)) return null;
  return { kind: kind as StopKind, text: typeof text === 'string' ? text : null };
}
