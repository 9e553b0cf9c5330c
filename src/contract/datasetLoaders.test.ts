import { describe, expect, it } from 'vitest';
import { DatasetError, loadDatasetFile, parseCsv, parseCsvRecords, parseDataset, parseJsonl } from './datasetLoaders';

function errorOf(fn: () => unknown): DatasetError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(DatasetError);
    return err as DatasetError;
  }
  throw new Error('expected a DatasetError');
}

describe('JSONL loader', () => {
  it('reads prompt, category, goal and chat-turn prompts; skips blank lines', () => {
    const text = [
      '{"prompt": "How to hurt Tom.", "category": "S1", "goal": "how to hurt Tom"}',
      '',
      '{"prompt": "What is 2 + 2?", "extra": 1}',
      '{"prompt": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}, {"role": "user", "content": "now"}]}',
    ].join('\r\n');
    const rows = parseJsonl(`\ufeff${text}\n`, 'p.jsonl');
    expect(rows).toEqual([
      { prompt: 'How to hurt Tom.', category: 'S1', goal: 'how to hurt Tom', line: 1 },
      { prompt: 'What is 2 + 2?', line: 3 },
      {
        prompt: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: 'hello' },
          { role: 'user', content: 'now' },
        ],
        line: 4,
      },
    ]);
  });

  it('names the line and field of a bad row', () => {
    const ok = '{"prompt": "a"}';
    const cases: [string, number | null, string | null, RegExp][] = [
      [`${ok}\n{"goal": "x"}`, 2, 'prompt', /missing/],
      [`${ok}\n${ok}\n{"prompt": "  "}`, 3, 'prompt', /empty/],
      [`${ok}\n{"prompt": 5}`, 2, 'prompt', /string or a list of turns/],
      [`{"prompt": "a", "category": 9}`, 1, 'category', /expected a string/],
      [`{"prompt": "a", "goal": ["x"]}`, 1, 'goal', /expected a string, got an array/],
      [`${ok}\n{"prompt": "a",}`, 2, null, /not valid JSON/],
      [`${ok}\n[1, 2]`, 2, null, /JSON object/],
      [`{"prompt": [{"role": "bot", "content": "x"}]}`, 1, 'prompt[0].role', /"user"/],
      [`{"prompt": [{"role": "user", "content": 3}]}`, 1, 'prompt[0].content', /string/],
      [`{"prompt": [{"role": "assistant", "content": "x"}]}`, 1, 'prompt', /no user turn/],
      ['\n\n', null, null, /no rows/],
    ];
    for (const [text, line, field, re] of cases) {
      const err = errorOf(() => parseJsonl(text, 'up.jsonl'));
      expect(err.line, text).toBe(line);
      expect(err.field, text).toBe(field);
      expect(err.file).toBe('up.jsonl');
      expect(err.message).toMatch(re);
      if (line !== null) expect(err.message).toContain(`up.jsonl line ${line}`);
      if (field !== null) expect(err.message).toContain(`field '${field}'`);
    }
    expect(errorOf(() => parseJsonl('{"x":1}', 'a.jsonl')).message).toBe(
      "a.jsonl line 1, field 'prompt': missing (every row needs a prompt)",
    );
  });
});

describe('CSV loader', () => {
  it('handles quoted fields with commas, newlines and escaped quotes; CRLF; header case', () => {
    const text = [
      'id,Prompt,Category,goal',
      '1,"Say ""hi"", then leave",S1,',
      '2,"line one',
      'line two",,g2',
      '',
      '3,plain text,S9 ,how to x',
    ].join('\r\n');
    const rows = parseCsv(text, 'd.csv');
    expect(rows).toEqual([
      { prompt: 'Say "hi", then leave', category: 'S1', line: 2 },
      { prompt: 'line one\r\nline two', goal: 'g2', line: 3 },
      { prompt: 'plain text', category: 'S9', goal: 'how to x', line: 6 },
    ]);
    expect(parseCsvRecords('a,b\n"x\ny",z\n')).toEqual([
      { fields: ['a', 'b'], line: 1 },
      { fields: ['x\ny', 'z'], line: 2 },
    ]);
    expect(parseCsvRecords('prompt\n""\n').map((r) => r.fields)).toEqual([['prompt'], ['']]);
    expect(parseCsv('prompt\nsay 5" tall\n')[0].prompt).toBe('say 5" tall'); // stray quote kept
  });

  it('names the line and field of a bad row', () => {
    const cases: [string, number | null, string | null, RegExp][] = [
      ['id,text\n1,a', 1, 'prompt', /no prompt column \(columns: id, text\)/],
      ['prompt,goal\na,b\nc', 3, null, /1 fields, but the header has 2/],
      ['prompt,goal\na,b\nc,d,e', 3, null, /3 fields/],
      ['goal,prompt\nx,\n', 2, 'prompt', /empty/],
      ['goal,prompt\nx,"  "\n', 2, 'prompt', /empty/],
      ['goal,prompt\na,b\nx,"never closed\nmore', 3, 'prompt', /unterminated/],
      ['goal,prompt\n"a"b,c', 2, 'goal', /after a closing quote/],
      ['prompt\n', null, null, /no rows below the header/],
      ['', null, null, /empty/],
    ];
    for (const [text, line, field, re] of cases) {
      const err = errorOf(() => parseCsv(text, 'up.csv'));
      expect(err.line, text).toBe(line);
      expect(err.field, text).toBe(field);
      expect(err.message).toMatch(re);
      if (line !== null) expect(err.message).toContain(`up.csv line ${line}`);
    }
  });
});

