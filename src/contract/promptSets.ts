// Prompt sets as public safety and QA sets ship them: JSONL or CSV, with whatever column names
// the set uses. The prompt is read from the first column present of `prompt`, `goal`, `behavior`,
// `instruction`, `question` (HarmBench: behavior; AdvBench: goal; BeaverTails / XSTest: prompt;
// JailbreakBench: goal), or from a chat-format `messages` list; `category` and `is_safe` are kept
// when present. A column map names other columns. A row that cannot be used is reported by line
// and field and left out; the rest load. Only a file with no usable row is an error.
import { brief, briefText } from './brief';
import { DatasetError, parseCsvRecords } from './datasetLoaders';
import { jsonDepth, MAX_ROW_DEPTH } from './jsonDepth';
import { cutText, DEFAULT_PROMPT_BOUND, longPromptProblem, type PromptBound } from './promptBounds';
import type { ChatTurn, PromptInput } from './chat';

/** Column names read as a benign task's reference answer, in order of preference. */
export const REFERENCE_COLUMNS = ['answer', 'reference', 'expected'] as const;

/** Column names read as the prompt, in order of preference. */
export const PROMPT_COLUMNS = ['prompt', 'goal', 'behavior', 'instruction', 'question'] as const;

export interface PromptRow {
  /** One user message, or the turns of a chat-format row. */
  prompt: PromptInput;
  /** The harmful goal when the set gives one apart from the prompt (else the prompt's text). */
  goal: string;
  category: string | null;
  /** The set's own label: true = a safe (benign) prompt; null when it has none. */
  isSafe: boolean | null;
  /** A reference answer (`answer`, `reference` or `expected`), for benign tasks; null when none. */
  reference: string | null;
  /** 1-based line of the row. */
  line: number;
}

export interface SkippedRow {
  line: number;
  field: string | null;
  problem: string;
}

export interface PromptSet {
  file: string;
  rows: PromptRow[];
  skipped: SkippedRow[];
  /** The longest prompt read (characters of all its turns, before any cut) and its line; null when none. */
  longest?: { chars: number; line: number } | null;
  /** How many prompts were cut to the limit (PromptBound `keep-start` / `keep-end`). */
  cut?: number;
}

/** Columns a set names differently: `{ prompt: 'text', category: 'harm_type' }`. */
export interface ColumnMap {
  prompt?: string;
  goal?: string;
  category?: string;
  isSafe?: string;
}

const ROLES = new Set(['system', 'user', 'assistant']);

class RowProblem extends Error {
  constructor(
    readonly field: string | null,
    message: string,
  ) {
    super(message);
  }
}

function readTurns(v: unknown, field: string): ChatTurn[] {
  if (!Array.isArray(v) || v.length === 0)
    throw new RowProblem(field, 'expected a non-empty list of {"role", "content"} turns');
  const turns = v.map((t, i) => {
    const turn = t as { role?: unknown; content?: unknown } | null;
    if (!turn || typeof turn.role !== 'string' || !ROLES.has(turn.role))
      throw new RowProblem(`${field}[${i}].role`, `expected "system", "user" or "assistant", got ${brief(turn?.role)}`);
    if (typeof turn.content !== 'string') throw new RowProblem(`${field}[${i}].content`, 'expected a string');
    // An empty user turn gives the model nothing to answer (and the judge nothing to score).
    if (turn.role === 'user' && turn.content.trim() === '')
      throw new RowProblem(`${field}[${i}].content`, 'empty user turn');
    return { role: turn.role as ChatTurn['role'], content: turn.content };
  });
  if (!turns.some((t) => t.role === 'user')) throw new RowProblem(field, 'the turns hold no user turn');
  // A trailing assistant turn is the set's reference answer, not part of the prompt.
  while (turns.length > 1 && turns[turns.length - 1].role === 'assistant') turns.pop();
  return turns;
}

function readBool(v: unknown, field: string): boolean | null {
  if (v === undefined || v === null || v === '') return null;
  if (typeof v === 'boolean') return v;
  if (v === 1 || v === 0) return v === 1;
  if (typeof v === 'string') {
    const s = v.trim().toLowerCase();
    if (['true', '1', 'yes', 'safe'].includes(s)) return true;
    if (['false', '0', 'no', 'unsafe'].includes(s)) return false;
  }
  throw new RowProblem(field, `expected true or false, got ${brief(v)}`);
}

