// Property tests of the parsers issue 40 found throwing foreign errors: the hub-id parser threw
// URIError on 133 of 2,000 fuzzed ids; the picker's model-reference reader threw it during render
// (a blank page); the prompt-set reader overflowed the stack on a deeply nested value and accepted
// empty user turns; a link's integer fields took 1e29. Each property: every input gives a value or
// the parser's own error with a message of at most MAX_MESSAGE_CHARS (`total`), and what is
// accepted meets the format's rules. Seeded with RUNS so failures reproduce.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_MESSAGE_CHARS } from '../../src/contract/brief';
import { DatasetError } from '../../src/contract/datasetLoaders';
import { InvalidModelIdError, parseHubRef, validateModelId } from '../../src/contract/hubRef';
import { ModelSourceError } from '../../src/contract/modelSource';
import { describeSkipped, readPromptSet } from '../../src/contract/promptSets';
import { unknownModelError } from '../../src/contract/sandboxModels';
import { int } from '../../src/contract/schema';
import { decodeSetup } from '../../src/store/setupUrl';
import { readModelRef } from '../../src/ui/controls/fieldKinds';
import { deepText, hostileJsonText, longString, RUNS, total } from './mutate';

/** Percent escapes, valid and not, the way a pasted or hand-edited URL carries them. */
const escape = fc.oneof(
  fc.constantFrom('%', '%E0', '%E0%A4%A', '%ZZ', '%C3%A9', '%20', '%2F', '%FF%FE', '%ED%A0%80'),
  fc.integer({ min: 0, max: 255 }).map((b) => `%${b.toString(16).padStart(2, '0')}`),
);
const segment = fc
  .array(fc.oneof(fc.string({ maxLength: 6 }), escape, fc.constantFrom('a', 'b-c', 'x.y', '..', '@', '/')), {
    maxLength: 5,
  })
  .map((parts) => parts.join(''));
const hubInput = fc.oneof(
  fc.tuple(segment, segment).map(([a, b]) => `${a}/${b}`),
  fc.tuple(segment, segment, segment).map(([a, b, r]) => `${a}/${b}@${r}`),
  fc
    .tuple(
      fc.constantFrom('https://huggingface.co/', 'http://h/', 'https://x.co/'),
      fc.array(segment, { maxLength: 5 }),
    )
    .map(([host, segs]) => host + segs.join('/')),
  fc.string(),
  longString,
);

describe('hub id parser: a HubRef or an InvalidModelIdError / ModelSourceError, never a URIError', () => {
  it('fuzzed ids, revisions and hub URLs with malformed escapes', () => {
    fc.assert(
      fc.property(hubInput, (s) => {
        const r = total(() => parseHubRef(s), ModelSourceError);
        // What it accepts is a valid id (validateModelId holds again) and a revision with no spaces.
        if (r.ok) {
          expect(validateModelId(r.value.id)).toBe(r.value.id);
          expect(r.value.revision).not.toMatch(/\s/);
        }
      }),
      RUNS(2000),
    );
  });

  it("the issue's URL names the escape in the parser's own error", () => {
    const r = total(() => parseHubRef('https://huggingface.co/a/b/resolve/%E0%A4%A/'), InvalidModelIdError);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.error.message).toMatch(/malformed percent escape "%E0%A4%A"/);
  });
});

describe("model reference reader (the picker's, run during render): never throws", () => {
  const ref = fc.oneof(
    hubInput,
    fc.tuple(segment, segment, segment).map(([a, b, r]) => `https://huggingface.co/${a}/${b}/resolve/${r}/`),
    segment.map((f) => `http://localhost:5173/local-models/${f}/`),
  );
  it('every reference reads as a picker choice; an undecodable one as a URL that unknownModelError names', () => {
    fc.assert(
      fc.property(ref, (s) => {
        const c = readModelRef(s);
        expect(['sandbox', 'hub', 'url', 'local']).toContain(c.mode);
        const m = unknownModelError(s);
        if (m !== null) expect(m.length).toBeLessThanOrEqual(MAX_MESSAGE_CHARS);
        let decodes = true;
        try {
          decodeURIComponent(s);
        } catch {
          decodes = false;
        }
        if (!decodes && /^https?:/.test(s)) expect(m).toMatch(/malformed percent escape/);
      }),
      RUNS(1000),
    );
  });
});

