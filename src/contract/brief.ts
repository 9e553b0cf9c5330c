// Short renderings of untrusted values for error messages. Every parser a user feeds files to
// (safetensors, config.json, PEFT zips, datasets, run logs, setup links) names the bad value in
// its message; echoing it whole gave million-character messages, and JSON.stringify of a value
// nested 5,000 deep overflowed the stack. This module has no imports so every layer can use it.

/** Most characters a value rendering takes. */
export const BRIEF_CHARS = 60;
/** Most characters of a name (tensor names of real checkpoints run to about 70). */
export const BRIEF_NAME_CHARS = 120;
/** Most characters a parser error message takes (the backstop of clampMessage). */
export const MAX_MESSAGE_CHARS = 500;

const ELLIPSIS = '…';

/** A string cut to `max` characters, saying how long it was when cut. */
export function briefText(s: string, max = BRIEF_CHARS): string {
  if (s.length <= max) return s;
  return `${s.slice(0, max)}${ELLIPSIS} (${s.length} chars)`;
}

/** A name (tensor, field, key) quoted and cut: "model.layers.0…" (12345 chars). */
export function briefName(s: string, max = BRIEF_NAME_CHARS): string {
  return s.length <= max ? JSON.stringify(s) : `${JSON.stringify(s.slice(0, max))}${ELLIPSIS} (${s.length} chars)`;
}

/**
 * A value as a short JSON-like text (small values print as JSON.stringify does): `missing` for
 * undefined, numbers as JS prints them (NaN, Infinity), strings quoted and cut, arrays and
 * objects two levels deep, with their sizes when cut. Never
 * recurses deeper, so any nesting is safe; the result is at most about 2 x `max` characters.
 */
export function brief(v: unknown, max = BRIEF_CHARS): string {
  const out = render(v, 2, max);
  return out.length <= max + 20 ? out : `${out.slice(0, max)}${ELLIPSIS}`;
}

function render(v: unknown, depth: number, max: number): string {
  if (v === undefined) return 'missing';
  if (v === null) return 'null';
  switch (typeof v) {
    case 'string':
      return briefName(v, max);
    case 'number':
      return Object.is(v, -0) ? '-0' : String(v);
    case 'bigint':
      return `${v}n`;
    case 'boolean':
      return String(v);
    case 'function':
      return 'a function';
    case 'symbol':
      return 'a symbol';
  }
  if (Array.isArray(v)) {
    if (v.length === 0) return '[]';
    if (depth === 0) return `[${ELLIPSIS} ${v.length} items]`;
    return list(v.length, (i) => render(v[i], depth - 1, max), '[', ']', max);
  }
  if (ArrayBuffer.isView(v)) return `a ${v.constructor.name} of ${v.byteLength} bytes`;
  const keys = Object.keys(v as object);
  if (keys.length === 0) return '{}';
  if (depth === 0) return `{${ELLIPSIS} ${keys.length} keys}`;
  return list(
    keys.length,
    (i) => `${briefName(keys[i], 20)}:${render((v as Record<string, unknown>)[keys[i]], depth - 1, max)}`,
    '{',
    '}',
    max,
  );
}

function list(n: number, item: (i: number) => string, open: string, close: string, max: number): string {
  let s = open;
  for (let i = 0; i < n; i++) {
    const next = `${i ? ',' : ''}${item(i)}`;
    if (s.length + next.length > max)
      return `${s}${i ? ',' : ''}${ELLIPSIS} ${n} ${open === '[' ? 'items' : 'keys'}${close}`;
    s += next;
  }
  return s + close;
}

/** What a value is, in words: "a string", "an array", "null", "missing". */
export function kindOf(v: unknown): string {
  if (v === undefined) return 'missing';
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  const t = typeof v;
  return t === 'object' ? 'an object' : `a ${t}`;
}

/**
 * The backstop every parser error class applies: a message over MAX_MESSAGE_CHARS keeps its
 * start (file and field) and its end (the expected form) and drops the middle.
 */
export function clampMessage(message: string, max = MAX_MESSAGE_CHARS): string {
  if (message.length <= max) return message;
  const tail = Math.floor(max * 0.3);
  const head = max - tail - 3;
  return `${message.slice(0, head)} ${ELLIPSIS} ${message.slice(message.length - tail)}`;
}

/** A tensor shape as [a, b, c]; a shape of more than 8 dimensions is cut. */
export function briefShape(shape: readonly number[]): string {
  return shape.length <= 8
    ? `[${shape.join(', ')}]`
    : `[${shape.slice(0, 4).join(', ')}, ${ELLIPSIS} ${shape.length} dims]`;
}
