import { describe, expect, it } from 'vitest';
import { parseReportsJsonl, ReplayError } from './runStoreJsonl';

const good = (step: number) =>
  JSON.stringify({
    runId: 'r1',
    recipe: 'redteam',
    step,
    time: 1,
    metrics: { 'reward/mean': 0.5, 'loss/policy': null },
    samples: [
      {
        id: 's',
        promptKey: 'k',
        group: 0,
        messages: [
          {
            role: 'defender',
            text: 'no',
            tokens: { ids: [1], pieces: ['no'], logp: [-0.1], entropy: [0.3], top: [[{ piece: 'No', logp: -2 }]] },
          },
        ],
        verdict: { label: 'refusal', unsafe: 0.1, refused: true, success: false },
        reward: 0,
        terms: { harm: 0 },
      },
    ],
    timings: { rollout_ms: 1, score_ms: 2, learn_ms: 3, total_ms: 6 },
  });

function errorOf(text: string): ReplayError {
  try {
    parseReportsJsonl(text, 'run.jsonl');
  } catch (err) {
    if (err instanceof ReplayError) return err;
    throw err;
  }
  throw new Error('no error');
}

describe('JSONL replay parsing', () => {
  it('reads one report per line, skipping blank lines; null metrics become NaN', () => {
    const reports = parseReportsJsonl(`${good(1)}\n\n${good(2)}\n`);
    expect(reports.map((r) => r.step)).toEqual([1, 2]);
    expect(reports[0].metrics['loss/policy']).toBeNaN();
    expect(reports[0].samples[0].messages[0].tokens!.top![0][0].piece).toBe('No');
  });

  it('names the line of invalid JSON', () => {
    const e = errorOf(`${good(1)}\n{oops\n${good(3)}`);
    expect(e.line).toBe(2);
    expect(e.message).toMatch(/^run\.jsonl, line 2: not valid JSON/);
  });

  it('names the line and the field of a report with a wrong shape', () => {
    expect(errorOf(`${good(1)}\n${good(2)}\n{"runId":"r","step":"three","metrics":{}}`).message).toBe(
      'run.jsonl, line 3: field "step" is "three", expected a non-negative integer',
    );
    const bad = JSON.parse(good(4));
    bad.samples[0].messages[0].tokens.entropy = [0.1, 0.2];
    expect(errorOf(JSON.stringify(bad)).message).toBe(
      'run.jsonl, line 1: samples[0].messages[0].tokens.entropy has 2 entries but pieces has 1',
    );
    expect(errorOf('[1,2]').message).toMatch(/line 1: the line is an array/);
    expect(errorOf('{"runId":"r","step":1,"metrics":{"kl/mean":"x"}}').message).toMatch(
      /metrics\["kl\/mean"\] is a string/,
    );
  });

  it('rejects an empty file', () => {
    expect(errorOf('\n\n').message).toMatch(/no StepReport/);
  });
});

describe('JSONL replay: the storage reader step rule and short messages (issue 24)', () => {
  it.each([
    ['-1', '-1'],
    ['1.5', '1.5'],
    ['1e300', '1e+300'],
    ['null', 'null'],
  ])('refuses step %s as the storage layer does', (raw, shown) => {
    const line = good(7).replace('"step":7', `"step":${raw}`);
    expect(errorOf(line).message).toBe(`run.jsonl, line 1: field "step" is ${shown}, expected a non-negative integer`);
  });

  it('a 5,000-level nested or million-character value gives a short ReplayError', () => {
    const deep = '['.repeat(5000) + ']'.repeat(5000);
    const e1 = errorOf(good(1).replace('"runId":"r1"', `"runId":${deep}`));
    expect(e1.message).toBe('run.jsonl, line 1: runId is an array, expected a string');
    const e2 = errorOf(
      good(1)
        .replace('"reward/mean"', `"${'k'.repeat(1_000_000)}"`)
        .replace(':0.5', ':"x"'),
    );
    expect(e2.message.length).toBeLessThan(300);
    expect(e2.message).toMatch(
      /^run\.jsonl, line 1: metrics\["k+"… \(1000000 chars\)\] is a string, expected a number$/,
    );
    const e3 = errorOf(good(1).replace('"role":"defender"', `"role":"${'r'.repeat(1_000_000)}"`));
    expect(e3.message.length).toBeLessThan(400);
  });
});
