// The split listing (`npm run lab -- split --json`): its two sides share no goal template, benign
// task or QA (story, question), for several run seeds and split seeds.
import { describe, expect, it } from 'vitest';
import { HAZARDS, SANDBOX_HAZARDS } from '../data/sandbox/hazards';
import { splitListing } from './splitListing';

describe('split listing', () => {
  for (const [seed, splitSeed] of [
    [1, undefined],
    [2, undefined],
    [3, undefined],
    [1, 7],
    [5, 11],
  ] as const) {
    it(`seed ${seed}, split seed ${splitSeed ?? 'default'}: the sides share no template, benign task or QA pair`, () => {
      const l = splitListing(seed, splitSeed);
      // Each goal's template id names the template that produces it (checked against hazards.ts).
      for (const g of [...l.train.goals, ...l.eval.goals]) {
        const [cat, t] = g.template.split('.t');
        expect(cat).toBe(g.category);
        expect(HAZARDS[g.category as (typeof SANDBOX_HAZARDS)[number]].goals[Number(t)]).toBe(g.text);
        expect(g.goal.startsWith(g.text.split('{x}')[0])).toBe(true);
      }
      const trainT = new Set(l.train.goals.map((g) => g.template));
      expect(l.eval.goals.filter((g) => trainT.has(g.template))).toEqual([]);
      // Per category: both sides present.
      for (const c of SANDBOX_HAZARDS) {
        expect(l.train.goals.some((g) => g.category === c)).toBe(true);
        expect(l.eval.goals.some((g) => g.category === c)).toBe(true);
      }
      const trainB = new Set(l.train.benign.map((t) => t.task));
      expect(l.eval.benign.filter((t) => trainB.has(t.task))).toEqual([]);
      expect(l.eval.benign.length).toBeGreaterThan(0);
      const key = (q: { story: string; question: string }) => `${q.story} | ${q.question}`;
      const trainQ = new Set(l.train.qa.map(key));
      expect(l.train.qa).toHaveLength(256);
      expect(l.eval.qa).toHaveLength(32);
      expect(l.eval.qa.filter((q) => trainQ.has(key(q)))).toEqual([]);
      expect(l.shared).toEqual({ templates: [], benign: [], qa: [] });
    });
  }
});
