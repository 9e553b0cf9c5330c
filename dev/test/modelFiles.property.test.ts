// Property tests of what a model repo hands the lab as text that runs (issue 40): tokenizer.json
// regexes and chat templates. Every input is accepted or refused with the parser's own error (a
// message of at most MAX_MESSAGE_CHARS), and what is accepted stays bounded: an accepted regex
// matches a 24-character adversarial input at once (`(a+)+$` took 11.8 s), an accepted template
// renders within its budgets. Seeded with RUNS so failures reproduce.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_MESSAGE_CHARS } from '../../src/contract/brief';
import { ChatTemplate, ChatTemplateError } from '../../src/model/chat';
import { catastrophicRegex } from '../../src/model/regexBound';
import { RUNS, total } from './mutate';

const regexText = fc
  .array(
    fc.oneof(
      fc.constantFrom(
        '(',
        ')',
        '(?:',
        '|',
        '*',
        '+',
        '?',
        '{2}',
        '{1,}',
        '{0,3}',
        'a',
        'aa',
        'b',
        '\\s',
        '[ab]',
        '.',
        '$',
        '^',
        '\\1',
      ),
      // Whole groups: the shapes that backtrack once repeated again.
      fc.constantFrom('(a+)', '(a|aa)', '(a*)', '(?:a|a)', '(?:\\s+)'),
    ),
    { maxLength: 14 },
  )
  .map((parts) => parts.join(''));

describe('tokenizer regex check: total, and what it accepts runs in bounded time', () => {
  it('every pattern gets null or a short reason; an accepted one matches "aaa…a!" at once', () => {
    const inputs = ['a'.repeat(24) + '!', 'ab'.repeat(12) + '!', ' '.repeat(24) + 'x'];
    fc.assert(
      fc.property(regexText, (src) => {
        const why = catastrophicRegex(src);
        if (why !== null) {
          expect(why.length).toBeLessThanOrEqual(MAX_MESSAGE_CHARS);
          return;
        }
        let re: RegExp;
        try {
          re = new RegExp(src, 'u');
        } catch {
          return; // the library refuses what the engine cannot compile
        }
        const t0 = performance.now();
        for (const s of inputs) re.exec(s);
        // Exponential backtracking on 24 characters takes seconds; every accepted pattern is far under.
        expect(performance.now() - t0, src).toBeLessThan(1000);
      }),
      RUNS(3000),
    );
  });
});

const loop = fc.oneof(
  fc.constantFrom('m in messages', 'i in range(3)', 'i in range(1000000000)', 'i in range(20000)', 'c in "abc"'),
  fc.integer({ min: 0, max: 200_000 }).map((n) => `i in range(${n})`),
);
const templateBody: fc.Arbitrary<string> = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: 'small' },
    fc.constantFrom('x', '{{ m.content if m is defined else "" }}', '{{ messages[0].content }}', '{{ "ab" * 3 }}'),
    fc.tuple(loop, tie('node')).map(([l, b]) => `{% for ${l} %}${b}{% endfor %}`),
    fc.tuple(tie('node'), tie('node')).map(([a, b]) => `${a}${b}`),
    fc.constantFrom('{% if', '{{', '{% for x in %}', '{% endfor %}', '{{ raise_exception("no") }}'),
  ),
})).node;

describe('chat templates: a render or a ChatTemplateError, within the budgets', () => {
  it('fuzzed templates with loops, nesting and broken syntax', () => {
    fc.assert(
      fc.property(templateBody, (src) => {
        const r = total(() => {
          const t = new ChatTemplate(src, { model: 'fuzz', origin: 'chat_template.jinja' });
          return t.render([{ role: 'user', content: 'hello' }], { addGenerationPrompt: true });
        }, ChatTemplateError);
        if (r.ok) expect(r.value.length).toBeLessThanOrEqual(2 * 5 + 1_000_000);
      }),
      RUNS(150),
    );
  });
});
