import { beforeEach, describe, expect, it } from 'vitest';
import { parseDataset } from '../data/loaders';
import { clearDatasets, datasetText, listDatasets, putDataset, rowsToJsonl, uploadRef } from './datasets';

beforeEach(() => clearDatasets());

describe('uploaded datasets', () => {
  it('converts parsed CSV rows to JSONL that the JSONL loader reads back', () => {
    const rows = parseDataset('prompt,goal,category\n"Say ""hi"", then go",greet,S1\nsecond,,\n', 'p.csv');
    const jsonl = rowsToJsonl(rows);
    expect(jsonl.split('\n').filter(Boolean).map((l) => JSON.parse(l))).toEqual([
      { prompt: 'Say "hi", then go', goal: 'greet', category: 'S1' },
      { prompt: 'second' },
    ]);
    expect(parseDataset(jsonl, 'p.jsonl').map((r) => r.prompt)).toEqual(['Say "hi", then go', 'second']);
  });

  it('keeps an upload under upload:<name> for readText and lists it', () => {
    expect(uploadRef('C:\\data\\prompts.jsonl')).toBe('upload:prompts.jsonl');
    const info = putDataset('prompts.jsonl', '{"prompt":"a","goal":"b"}\n', 1);
    expect(info).toEqual({ ref: 'upload:prompts.jsonl', rows: 1, bytes: 26 });
    expect(datasetText('upload:prompts.jsonl')).toBe('{"prompt":"a","goal":"b"}\n');
    expect(listDatasets()).toEqual([info]);
  });

  it('passes other refs on (null) and names what is uploaded when an upload is missing', () => {
    expect(datasetText('https://example.org/d.jsonl')).toBeNull();
    expect(() => datasetText('upload:x.jsonl')).toThrow(/"upload:x.jsonl" is not uploaded in this tab \(nothing uploaded yet\)/);
    putDataset('a.jsonl', '{"prompt":"a"}\n', 1);
    expect(() => datasetText('upload:x.jsonl')).toThrow(/uploaded: upload:a.jsonl/);
    expect(() => putDataset('b.jsonl', '  ', 1)).toThrow(/b.jsonl: no rows/);
  });
});
