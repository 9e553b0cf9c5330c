import { describe, expect, it } from 'vitest';
import { brief, briefName, briefText, clampMessage, kindOf, MAX_MESSAGE_CHARS } from './brief';

describe('brief: short renderings of untrusted values', () => {
  it('renders small values as JSON-like text', () => {
    expect(brief(undefined)).toBe('missing');
    expect(brief(null)).toBe('null');
    expect(brief(NaN)).toBe('NaN');
    expect(brief(-Infinity)).toBe('-Infinity');
    expect(brief(-0)).toBe('-0');
    expect(brief('a"b')).toBe('"a\\"b"');
    const small = [1, [2, 3], { a: true, b: 'x' }];
    expect(brief(small)).toBe(JSON.stringify(small));
    expect(brief({})).toBe('{}');
  });

  it('cuts long strings and lists, saying how long they were', () => {
    expect(brief('x'.repeat(1000))).toBe(`"${'x'.repeat(60)}"… (1000 chars)`);
    expect(briefText('abcdef', 3)).toBe('abc… (6 chars)');
    expect(briefName('abcdef', 3)).toBe('"abc"… (6 chars)');
    const many = brief(Array.from({ length: 100_000 }, (_, i) => i));
    expect(many).toMatch(/^\[0,1,2,.*… 100000 items\]$/);
    expect(many.length).toBeLessThan(90);
  });

  it('stops two levels down, so 5,000-level nesting renders in constant space', () => {
    let deep: unknown = 1;
    for (let i = 0; i < 5000; i++) deep = [deep];
    expect(brief(deep)).toBe('[[[… 1 items]]]');
    let obj: unknown = 1;
    for (let i = 0; i < 5000; i++) obj = { k: obj };
    expect(brief(obj)).toBe('{"k":{"k":{… 1 keys}}}');
  });

  it('kindOf and clampMessage', () => {
    expect([kindOf(undefined), kindOf(null), kindOf([]), kindOf({}), kindOf('s'), kindOf(1)]).toEqual([
      'missing',
      'null',
      'an array',
      'an object',
      'a string',
      'a number',
    ]);
    const m = `file.json: field "x" ${'y'.repeat(10_000)} expected a number`;
    const c = clampMessage(m);
    expect(c.length).toBeLessThanOrEqual(MAX_MESSAGE_CHARS);
    expect(c.startsWith('file.json: field "x"')).toBe(true);
    expect(c.endsWith('expected a number')).toBe(true);
    expect(clampMessage('short')).toBe('short');
  });
});