/** One record (JSON object or CSV row as an object) -> a row, or a RowProblem. */
function readRecord(
  rec: Record<string, unknown>,
  line: number,
  map: ColumnMap,
  bound: PromptBound,
  seen: { longest: { chars: number; line: number } | null; cut: number },
): PromptRow {
  const key = (name: string) => Object.keys(rec).find((k) => k.trim().toLowerCase() === name.toLowerCase());
  const text = (field: string): string | undefined => {
    const v = rec[field];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string')
      throw new RowProblem(field, `expected a string, got ${Array.isArray(v) ? 'a list' : typeof v}`);
    return v.trim() === '' ? undefined : v;
  };
  let prompt: PromptInput | undefined;
  let promptField: string | undefined;
  const messages = map.prompt ? undefined : key('messages');
  if (messages !== undefined && rec[messages] !== undefined && rec[messages] !== '') {
    const raw = rec[messages];
    let v: unknown = raw;
    if (typeof raw === 'string') {
      if (jsonDepth(raw) > MAX_ROW_DEPTH) throw new RowProblem(messages, `nested more than ${MAX_ROW_DEPTH} deep`);
      try {
        v = JSON.parse(raw);
      } catch {
        throw new RowProblem(messages, 'not a JSON list of turns');
      }
    }
    prompt = readTurns(v, messages);
    promptField = messages;
  } else {
    const candidates = map.prompt ? [map.prompt] : PROMPT_COLUMNS;
    for (const c of candidates) {
      const k = key(c);
      const t = k === undefined ? undefined : text(k);
      if (t !== undefined) {
        prompt = t;
        promptField = k;
        break;
      }
    }
  }
  if (prompt === undefined) {
    const want = map.prompt ? `"${map.prompt}"` : `one of ${[...PROMPT_COLUMNS, 'messages'].join(', ')}`;
    throw new RowProblem(map.prompt ?? 'prompt', `no prompt (${want} is missing or empty)`);
  }
  const chars = typeof prompt === 'string' ? prompt.length : prompt.reduce((n, t) => n + t.content.length, 0);
  if (!seen.longest || chars > seen.longest.chars) seen.longest = { chars, line };
  if (chars > bound.maxChars) {
    if (bound.long === 'refuse')
      throw new RowProblem(promptField ?? 'prompt', longPromptProblem(chars, bound.maxChars));
    const side = bound.long;
    // A turn list: each turn cut to its share of the limit.
    const each = typeof prompt === 'string' ? bound.maxChars : Math.floor(bound.maxChars / prompt.length);
    prompt =
      typeof prompt === 'string'
        ? cutText(prompt, each, side)
        : prompt.map((t) => ({ ...t, content: cutText(t.content, each, side) }));
    seen.cut++;
  }
  const goalKey = key(map.goal ?? 'goal');
  const goalText = goalKey !== undefined && goalKey !== promptField ? text(goalKey) : undefined;
  // A goal column goes to the attacker and the judge as text too: the same bound.
  if (goalText !== undefined && goalText.length > bound.maxChars && bound.long === 'refuse')
    throw new RowProblem(goalKey!, longPromptProblem(goalText.length, bound.maxChars));
  const goal =
    goalText !== undefined && bound.long !== 'refuse' ? cutText(goalText, bound.maxChars, bound.long) : goalText;
  const catKey = key(map.category ?? 'category');
  const safeKey = key(map.isSafe ?? 'is_safe');
  const refKey = REFERENCE_COLUMNS.map((c) => key(c)).find(
    (k) => k !== undefined && rec[k] !== undefined && rec[k] !== null && rec[k] !== '',
  );
  const refRaw = refKey === undefined ? undefined : rec[refKey];
  if (refRaw !== undefined && typeof refRaw !== 'string' && typeof refRaw !== 'number')
    throw new RowProblem(refKey!, `expected text, got ${Array.isArray(refRaw) ? 'a list' : typeof refRaw}`);
  const promptText = typeof prompt === 'string' ? prompt : prompt.filter((t) => t.role === 'user').at(-1)!.content;
  return {
    prompt,
    goal: goal ?? promptText,
    category: catKey === undefined ? null : (text(catKey)?.trim() ?? null),
    isSafe: safeKey === undefined ? null : readBool(rec[safeKey], safeKey),
    reference: refRaw === undefined ? null : String(refRaw),
    line,
  };
}

function collect(
  records: { rec: unknown; line: number; parseError?: string }[],
  file: string,
  map: ColumnMap,
  bound: PromptBound,
): PromptSet {
  const rows: PromptRow[] = [];
  const skipped: SkippedRow[] = [];
  const seen = { longest: null as { chars: number; line: number } | null, cut: 0 };
  for (const { rec, line, parseError } of records) {
    if (parseError) {
      skipped.push({ line, field: null, problem: parseError });
      continue;
    }
    if (!rec || typeof rec !== 'object' || Array.isArray(rec)) {
      skipped.push({ line, field: null, problem: 'expected a JSON object' });
      continue;
    }
    try {
      rows.push(readRecord(rec as Record<string, unknown>, line, map, bound, seen));
    } catch (e) {
      if (!(e instanceof RowProblem)) throw e;
      skipped.push({ line, field: e.field, problem: e.message });
    }
  }
  if (rows.length === 0) {
    const first = skipped[0];
    throw new DatasetError(
      file,
      first?.line ?? null,
      first?.field ?? null,
      first ? `no usable row (first problem: ${first.problem})` : 'no rows (the file is empty)',
    );
  }
  return { file, rows, skipped, longest: seen.longest, cut: seen.cut };
}

