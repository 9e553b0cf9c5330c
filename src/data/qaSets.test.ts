import { describe, expect, it } from 'vitest';
import { readQaSet } from './qaSets';

describe('QA sets', () => {
  it('reads choices lists and A-D columns, answers as index, letter or text, and a passage', () => {
    const j = readQaSet(
      [
        '{"question": "Where is the key?", "choices": ["box", "bag", "desk", "car"], "answer": 1, "context": "Mira put the key in the bag."}',
        '{"question": "What colour?", "choices": ["red", "blue", "green", "black"], "answer": "green"}',
        '{"question": "Two choices?", "choices": ["a", "b"], "answer": 0}',
        '{"question": "Bad answer", "choices": ["a", "b", "c", "d"], "answer": "E"}',
      ].join('\n'),
      'qa.jsonl',
    );
    expect(j.items.map((i) => [i.question, i.correct, i.story])).toEqual([
      ['Where is the key?', 1, 'Mira put the key in the bag.'],
      ['What colour?', 2, ''],
    ]);
    expect(j.lines).toEqual([1, 2]);
    expect(j.skipped).toEqual([
      {
        line: 3,
        field: 'choices',
        problem: 'expected exactly four non-empty choices (a "choices" list, or columns A, B, C, D)',
      },
      { line: 4, field: 'answer', problem: 'expected 0-3, A-D or the text of one choice, got "E"' },
    ]);
    const c = readQaSet('question,A,B,C,D,answer\n"How many cups, in all?",1,2,3,4,D\n', 'mmlu.csv');
    expect(c.items[0]).toMatchObject({ question: 'How many cups, in all?', choices: ['1', '2', '3', '4'], correct: 3 });
  });

  it('a file with no usable row is one error', () => {
    expect(() => readQaSet('{"prompt": "x"}\n', 'p.jsonl')).toThrow(
      "p.jsonl line 1, field 'question': no usable QA row (first problem: missing or empty)",
    );
  });
});
