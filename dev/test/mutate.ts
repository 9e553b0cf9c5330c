// Generators of hostile input for the parsers' property tests (issue 24): byte mutations of valid
// files (bit flips, truncation, inserted bytes, overwritten lengths), hostile JSON values as text
// (extreme numbers, deep nesting, long strings, wrong types), and the totality check every parser
// must pass: a value, or one error of the parser's own class with a bounded message.
import fc from 'fast-check';
import { MAX_MESSAGE_CHARS } from '../../src/contract/brief';

export type ByteMutation =
  | { kind: 'flip'; at: number; bit: number }
  | { kind: 'truncate'; at: number }
  | { kind: 'insert'; at: number; bytes: Uint8Array }
  | { kind: 'u32'; at: number; value: number };

export const byteMutation: fc.Arbitrary<ByteMutation> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('insert' as const),
      at: fc.nat(),
      bytes: fc.uint8Array({ minLength: 1, maxLength: 16 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('u32' as const),
      at: fc.nat(),
      value: fc.constantFrom(0, 1, 0xff, 0xffff, 0x7fffffff, 0xfffffffe, 0xffffffff),
    }),
  },
);

/** A copy of `b` with the mutation applied (positions wrap around the length). */
export function mutateBytes(b: Uint8Array, m: ByteMutation): Uint8Array {
  const n = Math.max(1, b.length);
  const at = m.at % n;
  switch (m.kind) {
    case 'flip': {
      const out = b.slice();
      if (out.length) out[at] ^= 1 << m.bit;
      return out;
    }
    case 'truncate':
      return b.slice(0, at);
    case 'insert': {
      const out = new Uint8Array(b.length + m.bytes.length);
      out.set(b.subarray(0, at));
      out.set(m.bytes, at);
      out.set(b.subarray(at), at + m.bytes.length);
      return out;
    }
    case 'u32': {
      const out = b.slice();
      if (out.length >= 4) new DataView(out.buffer).setUint32(Math.min(at, out.length - 4), m.value, true);
      return out;
    }
  }
}

/** Numbers that break naive checks: out of range, not integers, denormal, past 2^53, negative zero. */
export const extremeNumber = fc.constantFrom(
  -1,
  0,
  -0,
  0.5,
  1.5,
  1e-310,
  -1e-310,
  5e-324,
  1e300,
  -1e300,
  2 ** 31,
  2 ** 32,
  2 ** 53,
  2 ** 53 + 2,
  1e15,
  Number.MAX_VALUE,
);

/** Extreme numbers as JSON text, including tokens JSON does not have (NaN, Infinity) and overflowing literals. */
export const extremeNumberText = fc.oneof(
  extremeNumber.map((x) => (Object.is(x, -0) ? '-0' : String(x))),
  fc.constantFrom('1e309', '-1e309', 'NaN', 'Infinity', '-Infinity', '1e-400', '00', '01', '.5', '1.', '+1', '0x10'),
);

/** A value nested 1,000-6,000 levels deep, as JSON text (JSON.stringify of it would overflow). */
export const deepText = fc
  .record({ depth: fc.integer({ min: 1000, max: 6000 }), obj: fc.boolean() })
  .map(({ depth, obj }) =>
    obj ? '{"a":'.repeat(depth) + '1' + '}'.repeat(depth) : '['.repeat(depth) + ']'.repeat(depth),
  );

/** A string long enough to flood a message if echoed whole. */
export const longString = fc.integer({ min: 10_000, max: 1_000_000 }).map((n) => 'x'.repeat(n));

/** Any hostile JSON value as text: extremes, deep nesting, long strings, wrong types, small JSON. */
export const hostileJsonText: fc.Arbitrary<string> = fc.oneof(
  extremeNumberText,
  deepText,
  longString.map((s) => JSON.stringify(s)),
  fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
  fc.constantFrom('null', 'true', '""', '[]', '{}', '"[object Object]"', '{"__proto__":1}'),
);

/** A hostile JSON value as a JS value (what JSON.parse of hostileJsonText gives, when it parses). */
export const hostileValue: fc.Arbitrary<unknown> = hostileJsonText.map((t) => {
  try {
    return JSON.parse(t) as unknown;
  } catch {
    return t === 'NaN' ? NaN : t === 'Infinity' ? Infinity : t === '-Infinity' ? -Infinity : t;
  }
});

/**
 * Runs `fn`: returns its value, or the error when it is an instance of `Err` with a message of at
 * most MAX_MESSAGE_CHARS. Any other exception (a RangeError, a TypeError, a stack overflow) fails.
 */
export function total<T>(
  fn: () => T,
  Err: abstract new (...args: never[]) => Error,
): { ok: true; value: T } | { ok: false; error: Error } {
  try {
    return { ok: true, value: fn() };
  } catch (e) {
    if (!(e instanceof Err))
      throw new Error(
        `expected a value or a ${Err.name}, got ${(e as Error)?.name}: ${String((e as Error)?.message).slice(0, 300)}`,
      );
    if (e.message.length > MAX_MESSAGE_CHARS)
      throw new Error(`${Err.name} message of ${e.message.length} chars: ${e.message.slice(0, 200)}…`);
    return { ok: false, error: e };
  }
}

/** The same for async parsers. */
export async function totalAsync<T>(
  fn: () => Promise<T>,
  Err: abstract new (...args: never[]) => Error,
): Promise<{ ok: true; value: T } | { ok: false; error: Error }> {
  try {
    return { ok: true, value: await fn() };
  } catch (e) {
    if (!(e instanceof Err))
      throw new Error(
        `expected a value or a ${Err.name}, got ${(e as Error)?.name}: ${String((e as Error)?.message).slice(0, 300)}`,
      );
    if (e.message.length > MAX_MESSAGE_CHARS)
      throw new Error(`${Err.name} message of ${e.message.length} chars: ${e.message.slice(0, 200)}…`);
    return { ok: false, error: e };
  }
}

/** Property-run settings: seeded so CI is reproducible, modest so each parser takes seconds. */
export const RUNS = (numRuns: number): fc.Parameters<unknown> => ({ seed: 24, numRuns });
