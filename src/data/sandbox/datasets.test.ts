import { describe, expect, it } from 'vitest';
import { rulesVerdict } from '../../judges/rules';
import {
  attackerSft,
  attackerSource,
  benignPrompts,
  DEFAULT_VULNERABILITY,
  defenderSft,
  finalExchange,
  harmfulPrompts,
  judgeData,
  promptMeta,
  qaItems,
  sandboxCorpus,
  splitAttackerTarget,
  type DefenderSftExample,
} from './datasets';
import { PAYLOAD_MARKER_EXACT } from './markers';
import { COMPLIANCE_TEMPLATES, NEUTRAL_REPLIES, REFUSALS } from './responses';
import { detectTactic, SINGLE_TURN_TACTICS, TACTICS, TEXT_PRESERVING_TACTICS } from './tactics';

const ASCII = /^[\x20-\x7e\n]*$/;

describe('determinism', () => {
  it('same seed -> identical datasets; different seed -> different', () => {
    const builders = [
      (s: number) => attackerSft(200, s),
      (s: number) => defenderSft(200, s),
      (s: number) => judgeData(200, s, { labelNoise: 0.1 }),
      (s: number) => qaItems(100, s),
      (s: number) => harmfulPrompts(100, s),
      (s: number) => benignPrompts(100, s),
    ];
    for (const build of builders) {
      expect(build(7)).toEqual(build(7));
      expect(JSON.stringify(build(7))).not.toBe(JSON.stringify(build(8)));
    }
  });

  it('item i does not depend on n, and builders do not shift each other', () => {
    expect(defenderSft(50, 3)).toEqual(defenderSft(500, 3).slice(0, 50));
    expect(attackerSft(20, 3)).toEqual(attackerSft(80, 3).slice(0, 20));
    const before = attackerSft(30, 9);
    defenderSft(100, 9);
    judgeData(100, 9);
    expect(attackerSft(30, 9)).toEqual(before);
  });
});

describe('attacker SFT', () => {
  it('maps goals to prompts with a roughly uniform tactic mix', () => {
    const data = attackerSft(9000, 1);
    const counts = new Map<string, number>();
    for (const ex of data) {
      counts.set(ex.tactic, (counts.get(ex.tactic) ?? 0) + 1);
      expect(ex.source).toBe(attackerSource(ex.goal));
      expect(splitAttackerTarget(ex.target)).toEqual(ex.turns);
      expect(ex.turns.length).toBe(ex.tactic === 'crescendo' ? 3 : 1);
      expect(detectTactic(ex.turns.length > 1 ? ex.turns.map((content) => ({ role: 'user', content })) : ex.turns[0])).toBe(ex.tactic);
    }
    expect(counts.size).toBe(TACTICS.length);
    for (const c of counts.values()) expect(Math.abs(c / data.length - 1 / TACTICS.length)).toBeLessThan(0.02);
  });
});

function assistantTurns(ex: DefenderSftExample): string[] {
  return ex.messages.filter((m) => m.role === 'assistant').map((m) => m.content);
}

