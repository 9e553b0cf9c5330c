// How the lab counts steps on screen: steps done. A report carries its step's index (0-based, as
// the JSONL log and the metrics keep it); after it, that many + 1 steps are done, which is what the
// run status ("step 60 / 60"), Max steps, checkpoints and exports count. So every panel shows a
// report of index s as step s + 1 (issue 41: the status read 60 / 60 while the arena and the lesson
// read 59 for the same last step).

/** The step a report of index `reportStep` is shown as: the number of steps done after it. */
export const shownStep = (reportStep: number): number => reportStep + 1;
