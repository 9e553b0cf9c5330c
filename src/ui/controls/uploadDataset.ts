// Reading an uploaded file in the page before it is stored: it is checked as a prompt set
// (contract/promptSets.ts) and stored as it is, so every recipe reads it in its own terms (prompts,
// goals, multi-turn seeds, QA items), with rows that cannot be used named in a note; a file with
// no usable row is an error and nothing is stored. With a column map (columns the reader did not
// recognise), the usable rows are stored in the reader's own names instead.
import { describeSkipped, promptSetToJsonl, readPromptSet, type ColumnMap } from '../../contract/promptSets';
import type { DatasetInfo } from '../../contract/workerApi';

export async function uploadPromptFile(
  file: { name: string; text(): Promise<string> },
  put: (fileName: string, text: string, rows: number) => Promise<DatasetInfo>,
  map: ColumnMap = {},
): Promise<{ info: DatasetInfo; note: string }> {
  const text = await file.text();
  const set = readPromptSet(text, file.name, map);
  const mapped = Object.keys(map).length > 0;
  const info = await put(file.name, mapped ? promptSetToJsonl(set) : text, set.rows.length);
  return { info, note: describeSkipped(set) };
}
