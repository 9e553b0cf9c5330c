// Loaders for user-uploaded prompt datasets: JSONL (one object per line) and CSV (header row).
// Each row becomes a DatasetRow; a bad row stops the load with one DatasetError naming the file,
// the 1-based line and the field, e.g.  prompts.csv line 7, field 'prompt': empty.
//
// JSONL: {"prompt": "...", "category": "S9", "goal": "..."}; `prompt` may also be a list of chat
//        turns [{"role": "user", "content": "..."}, ...] (multi-turn attacks); blank lines skip.
// CSV:   RFC 4180: a header row naming a `prompt` column (and optionally `category`, `goal`;
//        case-insensitive), comma separated, fields optionally in double quotes, quoted fields
//        may hold commas, newlines and doubled quotes (""); CRLF or LF; blank lines skip.

import { brief, briefText, clampMessage, kindOf } from './brief';
import type { ChatTurn, PromptInput } from './chat';
import { jsonDepth, MAX_ROW_DEPTH } from './jsonDepth';

export interface DatasetRow {
  readonly prompt: PromptInput;
  readonly category?: string;
  readonly goal?: string;
  /** 1-based line of the row in the file (first line of a multi-line CSV record). */
  readonly line: number;
}

export class DatasetError extends Error {
  readonly file: string;
  readonly line: number | null;
  readonly field: string | null;
  constructor(file: string, line: number | null, field: string | null, problem: string) {
    const where = [briefText(file, 200), line !== null ? `line ${line}` : null].filter(Boolean).join(' ');
    super(clampMessage(`${where}${field !== null ? `, field '${briefText(field)}'` : ''}: ${problem}`));
    this.name = 'DatasetError';
    this.file = file;
    this.line = line;
    this.field = field;
  }
}

/** Strips one leading byte-order mark (Excel and Notepad write one). */
export function stripBom(text: string): string {
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

const ROLES = new Set(['system', 'user', 'assistant']);

function readPrompt(value: unknown, file: string, line: number): PromptInput {
  if (value === undefined || value === null)
    throw new DatasetError(file, line, 'prompt', 'missing (every row needs a prompt)');
  if (typeof value === 'string') {
    if (value.trim() === '') throw new DatasetError(file, line, 'prompt', 'empty');
    return value;
  }
  if (Array.isArray(value)) {
    if (value.length === 0) throw new DatasetError(file, line, 'prompt', 'empty list of turns');
    const turns: ChatTurn[] = value.map((t, i) => {
      const turn = t as { role?: unknown; content?: unknown } | null;
      if (typeof turn !== 'object' || turn === null || Array.isArray(turn)) {
        throw new DatasetError(file, line, `prompt[${i}]`, 'expected a turn {"role": ..., "content": ...}');
      }
      if (typeof turn.role !== 'string' || !ROLES.has(turn.role)) {
        throw new DatasetError(
          file,
          line,
          `prompt[${i}].role`,
          `expected "user", "assistant" or "system", got ${brief(turn.role)}`,
        );
      }
      if (typeof turn.content !== 'string')
        throw new DatasetError(file, line, `prompt[${i}].content`, `expected a string, got ${brief(turn.content)}`);
      // An empty user turn gives the model nothing to answer (and the judge nothing to score).
      if (turn.role === 'user' && turn.content.trim() === '')
        throw new DatasetError(file, line, `prompt[${i}].content`, 'empty user turn');
      return { role: turn.role as ChatTurn['role'], content: turn.content };
    });
    if (!turns.some((t) => t.role === 'user'))
      throw new DatasetError(file, line, 'prompt', 'the turns hold no user turn');
    return turns;
  }
  throw new DatasetError(file, line, 'prompt', `expected a string or a list of turns, got ${brief(value)}`);
}

function readOptional(
  obj: Record<string, unknown>,
  field: 'category' | 'goal',
  file: string,
  line: number,
): string | undefined {
  const v = obj[field];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string')
    throw new DatasetError(file, line, field, `expected a string, got ${kindOf(v)} ${brief(v)}`);
  return v.trim() === '' ? undefined : v;
}

export function parseJsonl(text: string, file = 'dataset.jsonl'): DatasetRow[] {
  const rows: DatasetRow[] = [];
  const lines = stripBom(text).split(/\r?\n/);
  lines.forEach((raw, i) => {
    const line = i + 1;
    if (raw.trim() === '') return;
    if (jsonDepth(raw) > MAX_ROW_DEPTH)
      throw new DatasetError(file, line, null, `nested more than ${MAX_ROW_DEPTH} deep`);
    let obj: unknown;
    try {
      obj = JSON.parse(raw);
    } catch (err) {
      throw new DatasetError(
        file,
        line,
        null,
        `not valid JSON (${briefText(err instanceof Error ? err.message : String(err), 120)})`,
      );
    }
    if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) {
      throw new DatasetError(file, line, null, `expected a JSON object with a "prompt" field, got ${brief(obj)}`);
    }
    const rec = obj as Record<string, unknown>;
    const row: { prompt: PromptInput; category?: string; goal?: string; line: number } = {
      prompt: readPrompt(rec.prompt, file, line),
      line,
    };
    const category = readOptional(rec, 'category', file, line);
    const goal = readOptional(rec, 'goal', file, line);
    if (category !== undefined) row.category = category;
    if (goal !== undefined) row.goal = goal;
    rows.push(row);
  });
  if (rows.length === 0) throw new DatasetError(file, null, null, 'no rows (the file is empty)');
  return rows;
}

