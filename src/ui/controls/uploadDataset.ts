// Reading an uploaded file in the page before it is stored: it is checked as a prompt set
// (contract/promptSets.ts) and stored as it is, so every recipe reads it in its own terms (prompts,
// goals, multi-turn seeds, QA items), with rows that cannot be used named in a note; a file with
// no usable row is an error and nothing is stored. With a column map (columns the reader did not
// recognise), the usable rows are stored in the reader's own names instead.
import { describeSkipped, promptSetToJsonl, readPromptSet, type ColumnMap } from '../../contract/promptSets';
import { DEFAULT_PROMPT_BOUND, type PromptBound } from '../../contract/promptBounds';
import type { DatasetInfo } from '../../contract/workerApi';

export async function uploadPromptFile(
  file: { name: string; text(): Promise<string> },
  put: (fileName: string, text: string, rows: number, longestPrompt?: number) => Promise<DatasetInfo>,
  map: ColumnMap = {},
  bound: PromptBound = DEFAULT_PROMPT_BOUND,
): Promise<{ info: DatasetInfo; note: string }> {
  const text = await file.text();
  const set = readPromptSet(text, file.name, map, bound);
  // Mapped columns or cut prompts: the usable rows as read are stored, not the file as it was.
  const rewritten = Object.keys(map).length > 0 || (set.cut ?? 0) > 0;
  // The longest prompt as stored (after any cut): what the fit check counts.
  const longest = set.rows.reduce(
    (m, r) =>
      Math.max(m, typeof r.prompt === 'string' ? r.prompt.length : r.prompt.reduce((n, t) => n + t.content.length, 0)),
    0,
  );
  const info = await put(file.name, rewritten ? promptSetToJsonl(set) : text, set.rows.length, longest);
  const notes = [describeSkipped(set)];
  if (set.longest)
    notes.push(
      `longest prompt: ${set.longest.chars.toLocaleString('en-US')} characters (line ${set.longest.line})` +
        (set.cut
          ? `; ${set.cut} prompt(s) cut to ${bound.maxChars.toLocaleString('en-US')} characters, keeping the ${bound.long === 'keep-start' ? 'start' : 'end'}`
          : ''),
    );
  return { info, note: notes.filter(Boolean).join(' · ') };
}