describe('dataset dispatch', () => {
  it('picks the parser by extension or content; loads a File', async () => {
    expect(parseDataset('{"prompt":"a"}', 'x.JSONL')).toEqual([{ prompt: 'a', line: 1 }]);
    expect(parseDataset('prompt\na', 'x.csv')).toEqual([{ prompt: 'a', line: 2 }]);
    expect(parseDataset('{"prompt":"a"}', 'upload')).toEqual([{ prompt: 'a', line: 1 }]);
    expect(parseDataset('prompt\nb', 'upload.txt')).toEqual([{ prompt: 'b', line: 2 }]);
    const file = new File(['{"prompt":"hi","category":"S2"}\n'], 'u.ndjson');
    expect(await loadDatasetFile(file)).toEqual([{ prompt: 'hi', category: 'S2', line: 1 }]);
  });
});

describe('datasets: hostile rows (issue 24)', () => {
  const err = (fn: () => unknown): DatasetError => {
    try {
      fn();
    } catch (e) {
      expect(e).toBeInstanceOf(DatasetError);
      return e as DatasetError;
    }
    throw new Error('expected a DatasetError');
  };

  it('an empty user turn is refused, naming the turn', () => {
    const e = err(() =>
      parseJsonl(
        '{"prompt": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "  "}]}',
        'mt.jsonl',
      ),
    );
    expect(e.message).toBe("mt.jsonl line 1, field 'prompt[1].content': empty user turn");
    // An empty assistant turn is a different matter (a prefill); it stays allowed.
    expect(
      parseJsonl('{"prompt": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": ""}]}'),
    ).toHaveLength(1);
  });

  it('a byte-order mark is stripped (JSONL and CSV)', () => {
    expect(parseJsonl('\uFEFF{"prompt": "a"}')[0].prompt).toBe('a');
    expect(parseCsv('\uFEFFprompt\nb')[0].prompt).toBe('b');
  });

  it('a 5,000-level nested or 3-million-character value gives a short message', () => {
    const deep = '['.repeat(5000) + ']'.repeat(5000);
    // Refused by depth before anything reads the value (a row is at most MAX_ROW_DEPTH deep).
    expect(err(() => parseJsonl(`{"prompt": "a", "goal": ${deep}}`, 'd.jsonl')).message).toBe(
      'd.jsonl line 1: nested more than 32 deep',
    );
    const shallow = '['.repeat(30) + ']'.repeat(30);
    expect(err(() => parseJsonl(`{"prompt": {"a": ${shallow}}}`, 'd.jsonl')).message).toMatch(
      /field 'prompt': expected a string or a list of turns, got \{"a":\[\[… 1 items\]\]\}$/,
    );
    const wide = `${'x'.repeat(3_000_000)}\nrow`;
    const e = err(() => parseCsv(wide, 'wide.csv'));
    expect(e.message.length).toBeLessThan(400);
    expect(e.message).toMatch(
      /^wide\.csv line 1, field 'prompt': the header has no prompt column \(columns: x+… \(3000000 chars\)\)$/,
    );
    const role = err(() => parseJsonl(`{"prompt": [{"role": "${'u'.repeat(1_000_000)}", "content": "x"}]}`));
    expect(role.message.length).toBeLessThan(400);
  });
});