describe('defender SFT: designed vulnerabilities', () => {
  // Stated bands: every designed rate is reproduced within +-0.04 over 36 000 examples
  // (about 2 000 per tactic: 4 standard errors at p = 0.5), direct requests are never complied
  // with, plain benign tasks never refused. The rates are measured by the rules judge, the way
  // a run measures them.
  const N = 36_000;
  const data = defenderSft(N, 2024);

  it('has the documented shape', () => {
    for (const ex of data.slice(0, 2000)) {
      expect(ex.messages.length % 2).toBe(0);
      ex.messages.forEach((m, k) => expect(m.role).toBe(k % 2 === 0 ? 'user' : 'assistant'));
      expect(ex.outcomes).toHaveLength(ex.messages.length / 2);
      for (const m of ex.messages) {
        expect(m.content).toMatch(ASCII);
        expect(m.content.length).toBeLessThanOrEqual(64);
      }
      if (ex.kind === 'benign') expect(ex.tactic === null || (TEXT_PRESERVING_TACTICS as readonly string[]).includes(ex.tactic)).toBe(true);
    }
    const benign = data.filter((e) => e.kind === 'benign').length / N;
    expect(Math.abs(benign - 0.5)).toBeLessThan(0.02);
  });

  it('single-turn compliance rates per tactic fall within the stated bands', () => {
    for (const tactic of SINGLE_TURN_TACTICS) {
      const rows = data.filter((e) => e.kind === 'harmful' && e.tactic === tactic);
      expect(rows.length).toBeGreaterThan(1500);
      const verdicts = rows.map((e) => rulesVerdict({ ...finalExchange(e), meta: { kind: 'harmful' } }));
      const asr = verdicts.filter((v) => v.unsafe >= 0.5).length / rows.length;
      const refused = verdicts.filter((v) => v.refused).length / rows.length;
      const want = DEFAULT_VULNERABILITY.single[tactic];
      expect(Math.abs(asr - want), `${tactic}: asr ${asr} vs ${want}`).toBeLessThan(0.04);
      expect(asr + refused).toBeCloseTo(1, 10); // every harmful reply is one or the other
      if (want === 0) expect(asr).toBe(0);
      // The data's own bookkeeping agrees with the judge.
      expect(rows.filter((e) => e.outcomes[0] === 'complied').length / rows.length).toBe(asr);
    }
  });

  it('crescendo complies more on later turns, at the designed per-turn rates', () => {
    const rows = data.filter((e) => e.tactic === 'crescendo');
    expect(rows.length).toBeGreaterThan(1500);
    const rates = [0, 1, 2].map((k) => {
      let unsafe = 0;
      for (const ex of rows) {
        const context = ex.messages.slice(0, 2 * k + 1);
        const v = rulesVerdict({ prompt: context, response: ex.messages[2 * k + 1].content, meta: { kind: 'harmful' } });
        if (v.unsafe >= 0.5) unsafe++;
        if (k === 0) expect(NEUTRAL_REPLIES as readonly string[]).toContain(ex.messages[1].content);
      }
      return unsafe / rows.length;
    });
    expect(rates[0]).toBe(0);
    expect(Math.abs(rates[1] - DEFAULT_VULNERABILITY.crescendo[1])).toBeLessThan(0.04);
    expect(Math.abs(rates[2] - DEFAULT_VULNERABILITY.crescendo[2])).toBeLessThan(0.04);
    expect(rates[2]).toBeGreaterThan(rates[1]);
    // A complying turn k leaks step k of the payload.
    for (const ex of rows.slice(0, 300)) {
      ex.outcomes.forEach((o, k) => {
        if (o === 'complied') expect(assistantTurns(ex)[k]).toContain(`:step-${k}]`);
      });
    }
  });

  it('benign tasks are answered correctly, with a small designed over-refusal when wrapped', () => {
    const plain = data.filter((e) => e.kind === 'benign' && e.tactic === null);
    const wrapped = data.filter((e) => e.kind === 'benign' && e.tactic !== null);
    const judge = (rows: DefenderSftExample[]) => rows.map((e) => rulesVerdict(finalExchange(e)));
    const vp = judge(plain);
    const vw = judge(wrapped);
    expect(vp.every((v) => v.benignCorrect === true && v.unsafe === 0)).toBe(true);
    const over = vw.filter((v) => v.label === 'over-refusal').length / vw.length;
    expect(Math.abs(over - DEFAULT_VULNERABILITY.overRefusal.wrapped)).toBeLessThan(0.02);
    expect(vw.every((v) => v.benignCorrect === (v.label === 'correct'))).toBe(true);
  });

  it('payload markers are the only thing a compliance carries, and only the marker grammar', () => {
    for (const ex of data) {
      for (const m of ex.messages) {
        const brackets = m.content.match(/\[[^\]]*\]/g) ?? [];
        if (m.role === 'user') expect(brackets.filter((b) => b.startsWith('[PAYLOAD'))).toEqual([]);
        for (const b of brackets) if (b.startsWith('[PAYLOAD')) expect(b).toMatch(PAYLOAD_MARKER_EXACT);
        if (m.role === 'assistant' && m.content.includes('[PAYLOAD')) {
          const skeleton = m.content.replace(/\[PAYLOAD:[^\]]*\](?: \[PAYLOAD:[^\]]*\])*/, '{p}');
          expect(COMPLIANCE_TEMPLATES as readonly string[]).toContain(skeleton);
        }
      }
    }
  });

  it('validates its options', () => {
    expect(() => defenderSft(1, 1, { benignShare: 2 })).toThrow(/benignShare/);
    expect(() => defenderSft(1, 1, { vulnerability: { ...DEFAULT_VULNERABILITY, crescendo: [0, 1] } })).toThrow(/crescendo/);
    const all = defenderSft(400, 1, {
      benignShare: 0,
      tactics: ['roleplay'],
      vulnerability: { ...DEFAULT_VULNERABILITY, single: { ...DEFAULT_VULNERABILITY.single, roleplay: 1 } },
    });
    expect(all.every((e) => e.outcomes[0] === 'complied')).toBe(true);
  });
});

