// Commands on the engine worker's run, shared by the setup panel, the checkpoints list and the
// guided demo: every run, started or resumed, reports into the run store and shows its status in
// the one run panel. Max steps is enforced from the report callback (the worker awaits that
// callback before its next step, so pausing inside it stops the run exactly there) and read when
// each report arrives, so a limit raised while paused holds for the rest of the run.
import * as Comlink from 'comlink';
import type { StepReport } from '../../contract/report';
import type { CheckpointSummary } from '../../contract/storageFormat';
import { useRunStore } from '../../store/runStore';
import { IDLE_STATUS, useSetup, valuesOf } from '../../store/setupStore';
import { maxStepsError, seedError, type AtMax, type FormValues } from '../../store/setupUrl';
import { engine } from '../../store/engineStore';
import { runLogs, useCheckpoints } from '../../store/checkpointStore';
import { heldLocks, interruptedRun, lockFreed } from '../../store/interruptedRun';
import { runLock } from '../../contract/storageFormat';
import type { RunStatus } from '../../contract/workerApi';
import { stopLine, type StopReason } from '../../contract/stopReason';

const USER_STOP: StopReason = { kind: 'user', text: null };

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

/** The step limit the form sets now (null: none, or not a valid number). */
export function stepLimit(maxSteps = useSetup.getState().maxSteps): number | null {
  return maxSteps.trim() !== '' && !maxStepsError(maxSteps) ? Number(maxSteps) : null;
}

/** Whether a run at `step` (steps completed) has reached the form's limit: it may not step on. */
export function atLimit(step: number, maxSteps?: string): boolean {
  const limit = stepLimit(maxSteps);
  return limit !== null && step >= limit;
}

/**
 * The run's report and status callbacks (comlink proxies): the run store, the panel, the step
 * limit. The limit is the start's own (`limit`, default the form's) until Max steps is edited in
 * the form (raised while paused, say): from then on the form's.
 */
function runCallbacks(limit?: { maxSteps: string; atMax: AtMax }) {
  const { patch } = useSetup.getState();
  const formAtStart = useSetup.getState().maxSteps;
  const current = () => {
    const s = useSetup.getState();
    return !limit || s.maxSteps !== formAtStart ? { maxSteps: s.maxSteps, atMax: s.atMax } : limit;
  };
  let limitHitAt: number | null = null;
  const onReport = Comlink.proxy(async (report: StepReport) => {
    useRunStore.getState().append(report, 'live');
    useSetup.getState().stepDone(Date.now());
    patch({ lastStepMs: report.timings.total_ms });
    const now = current();
    if (atLimit(report.step + 1, now.maxSteps) && limitHitAt !== report.step) {
      limitHitAt = report.step;
      patch({ status: await engine().pauseRun() });
      // Stopping must wait for this callback to return (the run loop awaits it); Stop saves the final checkpoint.
      if (now.atMax === 'stop')
        setTimeout(() => void runCommand('stopping', (e) => e.stopRun({ reason: 'step limit' })), 0);
    }
  });
  const onStatus = Comlink.proxy((s: RunStatus) => {
    useSetup.getState().patch({ status: s });
    if ((s.state === 'stopped' || s.state === 'error') && s.runId) {
      useRunStore.getState().endRun(s.runId, s.stopReason ?? null);
      void useCheckpoints.getState().refresh();
    }
  });
  return { onReport, onStatus };
}

/** Field problems of a start that never reached the worker (seed, max steps). */
function ownErrors(o: StartOptions): Record<string, string> {
  const own: Record<string, string> = {};
  const se = seedError(o.seed);
  if (se) own.seed = se;
  const me = maxStepsError(o.maxSteps);
  if (me) own.steps = me;
  return own;
}

/** Starts a run; field problems (ours or the worker's) are marked on the form and named beside Start. */
export async function startRun(o: StartOptions = formSetup()): Promise<boolean> {
  const { patch } = useSetup.getState();
  // An older run's error says nothing about this start.
  if (useSetup.getState().status.state === 'error') patch({ status: IDLE_STATUS });
  const own = ownErrors(o);
  if (Object.keys(own).length > 0) {
    patch({ workerErrors: own, startTried: true });
    return false;
  }
  patch({ busy: 'starting', commandError: null, workerErrors: {}, stepTimes: [], lastStepMs: null });
  try {
    // A run shown from before a reload that the user starts over (the guided demo does): it ended here.
    const { detached } = useSetup.getState();
    if (detached)
      await runLogs()
        .markEnded(detached.runId, 'stopped', USER_STOP)
        .catch(() => false);
    const { onReport, onStatus } = runCallbacks({ maxSteps: o.maxSteps, atMax: o.atMax });
    const r = await engine().startRun(o.recipe, o.values, Number(o.seed), onReport, onStatus);
    if (r.ok) {
      patch({ status: r.status, runConfig: { recipe: o.recipe, values: o.values }, startTried: false, detached: null });
      return true;
    }
    patch({ workerErrors: r.errors, startTried: true });
    return false;
  } catch (e) {
    patch({ commandError: (e as Error).message });
    return false;
  } finally {
    patch({ busy: null });
  }
}

/**
 * Continues a checkpoint's run in the worker, under the run panel's controls: its earlier
 * reports come back from the run log first, and its step count goes on from the checkpoint's.
 */
