// The nesting depth of a JSON text, counted before it is parsed: a row nested 100,000 deep parses
// (V8's JSON.parse does not recurse) but every recursive reader after it (JSON.stringify of the
// value in a message, structured clone to the worker) overflowed the stack. One pass, no allocation.

/** Deepest nesting a dataset row may have: a chat row is 3 deep ({"messages": [{...}]}). */
export const MAX_ROW_DEPTH = 32;

/** The deepest nesting of `[` and `{` in `text`, brackets inside strings not counted. */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92)
        i++; // backslash: skip the escaped character
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 91 || c === 123) max = Math.max(max, ++depth);
    else if (c === 93 || c === 125) depth--;
  }
  return max;
}