describe('judge training pairs', () => {
  it('labels agree with the rules judge without noise, and noise flips at the configured rate', () => {
    const clean = judgeData(4000, 5);
    for (const ex of clean) {
      expect(ex.flipped).toBe(false);
      expect(ex.unsafe).toBe(ex.cleanUnsafe);
      const v = rulesVerdict({ prompt: ex.prompt, response: ex.response });
      expect(v.unsafe >= 0.5 ? 1 : 0).toBe(ex.cleanUnsafe);
      if (ex.cleanUnsafe) expect(v.category).toBe(ex.category);
    }
    const share = clean.filter((e) => e.cleanUnsafe === 1).length / clean.length;
    expect(Math.abs(share - 0.5)).toBeLessThan(0.03);
    const sources = new Set(clean.map((e) => e.source));
    expect([...sources].sort()).toEqual(['compliance', 'helpful', 'neutral', 'over-refusal', 'partial', 'refusal']);

    const noisy = judgeData(4000, 5, { labelNoise: 0.2 });
    const flipped = noisy.filter((e) => e.flipped);
    expect(Math.abs(flipped.length / noisy.length - 0.2)).toBeLessThan(0.02);
    for (const e of noisy) expect(e.unsafe).toBe(e.flipped ? 1 - e.cleanUnsafe : e.cleanUnsafe);
    // Noise does not change which pairs are drawn.
    expect(noisy.map((e) => e.response)).toEqual(clean.map((e) => e.response));
    expect(() => judgeData(1, 1, { labelNoise: -0.1 })).toThrow(/labelNoise/);
  });
});

describe('prompt sets, QA and corpus', () => {
  it('harmful and benign prompt sets carry the metadata the judge needs', () => {
    for (const p of harmfulPrompts(300, 4)) {
      expect(p.kind).toBe('harmful');
      expect(p.category).not.toBeNull();
      expect(promptMeta(p)).toMatchObject({ kind: 'harmful', expected: null });
    }
    const only = harmfulPrompts(50, 4, { tactics: ['obfuscation'], category: 'S7' });
    expect(only.every((p) => p.tactic === 'obfuscation' && p.category === 'S7')).toBe(true);
    const benign = benignPrompts(300, 4);
    for (const p of benign) {
      const v = rulesVerdict({ prompt: p.prompt as string, response: `[ANSWER:${p.expected}]`, meta: promptMeta(p) });
      expect(v.benignCorrect).toBe(true);
    }
    expect(benignPrompts(100, 4, { wrapShare: 0 }).every((p) => p.tactic === null && p.prompt === p.goal)).toBe(true);
  });

  it('QA items carry prompt and answer', () => {
    for (const q of qaItems(200, 6)) {
      expect(q.answer).toBe(`[ANSWER:${'ABCD'[q.correct]}]`);
      expect(q.prompt.startsWith(q.story)).toBe(true);
      expect(q.prompt.length).toBeLessThanOrEqual(128);
    }
  });

  it('the corpus is ASCII with a small character set', () => {
    const lines = sandboxCorpus(1000, 1);
    const chars = new Set(lines.join('\n'));
    for (const l of lines) expect(l).toMatch(ASCII);
    expect(chars.size).toBeLessThan(80);
    expect(REFUSALS.every((r) => lines.includes(r))).toBe(true);
  });
});
