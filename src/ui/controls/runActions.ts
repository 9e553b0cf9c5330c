// Commands on the engine worker's run, shared by the setup panel and the guided demo. Reports go
// into the run store as they arrive; max steps is enforced from the report callback: the worker
// awaits that callback before its next step, so pausing inside it stops the run exactly there.
import * as Comlink from 'comlink';
import type { StepReport } from '../../contract/report';
import { useRunStore } from '../../store/runStore';
import { useSetup, valuesOf } from '../../store/setupStore';
import { maxStepsError, seedError, type AtMax, type FormValues } from '../../store/setupUrl';
import { engine } from '../../store/engineStore';
import type { RunStatus } from '../../contract/workerApi';

export async function runCommand(
  label: string,
  fn: (e: ReturnType<typeof engine>) => Promise<RunStatus>,
): Promise<void> {
  const { patch } = useSetup.getState();
  patch({ busy: label, commandError: null });
  try {
    patch({ status: await fn(engine()) });
  } catch (e) {
    patch({ commandError: (e as Error).message });
  } finally {
    patch({ busy: null });
  }
}

export interface StartOptions {
  recipe: string;
  values: FormValues;
  seed: string;
  maxSteps: string;
  atMax: AtMax;
}

/** The setup the form holds now. */
export function formSetup(): StartOptions {
  const s = useSetup.getState();
  return {
    recipe: s.recipeName,
    values: valuesOf(s, s.recipeName),
    seed: s.seed,
    maxSteps: s.maxSteps,
    atMax: s.atMax,
  };
}

/** Starts a run; field problems (ours or the worker's) are marked on the form and nothing starts. */
export async function startRun(o: StartOptions = formSetup()): Promise<boolean> {
  const { patch } = useSetup.getState();
  const own: Record<string, string> = {};
  const se = seedError(o.seed);
  if (se) own.seed = se;
  const me = maxStepsError(o.maxSteps);
  if (me) own.steps = me;
  if (Object.keys(own).length > 0) {
    patch({ workerErrors: own });
    return false;
  }
  const limit = o.maxSteps.trim() === '' ? Infinity : Number(o.maxSteps);
  patch({ busy: 'starting', commandError: null, workerErrors: {}, stepTimes: [] });
  try {
    let limitHit = false;
    const onReport = Comlink.proxy(async (report: StepReport) => {
      useRunStore.getState().append(report, 'live');
      useSetup.getState().stepDone(Date.now());
      if (report.step + 1 >= limit && !limitHit) {
        limitHit = true;
        patch({ status: await engine().pauseRun() });
        // Stopping must wait for this callback to return (the run loop awaits it).
        if (o.atMax === 'stop') setTimeout(() => void runCommand('stopping', (e) => e.stopRun()), 0);
      }
    });
    const onStatus = Comlink.proxy((s: RunStatus) => useSetup.getState().patch({ status: s }));
    const r = await engine().startRun(o.recipe, o.values, Number(o.seed), onReport, onStatus);
    if (r.ok) {
      patch({ status: r.status, runConfig: { recipe: o.recipe, values: o.values } });
      return true;
    }
    patch({ workerErrors: r.errors });
    return false;
  } catch (e) {
    patch({ commandError: (e as Error).message });
    return false;
  } finally {
    patch({ busy: null });
  }
}
