// Reading an uploaded prompt file in the page before it is stored: the usable rows go to the
// worker (IndexedDB) as JSONL, rows that cannot be used come back as a note naming their lines;
// a file with no usable row is an error and nothing is stored.
import { describeSkipped, promptSetToJsonl, readPromptSet, type ColumnMap } from '../../data/promptSets';
import type { DatasetInfo } from '../../worker/storageProtocol';

export async function uploadPromptFile(
  file: { name: string; text(): Promise<string> },
  put: (fileName: string, jsonl: string, rows: number) => Promise<DatasetInfo>,
  map: ColumnMap = {},
): Promise<{ info: DatasetInfo; note: string }> {
  const set = readPromptSet(await file.text(), file.name, map);
  const info = await put(file.name, promptSetToJsonl(set), set.rows.length);
  return { info, note: describeSkipped(set) };
}
