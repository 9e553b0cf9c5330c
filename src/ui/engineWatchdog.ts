// The engine watchdog: the page notices when the engine worker stops answering. Nothing a file can
// hold should hang the worker (model files and prompts are bounded before use), but a step that
// never yields (a regex or a template no check foresaw, a runaway kernel) froze the run, and Stop
// never returned. While a run is live the page asks the worker for its run status every
// PING_EVERY_MS; when no answer comes within the bound, it terminates the worker, starts a fresh
// one, and marks the run failed in its log, naming what it was doing. Checkpoints and the run log
// stay as the worker last wrote them. While Stop waits, the bound is STOP_BOUND_MS, so Stop returns
// within seconds even when a step is stuck (the steps since the last checkpoint are then lost,
// and the message says so).
import { useEngine } from '../store/engineStore';
import { runLogs } from '../store/checkpointStore';
import { useRunStore } from '../store/runStore';
import { useSetup } from '../store/setupStore';
import { useSettings } from '../store/settingsStore';
import { connectEngine } from './engineConnection';

export const PING_EVERY_MS = 1_000;
/**
 * How long the worker may go without answering while a run is live. On WebGPU a step awaits the
 * GPU and answers between kernels; on wasm, webgl and cpu one step of a real model's rollout runs
 * without a break (tfjs reads resolve as microtasks), so they get longer.
 */
export const WATCHDOG_MS = { webgpu: 60_000, other: 300_000 } as const;
/** The bound while Stop waits for the worker. */
export const STOP_BOUND_MS = 5_000;

/** `?watchdog=<ms>` sets the bound (tests, and machines where a step takes longer). */
function boundFromUrl(): number | null {
  const v = Number(new URLSearchParams(window.location.search).get('watchdog'));
  return Number.isFinite(v) && v >= 500 ? v : null;
}

function bound(): number {
  if (useSetup.getState().busy === 'stopping') return Math.min(STOP_BOUND_MS, boundFromUrl() ?? STOP_BOUND_MS);
  const backend = useEngine.getState().status?.backend.backend;
  return boundFromUrl() ?? (backend === 'webgpu' ? WATCHDOG_MS.webgpu : WATCHDOG_MS.other);
}

/** What the run was doing, in words, from the last status the page saw. */
function doing(): string {
  const s = useSetup.getState();
  const st = s.status;
  if (s.busy === 'stopping') return `stopping run ${st.runId ?? ''} at step ${st.step}`.replace('  ', ' ');
  if (st.detail) return `${st.detail} (run ${st.runId}, step ${st.step})`;
  return st.stepping ? `running step ${st.step} of run ${st.runId}` : `run ${st.runId} at step ${st.step}`;
}

let recovering = false;

async function recover(silentMs: number): Promise<void> {
  if (recovering) return;
  recovering = true;
  try {
    const s = useSetup.getState();
    const st = s.status;
    const stopping = s.busy === 'stopping';
    const message =
      `the engine stopped answering for ${Math.round(silentMs / 1000)} s while ${doing()}; it was restarted. ` +
      `The run's checkpoints and its log (to step ${st.step}) are kept` +
      (stopping ? '; the steps since its last checkpoint are not saved' : '');
    // Terminate first: a worker hung mid-write holds its IndexedDB transaction on the run store
    // open (the request's success event waits for its blocked thread), so the page's own write
    // below would wait for good. Terminating aborts that transaction.
    useEngine.getState().client?.terminate();
    useEngine.getState().setClient(null);
    if (st.runId)
      await runLogs()
        .markFailed(st.runId, message, 'watchdog')
        .catch(() => false);
    if (st.runId) useRunStore.getState().endRun(st.runId);
    // The fresh worker's ready resets the run panel to idle, so the message goes beside the controls.
    s.patch({
      status: { ...st, state: stopping ? 'stopped' : 'error', error: null, detail: null, stepping: false },
      busy: null,
      commandError: `${stopping ? 'Stopped' : 'Run failed'}: ${message}`,
    });
    await connectEngine(useSettings.getState().backendPreference);
  } finally {
    recovering = false;
  }
}

/** Starts the watchdog; returns its stop function. */
export function watchEngine(): () => void {
  let asked: { at: number; client: unknown } | null = null;
  let answeredAt = performance.now();
  const tick = () => {
    const client = useEngine.getState().client;
    const s = useSetup.getState();
    const live = s.status.state === 'running' || s.status.state === 'paused' || s.busy === 'stopping';
    if (!client || !live || recovering) {
      asked = null;
      answeredAt = performance.now();
      return;
    }
    const now = performance.now();
    if (asked && asked.client === client) {
      if (now - answeredAt > bound()) void recover(now - answeredAt);
      return;
    }
    const mine = { at: now, client };
    asked = mine;
    client.api.runStatus().then(
      () => {
        if (asked === mine) {
          asked = null;
          answeredAt = performance.now();
        }
      },
      () => undefined,
    );
  };
  const timer = setInterval(tick, PING_EVERY_MS);
  return () => clearInterval(timer);
}