/** One CSV record: its fields and the 1-based line it starts on. */
export interface CsvRecord {
  readonly fields: string[];
  readonly line: number;
}

/**
 * Split CSV text into records (RFC 4180). Throws DatasetError for an unterminated quoted field
 * or text after a closing quote, naming the field by the first record (the header).
 */
export function parseCsvRecords(text: string, file = 'dataset.csv'): CsvRecord[] {
  const src = stripBom(text);
  const records: CsvRecord[] = [];
  let fields: string[] = [];
  let field = '';
  let line = 1;
  let recordLine = 1;
  let i = 0;
  let quoted = false; // the current field started with a quote
  let inQuotes = false; // inside the quotes of the current field
  let quoteLine = 1;
  const fieldName = () => records[0]?.fields[fields.length]?.trim() || `column ${fields.length + 1}`;
  const endRecord = () => {
    fields.push(field);
    if (!(fields.length === 1 && fields[0] === '' && !quoted)) records.push({ fields, line: recordLine });
    fields = [];
    field = '';
    quoted = false;
  };
  while (i < src.length) {
    const c = src[i];
    if (inQuotes) {
      if (c === '"') {
        if (src[i + 1] === '"') {
          field += '"';
          i += 2;
          continue;
        }
        inQuotes = false;
        i++;
        const next = src[i];
        if (next !== undefined && next !== ',' && next !== '\n' && next !== '\r') {
          throw new DatasetError(
            file,
            line,
            fieldName(),
            `text after a closing quote (write a quote inside a quoted field as "")`,
          );
        }
        continue;
      }
      if (c === '\n') line++;
      field += c;
      i++;
      continue;
    }
    if (c === '"' && field === '' && !quoted) {
      quoted = true;
      inQuotes = true;
      quoteLine = line;
      i++;
      continue;
    }
    if (c === ',') {
      fields.push(field);
      field = '';
      quoted = false;
      i++;
      continue;
    }
    if (c === '\r' || c === '\n') {
      endRecord();
      i += c === '\r' && src[i + 1] === '\n' ? 2 : 1;
      line++;
      recordLine = line;
      continue;
    }
    field += c; // a stray quote inside an unquoted field is kept literally
    i++;
  }
  if (inQuotes) throw new DatasetError(file, quoteLine, fieldName(), 'unterminated quoted field (a " is never closed)');
  if (field !== '' || fields.length > 0 || quoted) endRecord();
  return records;
}

export function parseCsv(text: string, file = 'dataset.csv'): DatasetRow[] {
  const records = parseCsvRecords(text, file);
  const first = records[0];
  if (!first) throw new DatasetError(file, null, null, 'no rows (the file is empty)');
  const header = first.fields.map((h) => h.trim());
  const lower = header.map((h) => h.toLowerCase());
  const col = (name: string) => lower.indexOf(name);
  const iPrompt = col('prompt');
  if (iPrompt < 0)
    throw new DatasetError(
      file,
      first.line,
      'prompt',
      `the header has no prompt column (columns: ${briefText(header.join(', '), 120) || '(none)'})`,
    );
  const iCategory = col('category');
  const iGoal = col('goal');
  const rows: DatasetRow[] = [];
  for (const rec of records.slice(1)) {
    if (rec.fields.length !== header.length) {
      throw new DatasetError(
        file,
        rec.line,
        null,
        `${rec.fields.length} fields, but the header has ${header.length} (quote fields that contain commas)`,
      );
    }
    const prompt = rec.fields[iPrompt];
    if (prompt.trim() === '') throw new DatasetError(file, rec.line, header[iPrompt], 'empty');
    const row: { prompt: string; category?: string; goal?: string; line: number } = { prompt, line: rec.line };
    if (iCategory >= 0 && rec.fields[iCategory].trim() !== '') row.category = rec.fields[iCategory].trim();
    if (iGoal >= 0 && rec.fields[iGoal].trim() !== '') row.goal = rec.fields[iGoal];
    rows.push(row);
  }
  if (rows.length === 0) throw new DatasetError(file, null, null, 'no rows below the header');
  return rows;
}

/** Parse by file extension (.jsonl / .ndjson / .csv); other names are sniffed from the first character. */
export function parseDataset(text: string, file: string): DatasetRow[] {
  const lower = file.toLowerCase();
  if (lower.endsWith('.jsonl') || lower.endsWith('.ndjson')) return parseJsonl(text, file);
  if (lower.endsWith('.csv')) return parseCsv(text, file);
  return stripBom(text).trimStart().startsWith('{') ? parseJsonl(text, file) : parseCsv(text, file);
}

/** Read and parse an uploaded file (File or any Blob with a name). */
export async function loadDatasetFile(file: Blob & { readonly name: string }): Promise<DatasetRow[]> {
  return parseDataset(await file.text(), file.name);
}
