// Restore keeps history: resuming a checkpoint older than the run's newest one starts a branch, a
// new run id whose log begins with a copy of the parent's steps before the checkpoint, instead of
// cutting the parent's log there (Stop at 18, Restore step 5 dropped steps 5-17 from the log while
// the checkpoints at 10, 15 and 18 stayed; a reload then offered step 18, and Resume left a hole).
// Resuming a run's newest checkpoint (after a reload or a crash) continues the run itself.
import { checkpoints, runs as runLogs } from '../storage';

/** Whether run `runId` has a checkpoint after `step`: resuming `step` under the same id would cut history. */
export async function restoresOlderCheckpoint(runId: string, step: number): Promise<boolean> {
  return (await checkpoints().list(runId)).some((c) => c.step > step);
}

/** The branch's id: the parent's recipe-seed prefix, a `b<step>` mark and the time and random stamp of a new run. */
export function branchId(parentId: string, step: number, stamp: string): string {
  const base = parentId.replace(/-\d{6}-[0-9a-f]{4}(?:-b\d+-\d{6}-[0-9a-f]{4})*$/, '');
  return `${base}-b${step}-${stamp}`;
}

/** Creates the branch's run record and its log (the parent's reports before `step`); the parent is untouched. */
export async function openBranchLog(parentId: string, id: string, step: number): Promise<void> {
  await runLogs().branchRun(parentId, id, step);
}
