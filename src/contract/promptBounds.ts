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

/**
 * What the rollout does with a prompt longer than the recipe's prompt budget in tokens: veRL's
 * `data.truncation` (verl/utils/torch_functional.py postprocess_data, at b178a3cd5 lines 507-557;
 * RLHFDataset reads it with default "error", verl/utils/dataset/rl_dataset.py line 113): "error"
 * refuses, "left" keeps the last tokens, "right" the first, "middle" the first half and the last half.
 */
export type Truncation = 'error' | 'left' | 'right' | 'middle';
export const TRUNCATIONS: readonly Truncation[] = ['error', 'left', 'right', 'middle'];

/** The row a prompt came from, for a message: `<file> line <n>` for a file's row, else its id. */
export function promptRowName(id: string): string {
  const m = /^(.*):(\d+)$/.exec(id);
  return m ? `${m[1].length > 80 ? `…${m[1].slice(-80)}` : m[1]} line ${m[2]}` : id.slice(0, 120);
}

/**
 * `ids` (a tokenized prompt, chat template included) within `max` tokens: as it is when it fits,
 * else cut as `truncation` says (the same slices as veRL's postprocess_data), or a PromptLengthError
 * naming the row (`row`, promptRowName's form) when truncation is "error".
 */
export function fitPromptTokens(ids: readonly number[], max: number, truncation: Truncation, row: string): number[] {
  if (ids.length <= max) return [...ids];
  switch (truncation) {
    case 'left':
      return ids.slice(ids.length - max);
    case 'right':
      return ids.slice(0, max);
    case 'middle': {
      const head = Math.floor(max / 2);
      return [...ids.slice(0, head), ...ids.slice(ids.length - (max - head))];
    }
    case 'error':
      throw new PromptLengthError(
        `${row}: prompt is ${ids.length.toLocaleString('en-US')} tokens with the chat template, over the prompt budget of ` +
          `${max.toLocaleString('en-US')} (field "maxPromptLength"; truncation "error" refuses it: raise the budget, or ` +
          `set truncation to left, right or middle to cut it)`,
      );
  }
}