export async function resumeCheckpoint(c: CheckpointSummary, paused: boolean): Promise<boolean> {
  const { patch } = useSetup.getState();
  patch({ busy: paused ? 'restoring' : 'resuming', commandError: null, stepTimes: [], lastStepMs: null });
  try {
    const history = await runLogs()
      .readReports(c.runId, { toStep: c.step - 1 })
      .catch(() => [] as StepReport[]);
    const { onReport, onStatus } = runCallbacks();
    const r = await engine().resumeFromCheckpoint(c.id, onReport, onStatus, { paused });
    if (r.ok) {
      // Restoring an older checkpoint branches (a new run id, worker/branch.ts): the history shows
      // under the branch, and the parent run keeps its own curves. The reply comes before the
      // first step's report (the models load in between), so the history is in place first.
      const runId = r.status.runId ?? c.runId;
      if (history.length > 0)
        useRunStore.getState().importRun(
          history.map((h) => ({ ...h, runId })),
          'live',
        );
      patch({ status: r.status, detached: null });
      return true;
    }
    patch({ commandError: `Could not resume "${c.name}": ${Object.values(r.errors).join('; ')}` });
    return false;
  } catch (e) {
    patch({ commandError: (e as Error).message });
    return false;
  } finally {
    patch({ busy: null });
  }
}

/** Stop: the worker saves the final checkpoint (or not, with `discard`); a run from before a reload is marked ended. */
export async function stopRun(discard = false): Promise<void> {
  const { detached, patch, status } = useSetup.getState();
  if (!detached) return runCommand('stopping', (e) => e.stopRun({ discard }));
  await runLogs()
    .markEnded(detached.runId, 'stopped', USER_STOP)
    .catch((e: Error) => patch({ commandError: `Could not mark run ${detached.runId} stopped: ${e.message}` }));
  patch({
    status: {
      ...status,
      state: 'stopped',
      stopReason: USER_STOP,
      detail: `${stopLine(USER_STOP)} at its checkpoint (step ${detached.step})`,
    },
    detached: null,
  });
  useRunStore.getState().endRun(detached.runId, USER_STOP);
  void useCheckpoints.getState().refresh();
}

/** Resume / Step of a run from before a reload go through its checkpoint; otherwise to the worker's run. */
export async function resumeOrStep(step: boolean): Promise<void> {
  const { detached } = useSetup.getState();
  if (detached && !(await resumeCheckpoint(detached, true))) return;
  if (step) await runCommand('stepping', (e) => e.stepRun());
  else await runCommand('resuming', (e) => e.resumeRun());
}

let looking: Promise<void> | null = null;

/**
 * When the engine is ready and nothing runs: the run that was live before the page (or the
 * engine worker, at a backend change) went away, shown paused at its newest checkpoint with its
 * history in the charts (Resume continues it, Stop ends it).
 */
export function showInterruptedRun(): Promise<void> {
  looking ??= findInterruptedRun().finally(() => {
    looking = null;
  });
  return looking;
}

/**
 * How long a page waits for the lock of the run it would offer back: the worker of the page that
 * was just reloaded may hold it for a moment after the new page asks (issue 41: a reload right
 * after a save found the run "live elsewhere" and offered nothing).
 */
const OLD_PAGE_GRACE_MS = 5000;
/** Runs live in another tab whose lock this page waits on, to offer them back once it frees. */
const watching = new Set<string>();

async function findInterruptedRun(): Promise<void> {
  await useCheckpoints.getState().startup();
  await useCheckpoints.getState().refresh();
  const [records, list] = [await runLogs().listRuns(), useCheckpoints.getState().list];
  const held = await heldLocks();
  const live = new Set(records.map((r) => r.id).filter((id) => held.has(runLock(id))));
  const newest = interruptedRun(records, list);
  if (newest && live.has(newest.record.id)) {
    const lock = runLock(newest.record.id);
    if (await lockFreed(lock, OLD_PAGE_GRACE_MS)) return findInterruptedRun();
    // Live in another tab: offered here once that tab lets it go without ending it (closed, crashed).
    if (!watching.has(lock)) {
      watching.add(lock);
      void lockFreed(lock)
        .then(() => {
          watching.delete(lock);
          return showInterruptedRun();
        })
        .catch(() => watching.delete(lock));
    }
  }
  const found = interruptedRun(records, list, live);
  const s = useSetup.getState();
  if (!found || s.status.state !== 'idle' || s.busy !== null) return;
  const { record, checkpoint: c } = found;
  const history = await runLogs()
    .readReports(c.runId, { toStep: c.step - 1 })
    .catch(() => [] as StepReport[]);
  if (history.length > 0) useRunStore.getState().importRun(history, 'live');
  const spec = record.spec as { seed?: unknown } | null;
  useSetup.setState((st) => ({
    recipeName: st.recipes.some((r) => r.name === record.recipe) ? record.recipe : st.recipeName,
    detached: c,
    status: {
      ...IDLE_STATUS,
      state: 'paused',
      recipe: record.recipe,
      seed: typeof spec?.seed === 'number' ? spec.seed : null,
      step: c.step,
      runId: c.runId,
      detail: `the page was reloaded; Resume continues from its checkpoint "${c.name}"`,
    },
  }));
}
