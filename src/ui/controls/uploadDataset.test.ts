import { describe, expect, it } from 'vitest';
import { uploadPromptFile } from './uploadDataset';

const file = (name: string, text: string) => ({ name, text: async () => text });

describe('reading an upload in the page', () => {
  it('stores the file as it is (each recipe reads it in its own terms), with the rows left out named', async () => {
    const stored: [string, string, number][] = [];
    const put = async (n: string, t: string, rows: number) => (
      stored.push([n, t, rows]),
      { ref: `upload:${n}`, rows, bytes: t.length }
    );
    const qa =
      '{"question": "Where is the key?", "choices": ["box", "bag", "desk", "car"], "answer": "B"}\n{"title": "x"}\n';
    const r = await uploadPromptFile(file('qa.jsonl', qa), put);
    expect(stored).toEqual([['qa.jsonl', qa, 1]]);
    expect(r.note).toMatch(/^qa\.jsonl: 1 row\(s\) left out: line 2 \(prompt\)/);
    // With a column map the usable rows are stored in the reader's names.
    await uploadPromptFile(file('odd.csv', 'id,text\n1,hello there\n'), put, { prompt: 'text' });
    expect(stored[1]).toEqual(['odd.csv', '{"prompt":"hello there"}\n', 1]);
    await expect(uploadPromptFile(file('none.csv', 'id\n1\n'), put)).rejects.toThrow(
      /none\.csv line 2, field 'prompt': no usable row/,
    );
    expect(stored).toHaveLength(2);
  });
});
