// Python text the exporter writes: literals of JSON-safe values, and the data header a shipped .py
// file gets above its unchanged body (the body is a real file under python/ or a recipe's folder).

/** A Python literal for a JSON-safe value (True / False / None; strings JSON-escaped, which Python reads). */
export function pyLiteral(v: unknown): string {
  if (v === null || v === undefined) return 'None';
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new Error(`pyLiteral: ${v} is not finite`);
    return String(v);
  }
  if (typeof v === 'string') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(pyLiteral).join(', ')}]`;
  if (typeof v === 'object')
    return `{${Object.entries(v as Record<string, unknown>)
      .map(([k, x]) => `${JSON.stringify(k)}: ${pyLiteral(x)}`)
      .join(', ')}}`;
  throw new Error(`pyLiteral: cannot write ${typeof v}`);
}

/** `NAME = literal` lines, one per constant, in order. */
export const pyConstants = (constants: Record<string, unknown>): string =>
  Object.entries(constants)
    .map(([k, v]) => `${k} = ${pyLiteral(v)}`)
    .join('\n');

/** A generated .py file: its docstring, the data header, then the shipped body unchanged. */
export function pyFile(doc: string, constants: Record<string, unknown>, body: string): string {
  return [`"""${doc}"""`, pyConstants(constants), '', body].join('\n');
}
