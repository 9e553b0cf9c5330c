// Text repetition metrics used as reward penalties. Two sources define it differently, so both
// are here and the recipe picks one (`REPETITION_METRICS`):
//  - `tinker`: Tinker red-team GRPO trainer: distinct whitespace n-grams occurring more than once
//    / distinct n-grams (a share of *kinds* of n-gram, in [0, 1]).
//  - `safer_rep3`: SaFeR-Steer rep3: sum over n-grams of (count - 1) / number of n-grams, tokens
//    `\w+|\S`, 0 below 24 tokens (a share of n-gram *occurrences* that are repeats, in [0, 1)).
import type { RepetitionMetric } from './types';

export interface RepetitionOptions {
  /** n-gram length; 3 in both sources. */
  n?: number;
  /** Below this many tokens the score is 0 (SaFeR: 24; Tinker: only needs n tokens). */
  minTokens?: number;
  /** Lower-case before tokenising. Neither source does; off by default. */
  lowercase?: boolean;
}

/** Whitespace tokens (Python str.split()). */
export function whitespaceTokens(text: string): string[] {
  return text.split(/\s+/).filter((w) => w.length > 0);
}

/**
 * SaFeR tokens: Python `re.findall(r"\w+|\S", text)`. Python 3's \w is Unicode-aware, so letters
 * and digits of every script count as word characters (JS \w alone is ASCII only).
 */
export function wordOrSymbolTokens(text: string): string[] {
  return text.match(/[\p{L}\p{N}_]+|\S/gu) ?? [];
}

function ngramCounts(tokens: string[], n: number): Map<string, number> {
  const counts = new Map<string, number>();
  for (let i = 0; i + n <= tokens.length; i++) {
    // \u0000 cannot occur inside a token, so joined keys never collide.
    const key = tokens.slice(i, i + n).join('\u0000');
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

/** Tinker ratio: |{g : count(g) > 1}| / |{g}| over whitespace n-grams; 0 with no n-gram. */
export function tinkerRepetitionRatio(text: string, opts: RepetitionOptions = {}): number {
  const n = opts.n ?? 3;
  const tokens = whitespaceTokens(opts.lowercase ? text.toLowerCase() : text);
  if (tokens.length < Math.max(n, opts.minTokens ?? 0)) return 0;
  const counts = ngramCounts(tokens, n);
  let repeated = 0;
  for (const c of counts.values()) if (c > 1) repeated++;
  return counts.size > 0 ? repeated / counts.size : 0;
}

/** SaFeR rep3: sum_g (count(g) - 1) / #n-grams = 1 - distinct / total; 0 below minTokens (24). */
export function saferRep3(text: string, opts: RepetitionOptions = {}): number {
  const n = opts.n ?? 3;
  const tokens = wordOrSymbolTokens(opts.lowercase ? text.toLowerCase() : text);
  if (tokens.length < Math.max(n, opts.minTokens ?? 24)) return 0;
  const counts = ngramCounts(tokens, n);
  const total = tokens.length - n + 1;
  let extra = 0;
  for (const c of counts.values()) extra += c - 1;
  return extra / total;
}

export const REPETITION_FUNCTIONS: Record<RepetitionMetric, (text: string, opts?: RepetitionOptions) => number> = {
  tinker: tinkerRepetitionRatio,
  safer_rep3: saferRep3,
};

/** Named repetition metric; throws listing the names on an unknown one. */
export function repetition(text: string, metric: RepetitionMetric, opts: RepetitionOptions = {}): number {
  const fn = REPETITION_FUNCTIONS[metric];
  if (!fn)
    throw new Error(
      `unknown repetition metric "${metric}"; expected one of ${Object.keys(REPETITION_FUNCTIONS).join(', ')}`,
    );
  return fn(text, opts);
}
