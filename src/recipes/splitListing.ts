// Both sides of the sandbox's evaluation split, listed so anyone can check that they share no
// idea: goals with their template ids, benign tasks, and the QA items (story, question) a minmax
// or rlhf run with a given seed trains and evaluates on. `npm run lab -- split --seed S --json`.
import { BENIGN_FAMILIES } from '../data/sandbox/benign';
import { qaItems } from '../data/sandbox/datasets';
import { SANDBOX_HAZARDS } from '../data/sandbox/hazards';
import { SANDBOX_SPLIT_SEED, splitBenignTasks, splitTemplates, type GoalSplit } from '../data/sandbox/split';
import { hash3 } from '../model/random';

export interface SplitSide {
  goals: { category: string; template: string; text: string; goal: string }[];
  benign: { family: string; task: string }[];
  qa: { story: string; question: string }[];
}

export interface SplitListing {
  /** The seed of the split itself (fixed: every run uses it, whatever its own seed). */
  splitSeed: number;
  /** The run seed whose QA pools are listed (the goal and benign sides do not depend on it). */
  seed: number;
  train: SplitSide;
  eval: SplitSide;
  /** What the two sides share: template ids, benign task texts, "story | question" pairs (all empty). */
  shared: { templates: string[]; benign: string[]; qa: string[] };
}

// minmax's defaults (itemPool 256, evalItems 32) and its held-out seed (minmax.ts evaluate()).
const QA_POOL = 256;
const QA_EVAL = 32;
const qaEvalSeed = (seed: number) => hash3(seed, 0xe7a1, 7) >>> 0;

function side(split: GoalSplit, qaSeed: number, qaN: number, splitSeed: number): SplitSide {
  return {
    goals: SANDBOX_HAZARDS.flatMap((c) =>
      splitTemplates(c, split, splitSeed).flatMap((t) =>
        t.goals.map((goal) => ({ category: c, template: t.id, text: t.template, goal })),
      ),
    ),
    benign: BENIGN_FAMILIES.flatMap((f) =>
      splitBenignTasks(f, split, splitSeed).map((t) => ({ family: f, task: t.text })),
    ),
    qa: qaItems(qaN, qaSeed, { split, splitSeed }).map((q) => ({ story: q.story, question: q.question })),
  };
}

const common = (a: string[], b: string[]) => {
  const s = new Set(b);
  return [...new Set(a.filter((x) => s.has(x)))];
};

/** The split's two sides for a run seed (QA pools as a minmax run with that seed draws them). */
export function splitListing(seed: number, splitSeed = SANDBOX_SPLIT_SEED): SplitListing {
  const train = side('train', seed, QA_POOL, splitSeed);
  const ev = side('eval', qaEvalSeed(seed), QA_EVAL, splitSeed);
  const qaKey = (q: { story: string; question: string }) => `${q.story} | ${q.question}`;
  return {
    splitSeed,
    seed,
    train,
    eval: ev,
    shared: {
      templates: common(
        train.goals.map((g) => g.template),
        ev.goals.map((g) => g.template),
      ),
      benign: common(
        train.benign.map((t) => t.task),
        ev.benign.map((t) => t.task),
      ),
      qa: common(train.qa.map(qaKey), ev.qa.map(qaKey)),
    },
  };
}
