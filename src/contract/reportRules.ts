// Rules a StepReport read from a file must meet, shared by the two readers of run logs (the
// storage import, src/storage/runs.ts, and the replay, src/store/runStoreJsonl.ts), so a line
// one accepts the other accepts too.
import { brief } from './brief';

/** Why `v` is not a step number (a non-negative safe integer), or null when it is one. */
export function stepProblem(v: unknown): string | null {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0
    ? null
    : `field "step" is ${brief(v)}, expected a non-negative integer`;
}