/** Reads JSONL (first non-blank character "{") or CSV (a header row), whatever the file is called. */
export function readPromptSet(
  text: string,
  file: string,
  map: ColumnMap = {},
  bound: PromptBound = DEFAULT_PROMPT_BOUND,
): PromptSet {
  const src = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  if (src.trimStart().startsWith('{')) {
    const records = src.split(/\r?\n/).flatMap((raw, i) => {
      if (raw.trim() === '') return [];
      if (jsonDepth(raw) > MAX_ROW_DEPTH)
        return [{ rec: null, line: i + 1, parseError: `nested more than ${MAX_ROW_DEPTH} deep` }];
      try {
        return [{ rec: JSON.parse(raw) as unknown, line: i + 1 }];
      } catch (e) {
        return [{ rec: null, line: i + 1, parseError: `not valid JSON (${briefText((e as Error).message, 120)})` }];
      }
    });
    return collect(records, file, map, bound);
  }
  const recs = parseCsvRecords(src, file);
  const header = recs[0]?.fields.map((h) => h.trim());
  if (!header) throw new DatasetError(file, null, null, 'no rows (the file is empty)');
  return collect(
    recs.slice(1).map((r) =>
      r.fields.length !== header.length
        ? {
            rec: null,
            line: r.line,
            parseError: `${r.fields.length} fields, but the header has ${header.length} (quote fields that contain commas)`,
          }
        : { rec: Object.fromEntries(header.map((h, i) => [h, r.fields[i]])), line: r.line },
    ),
    file,
    map,
    bound,
  );
}

/** The harmful rows of a set: rows a set marks safe (is_safe true) are left out and reported. */
export function harmfulRows(set: PromptSet): PromptSet {
  const safe = set.rows.filter((r) => r.isSafe === true);
  if (safe.length === set.rows.length)
    throw new DatasetError(set.file, null, 'is_safe', 'every row is marked safe: no harmful prompt to use');
  return {
    file: set.file,
    rows: set.rows.filter((r) => r.isSafe !== true),
    skipped: [
      ...set.skipped,
      ...safe.map((r) => ({ line: r.line, field: 'is_safe', problem: 'marked safe: not a harmful prompt' })),
    ].sort((a, b) => a.line - b.line),
  };
}

/** "3 rows left out: line 4 (prompt): no prompt ...; ..." for a report or the form; '' when none. */
export function describeSkipped(set: PromptSet, max = 5): string {
  if (set.skipped.length === 0) return '';
  const shown = set.skipped
    .slice(0, max)
    .map((s) => `line ${s.line}${s.field ? ` (${briefText(s.field)})` : ''}: ${briefText(s.problem, 200)}`);
  return `${set.file}: ${set.skipped.length} row(s) left out: ${shown.join('; ')}${set.skipped.length > max ? '; …' : ''}`;
}

/**
 * The usable rows as JSONL in the names this reader prefers ({"prompt"} or {"messages"}, "goal"
 * when it differs from the prompt, "category", "is_safe"): what an upload is stored as, so every
 * recipe reads an upload the same way whatever the file's own layout was.
 */
export function promptSetToJsonl(set: PromptSet): string {
  return (
    set.rows
      .map((r) => {
        const text = typeof r.prompt === 'string' ? r.prompt : null;
        return JSON.stringify({
          ...(text !== null ? { prompt: text } : { messages: r.prompt }),
          ...(r.goal !== text ? { goal: r.goal } : {}),
          ...(r.category !== null ? { category: r.category } : {}),
          ...(r.isSafe !== null ? { is_safe: r.isSafe } : {}),
          ...(r.reference !== null ? { answer: r.reference } : {}),
        });
      })
      .join('\n') + '\n'
  );
}

/** The column names a file has (a CSV header; the keys of the first JSONL objects), for a column map. */
export function columnsOf(text: string, file: string): string[] {
  const src = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  if (src.trimStart().startsWith('{')) {
    const keys = new Set<string>();
    for (const line of src
      .split(/\r?\n/)
      .filter((l) => l.trim() !== '')
      .slice(0, 50)) {
      try {
        const o = JSON.parse(line) as unknown;
        if (o && typeof o === 'object' && !Array.isArray(o)) Object.keys(o).forEach((k) => keys.add(k));
      } catch {
        // A bad line is reported when the rows are read.
      }
    }
    return [...keys];
  }
  return (
    parseCsvRecords(src, file)[0]
      ?.fields.map((h) => h.trim())
      .filter((h) => h !== '') ?? []
  );
}
