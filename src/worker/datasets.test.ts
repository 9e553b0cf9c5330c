import 'fake-indexeddb/auto';
import { beforeEach, describe, expect, it } from 'vitest';
import { DatasetStore } from '../storage/datasets';
import { idbKv } from '../storage/kv';
import {
  datasetRefErrors,
  datasetText,
  deleteDataset,
  listDatasets,
  putDataset,
  uploadRef,
  useDatasetStore,
} from './datasets';

let dbNo = 0;
beforeEach(() => useDatasetStore(new DatasetStore({ kv: idbKv(`worker-datasets-${dbNo++}`) })));

describe('uploaded datasets', () => {
  it('keeps an upload under upload:<name> for readText, lists it and deletes it', async () => {
    expect(uploadRef('C:\\data\\prompts.jsonl')).toBe('upload:prompts.jsonl');
    const info = await putDataset('prompts.jsonl', '{"prompt":"a","goal":"b"}\n', 1);
    expect(info).toEqual({ ref: 'upload:prompts.jsonl', rows: 1, bytes: 52 });
    expect(await datasetText('upload:prompts.jsonl')).toBe('{"prompt":"a","goal":"b"}\n');
    expect(await listDatasets()).toEqual([info]);
    expect(await deleteDataset('upload:prompts.jsonl')).toBe(true);
    expect(await listDatasets()).toEqual([]);
    expect(await deleteDataset('upload:prompts.jsonl')).toBe(false);
  });

  it('passes other refs on (null) and names what is stored when an upload is missing', async () => {
    expect(await datasetText('https://example.org/d.jsonl')).toBeNull();
    await expect(datasetText('upload:x.jsonl')).rejects.toThrow(
      /"upload:x.jsonl" is not stored in this browser \(no uploads stored\)/,
    );
    await putDataset('a.jsonl', '{"prompt":"a"}\n', 1);
    await expect(datasetText('upload:x.jsonl')).rejects.toThrow(/stored: upload:a.jsonl/);
    await expect(putDataset('b.jsonl', '  ', 1)).rejects.toThrow(/b.jsonl: no rows/);
  });
});

describe('dataset values at Start (issue 40)', () => {
  it('a value that is neither "sandbox", an upload nor an http(s) URL is refused by field', () => {
    expect(
      datasetRefErrors({
        dataset: 'prompts.csv',
        benignDataset: 'upload:tasks.jsonl',
        judge: 'rules',
        other: 'x.csv',
      }),
    ).toEqual({
      dataset:
        'field "dataset": "prompts.csv" is neither an upload (upload:<file name>) nor an http(s) URL; "sandbox" is the built-in data',
    });
    expect(datasetRefErrors({ dataset: 'sandbox', benignDataset: 'https://example.org/b.jsonl' })).toEqual({});
    expect(datasetRefErrors({ dataset: 'x'.repeat(100_000) }).dataset.length).toBeLessThan(250);
  });
});
