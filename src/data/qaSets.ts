// Multiple-choice QA sets as public QA sets ship them (MMLU, QuALITY, ARC-style rows), for the
// MinMax game: a `question`, four `choices` (a JSON list, or columns A B C D), the `answer` (index
// 0-3, letter A-D, or the text of the right choice), and an optional passage (`story`, `context`,
// `article`, `passage`). A row that cannot be used is named by line and field and left out.
import { DatasetError, parseCsvRecords } from '../contract/datasetLoaders';
import type { SkippedRow } from '../contract/promptSets';
import type { QaFamily, QaItem } from './sandbox/qa';

export const PASSAGE_COLUMNS = ['story', 'context', 'article', 'passage'] as const;

export interface QaSet {
  file: string;
  items: QaItem[];
  /** 1-based line of each item. */
  lines: number[];
  skipped: SkippedRow[];
}

/** The family uploaded items carry (the sandbox's are count / location / color). */
export const UPLOADED_QA_FAMILY = 'upload' as QaFamily;

class RowProblem extends Error {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message);
  }
}

function readItem(rec: Record<string, unknown>): QaItem {
  const key = (name: string) => Object.keys(rec).find((k) => k.trim().toLowerCase() === name);
  const str = (k: string | undefined): string | undefined => {
    if (k === undefined) return undefined;
    const v = rec[k];
    if (v === undefined || v === null || v === '') return undefined;
    if (typeof v !== 'string' && typeof v !== 'number')
      throw new RowProblem(k, `expected text, got ${Array.isArray(v) ? 'a list' : typeof v}`);
    return String(v);
  };
  const qk = key('question');
  const question = str(qk);
  if (question === undefined || question.trim() === '') throw new RowProblem('question', 'missing or empty');
  let choices: unknown = undefined;
  const ck = key('choices');
  if (ck !== undefined) {
    choices = rec[ck];
    if (typeof choices === 'string') {
      try {
        choices = JSON.parse(choices);
      } catch {
        throw new RowProblem(ck, 'not a JSON list of four choices');
      }
    }
  } else if (['a', 'b', 'c', 'd'].every((l) => key(l) !== undefined)) {
    choices = ['a', 'b', 'c', 'd'].map((l) => str(key(l)));
  }
  if (
    !Array.isArray(choices) ||
    choices.length !== 4 ||
    !choices.every((c) => (typeof c === 'string' && c.trim() !== '') || typeof c === 'number')
  ) {
    throw new RowProblem(
      ck ?? 'choices',
      'expected exactly four non-empty choices (a "choices" list, or columns A, B, C, D)',
    );
  }
  const four = choices.map(String) as [string, string, string, string];
  const ak = key('answer');
  const raw = ak === undefined ? undefined : rec[ak];
  let correct = -1;
  if (typeof raw === 'number' || (typeof raw === 'string' && /^\s*[0-3]\s*$/.test(raw))) correct = Number(raw);
  else if (typeof raw === 'string' && /^\s*[A-Da-d]\s*$/.test(raw)) correct = 'ABCD'.indexOf(raw.trim().toUpperCase());
  else if (typeof raw === 'string')
    correct = four.findIndex((c) => c.trim().toLowerCase() === raw.trim().toLowerCase());
  if (!(correct >= 0 && correct <= 3))
    throw new RowProblem('answer', `expected 0-3, A-D or the text of one choice, got ${JSON.stringify(raw)}`);
  const pk = PASSAGE_COLUMNS.map((c) => key(c)).find((k) => k !== undefined && str(k) !== undefined);
  return { family: UPLOADED_QA_FAMILY, story: pk === undefined ? '' : str(pk)!, question, choices: four, correct };
}

/** Reads JSONL (first non-blank character "{") or CSV QA rows; a file with no usable row throws. */
export function readQaSet(text: string, file: string): QaSet {
  const src = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const records: { rec: Record<string, unknown> | null; line: number; problem?: string }[] = [];
  if (src.trimStart().startsWith('{')) {
    src.split(/\r?\n/).forEach((raw, i) => {
      if (raw.trim() === '') return;
      try {
        const o = JSON.parse(raw) as unknown;
        if (o && typeof o === 'object' && !Array.isArray(o))
          records.push({ rec: o as Record<string, unknown>, line: i + 1 });
        else records.push({ rec: null, line: i + 1, problem: 'expected a JSON object' });
      } catch (e) {
        records.push({ rec: null, line: i + 1, problem: `not valid JSON (${(e as Error).message})` });
      }
    });
  } else {
    const recs = parseCsvRecords(src, file);
    const header = recs[0]?.fields.map((h) => h.trim()) ?? [];
    for (const r of recs.slice(1)) {
      if (r.fields.length !== header.length)
        records.push({
          rec: null,
          line: r.line,
          problem: `${r.fields.length} fields, but the header has ${header.length}`,
        });
      else records.push({ rec: Object.fromEntries(header.map((h, i) => [h, r.fields[i]])), line: r.line });
    }
  }
  const set: QaSet = { file, items: [], lines: [], skipped: [] };
  for (const r of records) {
    if (!r.rec) {
      set.skipped.push({ line: r.line, field: null, problem: r.problem! });
      continue;
    }
    try {
      set.items.push(readItem(r.rec));
      set.lines.push(r.line);
    } catch (e) {
      if (!(e instanceof RowProblem)) throw e;
      set.skipped.push({ line: r.line, field: e.field, problem: e.message });
    }
  }
  if (set.items.length === 0) {
    const f = set.skipped[0];
    throw new DatasetError(
      file,
      f?.line ?? null,
      f?.field ?? null,
      f ? `no usable QA row (first problem: ${f.problem})` : 'no rows (the file is empty)',
    );
  }
  return set;
}