describe('prompt-set reader: rows or a DatasetError; no empty user turn, no deep nesting, short messages', () => {
  const turn = fc.record({
    role: fc.oneof(fc.constantFrom('user', 'assistant', 'system'), fc.string(), longString),
    content: fc.oneof(fc.string(), fc.constantFrom('', ' ', '\n\t', 'hello')),
  });
  const cell = fc.oneof(
    fc.string(),
    fc.constantFrom('', ' ', 'true', 'safe', 'no'),
    hostileJsonText,
    longString,
    deepText.map((t) => ({ raw: t })),
  );
  const row = fc.oneof(
    fc.record({ messages: fc.array(turn, { maxLength: 4 }), is_safe: fc.option(cell) }),
    fc.record({ prompt: cell, is_safe: fc.option(cell), category: fc.option(cell) }),
  );
  const text = (r: unknown): string => {
    // A {raw} cell is JSON text spliced in as is (a value nested 100,000 deep).
    const raws: string[] = [];
    const json = JSON.stringify(r, (_k, v: unknown) => {
      if (v && typeof v === 'object' && 'raw' in v) {
        raws.push((v as { raw: string }).raw);
        return `@@RAW${raws.length - 1}@@`;
      }
      return v;
    });
    return json.replace(/"@@RAW(\d+)@@"/g, (_m, i: string) => raws[Number(i)]);
  };
  it('fuzzed JSONL rows', () => {
    fc.assert(
      fc.property(fc.array(row, { minLength: 1, maxLength: 4 }), (rows) => {
        const src = rows.map(text).join('\n');
        const r = total(() => readPromptSet(src, 'p.jsonl'), DatasetError);
        if (!r.ok) return;
        for (const p of r.value.rows) {
          if (typeof p.prompt === 'string') expect(p.prompt.trim()).not.toBe('');
          else for (const t of p.prompt) if (t.role === 'user') expect(t.content.trim()).not.toBe('');
        }
        expect(describeSkipped(r.value).length).toBeLessThanOrEqual(5 * 300 + MAX_MESSAGE_CHARS);
      }),
      RUNS(300),
    );
  });

  it('the examples of the issue: an empty user turn, a value nested 100,000 deep, a 200 KB role', () => {
    const empty = readPromptSet('{"messages":[{"role":"user","content":" "}]}\n{"prompt":"ok"}', 'e.jsonl');
    expect(empty.rows.map((r) => r.line)).toEqual([2]);
    expect(empty.skipped).toEqual([{ line: 1, field: 'messages[0].content', problem: 'empty user turn' }]);
    const deep = `{"prompt":"a","is_safe":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    const d = total(() => readPromptSet(deep, 'd.jsonl'), DatasetError);
    expect(!d.ok && d.error.message).toMatch(
      /d\.jsonl line 1: no usable row \(first problem: nested more than 32 deep\)/,
    );
    const role = total(
      () => readPromptSet(`{"messages":[{"role":"${'r'.repeat(200_000)}","content":"x"}]}`, 'r.jsonl'),
      DatasetError,
    );
    expect(!role.ok && role.error.message.length).toBeLessThan(300);
  });
});

describe('setup links: integers are safe integers', () => {
  const schemas = { redteam: { groupSize: int(8, 'G', { min: 2 }) } };
  it('an integer past 2^53 - 1 is refused on its field and as max steps', () => {
    for (const big of ['1e29', '100000000000000000000000000000', '9007199254740993']) {
      const d = decodeSetup(`?recipe=redteam&steps=${big}&c.groupSize=${big}`, schemas)!;
      expect(d.errors.groupSize).toMatch(/must be an integer >= 2/);
      expect(d.errors.steps).toMatch(/max steps must be a positive integer/);
    }
    expect(decodeSetup('?recipe=redteam&steps=9007199254740991&c.groupSize=9007199254740991', schemas)!.errors).toEqual(
      {},
    );
  });
});
