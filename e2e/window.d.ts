// The handles the browser tests read on `window`. The product page sets none of them: the test
// harness page installs them (its worker client as `sparring`, the run-store handle as `sparringRuns`).
import type { RunHandle } from '../dev/harness/runHandle';
import type { EngineClient } from '../src/worker/client';

declare global {
  interface Window {
    sparring?: { engine: EngineClient['api'] };
    sparringRuns?: RunHandle;
  }
}
