// Percent-decoding that never throws a URIError: decodeURIComponent throws on a malformed escape
// (`%E0%A4%A`), and a setup link carrying one blanked the whole page when the model picker decoded
// it during render. Callers turn a null into their own parser's error.

/** The decoded text, or null when `s` holds a malformed percent escape or an invalid UTF-8 sequence. */
export function decodeUriPart(s: string): string | null {
  try {
    return decodeURIComponent(s);
  } catch {
    return null;
  }
}

/**
 * The first run of percent escapes in `s` that does not decode (`%E0%A4%A`), or null when every
 * escape decodes: what an error message names.
 */
export function malformedEscape(s: string): string | null {
  if (decodeUriPart(s) !== null) return null;
  const runs = s.match(/(?:%[0-9A-Fa-f]{0,2})+/g) ?? [];
  return runs.find((r) => decodeUriPart(r) === null) ?? '%';
}
