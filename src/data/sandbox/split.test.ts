import { describe, expect, it } from 'vitest';
import { splitRows } from '../split';
import { BENIGN_FAMILIES, solveBenign } from './benign';
import { attackerSft, benignPrompts, harmfulPrompts, qaItems } from './datasets';
import { allGoals, HAZARDS, SANDBOX_HAZARDS } from './hazards';
import type { QaItem } from './qa';
import {
  goalTemplateId,
  qaSide,
  sandboxSplitInfo,
  SANDBOX_SPLIT_SEED,
  splitBenignTasks,
  splitGoals,
  splitTemplates,
} from './split';

describe('sandbox train / eval goal split', () => {
  // The template a goal came from, found from the category's template strings (not from split.ts).
  const templateOf = (c: (typeof SANDBOX_HAZARDS)[number], goal: string): number =>
    HAZARDS[c].goals.findIndex((t) =>
      new RegExp(`^${t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace('\\{x\\}', '.+')}$`).test(goal),
    );

  it('holds out one goal template per category with all its fillers; no template is on both sides', () => {
    // Templates x fillers per category: S1 3x4, S2 3x3, S5 3x4, S7 3x4, S9 2x3, S10 3x3, S11 3x1, S14 2x3.
    const want = {
      S1: [12, 4],
      S2: [9, 3],
      S5: [12, 4],
      S7: [12, 4],
      S9: [6, 3],
      S10: [9, 3],
      S11: [3, 1],
      S14: [6, 3],
    };
    for (const seed of [SANDBOX_SPLIT_SEED, 1, 2, 3, 4]) {
      for (const c of SANDBOX_HAZARDS) {
        const train = splitGoals(c, 'train', seed);
        const ev = splitGoals(c, 'eval', seed);
        expect([allGoals(c).length, ev.length], c).toEqual(want[c]);
        expect([...train, ...ev].sort(), c).toEqual(allGoals(c).sort());
        const evalTemplates = new Set(ev.map((g) => templateOf(c, g)));
        expect(evalTemplates.size, `${c} seed ${seed}`).toBe(1);
        expect(evalTemplates.has(-1)).toBe(false);
        expect(
          train.filter((g) => evalTemplates.has(templateOf(c, g))),
          `${c} seed ${seed}`,
        ).toEqual([]);
        expect(splitTemplates(c, 'eval', seed).map((t) => t.id)).toEqual([`${c}.t${[...evalTemplates][0]}`]);
      }
    }
    // Different split seeds hold out different templates (the split is a real draw).
    const heldOut = (seed: number) => SANDBOX_HAZARDS.map((c) => splitTemplates(c, 'eval', seed)[0].id).join();
    expect(new Set([1, 2, 3, 4].map(heldOut)).size).toBeGreaterThan(1);
    expect(sandboxSplitInfo()).toEqual({ trainSize: 44, evalSize: 25, seed: SANDBOX_SPLIT_SEED });
    expect(goalTemplateId('S1', 'how to ambush Ned')).toBe('S1.t2');
  });

  it('no evaluation goal appears among thousands of training draws, and evaluation draws only evaluation goals', () => {
    const evalGoals = new Set(SANDBOX_HAZARDS.flatMap((c) => splitGoals(c, 'eval')));
    const trainDrawn = new Set([
      ...harmfulPrompts(3000, 1, { split: 'train' }).map((p) => p.goal),
      ...attackerSft(2000, 2, { split: 'train' }).map((e) => e.goal),
    ]);
    expect([...trainDrawn].filter((g) => evalGoals.has(g))).toEqual([]);
    // Every training goal is reachable.
    expect(trainDrawn.size).toBe(44);
    const evalDrawn = new Set(harmfulPrompts(1000, 3, { split: 'eval' }).map((p) => p.goal));
    expect([...evalDrawn].sort()).toEqual([...evalGoals].sort());
    // Without a split every goal is drawn (the sandbox models' SFT data is unchanged).
    expect(new Set(harmfulPrompts(3000, 1).map((p) => p.goal)).size).toBe(69);
  });
});

