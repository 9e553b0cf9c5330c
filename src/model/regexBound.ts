// Regexes a model repo hands the tokenizer (a `Split` pre-tokenizer's or a `Replace`
// normaliser's `pattern.Regex`) run in the JS engine, which backtracks: `(a+)+$` took 11.8 s on 24
// characters and never ended on 32; `(a|aa)+$` the same. @huggingface/tokenizers compiles them
// with `new RegExp` and offers no other engine, and a running regex cannot be interrupted inside
// its thread, so they are checked before the tokenizer is built: a group repeated without bound
// (`*`, `+`, `{n,}`) may not itself hold an unbounded repeat or an alternation, the two shapes that
// make the match time exponential in the input. The regexes of real tokenizers (GPT-2, Llama 3,
// Qwen2, SmolLM2) have neither: their alternations and `+` sit at the top level.

/** Longest regex read from a tokenizer file (real ones are under 300 characters). */
export const MAX_REGEX_CHARS = 4096;

/**
 * Most unbounded repeats one branch may chain (`\s*[\r\n]+` is 2): k of them over overlapping
 * characters backtrack in O(n^k) (the fuzz test found six `a+` in a row taking over a second on
 * 24 characters). The tokenizers above chain at most 2.
 */
export const MAX_CHAINED_REPEATS = 3;

interface Frame {
  /** The body holds an unbounded repeat somewhere. */
  unbounded: boolean;
  /** The body alternates (`|`). */
  alt: boolean;
  /** Unbounded repeats chained in the current branch, and the most of any branch so far. */
  seq: number;
  maxSeq: number;
  start: number;
}

/** Why `source` is refused, or null when it is accepted. */
export function catastrophicRegex(source: string): string | null {
  if (source.length > MAX_REGEX_CHARS)
    return `it is ${source.length} characters long, over the ${MAX_REGEX_CHARS}-character limit`;
  const frame = (start: number): Frame => ({ unbounded: false, alt: false, seq: 0, maxSeq: 0, start });
  const frames: Frame[] = [frame(0)];
  // What a quantifier at the current position applies to: a group just closed, an atom, or nothing.
  let last: { group: Frame | null; start: number } | null = null;
  const chained = (top: Frame) =>
    top.seq > MAX_CHAINED_REPEATS
      ? `it chains ${top.seq} unbounded repeats in one branch, over the limit of ${MAX_CHAINED_REPEATS} (time polynomial of that degree)`
      : null;
  let i = 0;
  while (i < source.length) {
    const c = source[i];
    const top = frames[frames.length - 1];
    if (c === '\\') {
      last = { group: null, start: i };
      i += 2;
      continue;
    }
    if (c === '[') {
      const start = i;
      i++;
      if (source[i] === '^') i++;
      if (source[i] === ']') i++;
      while (i < source.length && source[i] !== ']') i += source[i] === '\\' ? 2 : 1;
      i++;
      last = { group: null, start };
      continue;
    }
    if (c === '(') {
      frames.push(frame(i));
      last = null;
      i++;
      continue;
    }
    if (c === ')') {
      const closed = frames.length > 1 ? frames.pop()! : frame(i);
      closed.maxSeq = Math.max(closed.maxSeq, closed.seq);
      const parent = frames[frames.length - 1];
      parent.unbounded ||= closed.unbounded;
      parent.seq += closed.maxSeq;
      last = { group: closed, start: closed.start };
      const why = chained(parent);
      if (why) return why;
      i++;
      continue;
    }
    if (c === '|') {
      top.alt = true;
      top.maxSeq = Math.max(top.maxSeq, top.seq);
      top.seq = 0;
      last = null;
      i++;
      continue;
    }
    const q = /^(?:[*+]|\{(\d*),\}|\{(\d+)(?:,(\d+))?\})/.exec(source.slice(i, i + 24));
    if (q) {
      const unbounded = q[0] === '*' || q[0] === '+' || q[0].endsWith(',}');
      const g = last?.group ?? null;
      if (unbounded && g && (g.unbounded || g.alt))
        return `the repeated group at character ${g.start} (${JSON.stringify(source.slice(g.start, Math.min(i + q[0].length, g.start + 40)))}) holds ${g.unbounded ? 'an unbounded repeat' : 'an alternation'} itself (nested unbounded quantifiers take exponential time)`;
      if (last && unbounded) {
        top.unbounded = true;
        top.seq += 1;
      } else if (g && !unbounded) {
        // `(a+){3}` is `a+a+a+`: the group's chain counts once per further copy.
        const copies = Number(q[3] ?? q[2] ?? 1);
        top.seq += g.maxSeq * Math.max(0, Math.min(copies, 1000) - 1);
      }
      const why = chained(top);
      if (why) return why;
      i += q[0].length;
      if (source[i] === '?' || source[i] === '+') i++; // lazy or possessive mark
      last = null;
      continue;
    }
    if (c === '?') {
      i++;
      last = null;
      continue;
    }
    last = { group: null, start: i };
    i++;
  }
  return null;
}

/**
 * Every `pattern.Regex` of a tokenizer.json, with its field path
 * (`pre_tokenizer.pretokenizers[1].pattern.Regex`). Walks at most 64 levels deep.
 */
export function tokenizerRegexes(json: unknown): { field: string; source: string }[] {
  const out: { field: string; source: string }[] = [];
  const walk = (v: unknown, path: string, depth: number) => {
    if (depth > 64 || v === null || typeof v !== 'object') return;
    if (Array.isArray(v)) {
      v.forEach((x, i) => walk(x, `${path}[${i}]`, depth + 1));
      return;
    }
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      // The vocabulary and merges are data, not patterns: skip them (a vocabulary has ~100k keys).
      if (path === 'model' && (k === 'vocab' || k === 'merges')) continue;
      if (k === 'added_tokens') continue;
      const at = path ? `${path}.${k}` : k;
      if (k === 'Regex' && typeof x === 'string') out.push({ field: at, source: x });
      else walk(x, at, depth + 1);
    }
  };
  walk(json, '', 0);
  return out;
}
