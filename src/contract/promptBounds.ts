// Bounded prompts. A JSONL upload with one 60 MB prompt was accepted silently and Start then sat at
// step 0 for minutes (tokenising it) at 4.5 GB; four ~100 KB prompts passed the fit check and the
// run died with `Invalid typed array length: 253435698176`. Every prompt a file gives is measured
// when it is read: over the limit it is refused by line (the default) or cut to it, keeping its
// start or its end as the user chooses (veRL's data.truncation: right keeps the start, left the end).

/** Most characters of one prompt (all its turns) read from a file: ~4,000 tokens at 4 chars a token. */
export const MAX_PROMPT_CHARS = 16_384;

/** What happens to a prompt over the limit: refused (its line named), or cut keeping its start or end. */
export type LongPrompts = 'refuse' | 'keep-start' | 'keep-end';
export const LONG_PROMPTS: readonly LongPrompts[] = ['refuse', 'keep-start', 'keep-end'];

export interface PromptBound {
  maxChars: number;
  long: LongPrompts;
}

export const DEFAULT_PROMPT_BOUND: PromptBound = { maxChars: MAX_PROMPT_CHARS, long: 'refuse' };

/** `s` cut to `max` characters on the side `long` says (a string within the limit as it is). */
export function cutText(s: string, max: number, long: Exclude<LongPrompts, 'refuse'>): string {
  if (s.length <= max) return s;
  return long === 'keep-start' ? s.slice(0, max) : s.slice(s.length - max);
}

/** The message for a prompt over the limit (the line is the reader's). */
export function longPromptProblem(chars: number, max: number): string {
  return `prompt of ${chars.toLocaleString('en-US')} characters is over the ${max.toLocaleString('en-US')}-character limit (shorten it, or upload it with "cut long prompts")`;
}

/** A prompt's token count against the model's context, checked before anything is allocated from it. */
export class PromptLengthError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PromptLengthError';
  }
}