describe('benign task split', () => {
  it("splits each family's tasks (a quarter held out), and benign draws keep to their side", () => {
    for (const seed of [SANDBOX_SPLIT_SEED, 1, 2]) {
      for (const f of BENIGN_FAMILIES) {
        const train = splitBenignTasks(f, 'train', seed).map((t) => t.text);
        const ev = splitBenignTasks(f, 'eval', seed).map((t) => t.text);
        // arithmetic: 21 x 21 sums + 231 differences hi - lo; 16 words; 8 lands.
        const n = { arithmetic: 672, reverse: 16, capital: 8 }[f];
        expect([train.length + ev.length, ev.length], f).toEqual([n, Math.ceil(n / 4)]);
        expect(new Set([...train, ...ev]).size).toBe(n);
        // Every task's stated answer is what the judge's own solver finds in its text.
        for (const t of [...splitBenignTasks(f, 'eval', seed)]) expect(solveBenign(t.text)?.answer).toBe(t.answer);
      }
    }
    const evalTasks = new Set(BENIGN_FAMILIES.flatMap((f) => splitBenignTasks(f, 'eval').map((t) => t.text)));
    const trainDrawn = benignPrompts(2000, 1, { split: 'train' }).map((p) => p.goal);
    const evalDrawn = benignPrompts(300, 2, { split: 'eval' }).map((p) => p.goal);
    expect(trainDrawn.filter((g) => evalTasks.has(g))).toEqual([]);
    expect(evalDrawn.every((g) => evalTasks.has(g))).toBe(true);
    // Unsplit draws still reach held-out tasks (the models' SFT data is unchanged).
    expect(benignPrompts(2000, 1).some((p) => evalTasks.has(p.goal))).toBe(true);
  });
});

describe('QA split by (story, question)', () => {
  it('training and evaluation draws share no (story, question), and about a quarter of pairs are held out', () => {
    const key = (q: { story: string; question: string }) => `${q.story}|${q.question}`;
    for (const seed of [1, 2, 3]) {
      const train = new Set(qaItems(1500, seed, { split: 'train' }).map(key));
      const ev = qaItems(400, seed + 100, { split: 'eval' }).map(key);
      expect(ev.filter((k) => train.has(k))).toEqual([]);
    }
    const all = qaItems(4000, 9);
    const held = all.filter((q) => qaSide(q) === 'eval').length / all.length;
    expect(held).toBeGreaterThan(0.2);
    expect(held).toBeLessThan(0.3);
    // The side ignores the choice order: the same story and question with choices shuffled stay put.
    const q = all[0];
    const reordered: QaItem = { ...q, choices: [q.choices[3], q.choices[2], q.choices[1], q.choices[0]] };
    expect(qaSide(reordered)).toBe(qaSide(q));
  });
});

describe('row split', () => {
  it('holds out ceil(share x n) rows, seeded, keeping order; at least one, never all', () => {
    const rows = Array.from({ length: 10 }, (_, i) => i);
    const a = splitRows(rows, 0.25, 7);
    expect(a.eval.length).toBe(3);
    expect(a.train.length).toBe(7);
    expect([...a.train, ...a.eval].sort((x, y) => x - y)).toEqual(rows);
    expect(a.eval).toEqual([...a.eval].sort((x, y) => x - y));
    expect(splitRows(rows, 0.25, 7)).toEqual(a);
    expect(splitRows(rows, 0.25, 8).eval).not.toEqual(a.eval);
    expect(a.info).toEqual({ trainSize: 7, evalSize: 3, seed: 7 });
    expect(splitRows([1, 2], 0.25, 0).eval.length).toBe(1);
    expect(splitRows([1, 2], 0.99, 0).train.length).toBe(1);
    expect(splitRows([1], 0.25, 0)).toMatchObject({ train: [1], eval: [] });
  });
});
