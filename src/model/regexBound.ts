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

/** Why `source` is refused, or null when it is accepted. */
export function catastrophicRegex(source: string): string | null {
  if (source.length > MAX_REGEX_CHARS)
    return `it is ${source.length} characters long, over the ${MAX_REGEX_CHARS}-character limit`;
  // One frame per open group: whether its body so far repeats without bound or alternates.
  const frames: { unbounded: boolean; alt: boolean; start: number }[] = [{ unbounded: false, alt: false, start: 0 }];
  // What the quantifier after the current position would apply to: a group just closed, or an atom.
  let last: { unbounded: boolean; alt: boolean; start: number } | null = null;
  let i = 0;
  while (i < source.length) {
    const c = source[i];
    const top = frames[frames.length - 1];
    if (c === '\\') {
      last = { unbounded: false, alt: false, start: i };
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
      last = { unbounded: false, alt: false, start };
      continue;
    }
    if (c === '(') {
      frames.push({ unbounded: false, alt: false, start: i });
      last = null;
      i++;
      continue;
    }
    if (c === ')') {
      const closed = frames.length > 1 ? frames.pop()! : top;
      last = closed;
      frames[frames.length - 1].unbounded ||= closed.unbounded;
      i++;
      continue;
    }
    if (c === '|') {
      top.alt = true;
      last = null;
      i++;
      continue;
    }
    const q = /^(?:[*+]|\{\d*,\}|\{\d+(?:,\d+)?\})/.exec(source.slice(i, i + 24));
    if (q) {
      const unbounded = q[0] === '*' || q[0] === '+' || q[0].endsWith(',}');
      if (unbounded && last && (last.unbounded || last.alt))
        return `the repeated group at character ${last.start} (${JSON.stringify(source.slice(last.start, Math.min(i + q[0].length, last.start + 40)))}) holds ${last.unbounded ? 'an unbounded repeat' : 'an alternation'} itself (nested unbounded quantifiers take exponential time)`;
      if (unbounded) top.unbounded = true;
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
    last = { unbounded: false, alt: false, start: i };
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
