// Single-turn sampled rollouts, shared by the recipes that sample one message per row (redteam,
// attack, defend, tokenbuncher, arena, minmax): G samples per user message (adapters on), then
// per row the mean sampled-token k1 KL to the reference (adapters off), the mean full-vocabulary
// entropy of the rollout, its token trace and its mean advantage. The judge is only ever shown the
// decoded GENERATED ids of an answer (never the prompt or its chat template: the MTSA code's guard
// read "unsafe" out of its own prompt).
import * as tf from '@tensorflow/tfjs';
import { splitAttackerTarget } from '../../data/sandbox/index';
import { generate, type GenerateResult } from '../../model/generate';
import type { LoraSet } from '../../model/lora';
import { referenceStats } from '../../rl/policy';
import { fromTensor2D, type TokenMatrix } from '../../rl/types';
import { tokenTrace } from './common';
import type { TokenTrace } from '../../contract/report';
import type { PromptFit } from './promptBudget';
import type { ChatCodec, LoadedModel } from './types';

export interface SamplingOptions {
  maxNewTokens: number;
  temperature: number;
  topP: number;
}

export interface Rollout {
  /** Group (index into the messages) of each row. */
  rowGroup: number[];
  /** Prompt ids of each row (chat template + generation prompt). */
  rows: number[][];
  gen: GenerateResult;
  /** Decoded generated ids of each row, up to its stop: what the judge reads. */
  answers: string[];
}

/** A multi-line (crescendo-style) attacker prompt is sent as one message with its lines joined. */
export const asUserMessage = (text: string): string => splitAttackerTarget(text).join('\n') || text;

/** Each user message's prompt ids (chat template and generation prompt), through `fit`. */
export const promptRows = (codec: ChatCodec, contents: readonly string[], fit: PromptFit): number[][] =>
  fit(contents.map((t) => codec.encodeChat([{ role: 'user', content: t }], { addGenerationPrompt: true })));

/**
 * `perGroup` samples for each user message (adapters as they are), its ids through `fit`: the
 * recipe's prompt budget on the dataset rows (promptBudget.ts budgetFit), or modelWrittenPrompts.
 */
export async function sampleReplies(
  m: LoadedModel,
  contents: readonly string[],
  perGroup: number,
  o: SamplingOptions,
  seed: number,
  fit: PromptFit,
): Promise<Rollout> {
  const { model, codec } = m;
  const rowGroup = contents.flatMap((_, i) => Array<number>(perGroup).fill(i));
  const ids = promptRows(codec, contents, fit);
  const rows = rowGroup.map((i) => ids[i]);
  const gen = await generate(model, rows, {
    maxNewTokens: o.maxNewTokens,
    temperature: o.temperature,
    topP: o.topP,
    stopTokens: [...codec.eos],
    padTokenId: codec.pad,
    seed,
  });
  const answers = gen.tokens.map((t, b) => codec.decode(t.slice(0, gen.lengths[b])));
  return { rowGroup, rows, gen, answers };
}

/** `perGroup` sampled answers to each (possibly multi-line attacker) user message; adapters as they are. */
export function sampleAnswers(
  m: LoadedModel,
  messages: readonly string[],
  perGroup: number,
  o: SamplingOptions,
  seed: number,
  fit: PromptFit,
): Promise<Rollout> {
  return sampleReplies(m, messages.map(asUserMessage), perGroup, o, seed, fit);
}

/**
 * One greedy reply per prompt row (adapters as they are): the ReMax baseline's rollout. Its log-probs
 * and entropies are at temperature 1 (generate's greedy statistics), so compare its KL at 1.
 */
export async function greedyReplies(
  m: LoadedModel,
  rows: number[][],
  maxNewTokens: number,
): Promise<Pick<Rollout, 'rows' | 'gen' | 'answers'>> {
  const { model, codec } = m;
  const gen = await generate(model, rows, {
    maxNewTokens,
    greedy: true,
    stopTokens: [...codec.eos],
    padTokenId: codec.pad,
  });
  return { rows, gen, answers: gen.tokens.map((t, b) => codec.decode(t.slice(0, gen.lengths[b]))) };
}

/** Prompt ids of each group's first row (a rollout's rows repeat each group's prompt G times). */
export const groupPrompts = (r: Pick<Rollout, 'rows' | 'rowGroup'>, groups: number): number[][] =>
  Array.from({ length: groups }, (_, g) => r.rows[r.rowGroup.indexOf(g)]);

/** Mean over each row's generated tokens of x[b, t]. */
export function rowMeans(x: (b: number, t: number) => number, lengths: readonly number[]): number[] {
  return lengths.map((n, b) => {
    let s = 0;
    for (let t = 0; t < n; t++) s += x(b, t);
    return n > 0 ? s / n : 0;
  });
}

/**
 * Reference log-probs of the rollout (adapters off, at the rollout temperature), and per row the
 * mean k1 KL (logp_rollout - logp_ref) and the mean entropy H_t of the rollout distribution.
 */
export async function klAndEntropy(
  m: LoadedModel,
  lora: LoraSet,
  r: Pick<Rollout, 'rows' | 'gen'>,
  temperature: number,
): Promise<{ refLogp: TokenMatrix; kl: number[]; entropy: number[] }> {
  const { gen } = r;
  const ref = referenceStats(
    m.model,
    lora,
    { prompts: r.rows, responses: gen.tokens, mask: gen.mask },
    { temperature, padTokenId: m.codec.pad },
  );
  const refLogp = await fromTensor2D(ref.logp);
  tf.dispose([ref.logp, ref.entropy]);
  const T = refLogp.cols;
  return {
    refLogp,
    kl: rowMeans((b, t) => gen.logprobs[b][t] - refLogp.data[b * T + t], gen.lengths),
    entropy: rowMeans((b, t) => gen.entropy[b][t], gen.lengths),
  };
}

/** Generated tokens of the rollout, and the mean entropy over them (0 when there are none). */
export function tokenEntropy(gen: GenerateResult): { tokens: number; mean: number } {
  let sum = 0;
  let tokens = 0;
  gen.entropy.forEach((row, b) => {
    for (let t = 0; t < gen.lengths[b]; t++) sum += row[t];
    tokens += gen.lengths[b];
  });
  return { tokens, mean: tokens > 0 ? sum / tokens : 0 };
}

/** The report's token trace of row b. */
export function rowTrace(m: LoadedModel, gen: GenerateResult, b: number): TokenTrace {
  const n = gen.lengths[b];
  return tokenTrace(m.codec, gen.tokens[b].slice(0, n), gen.logprobs[b].slice(0, n), gen.entropy[b].slice(0, n));
}

/** Mean advantage over row b's generated tokens. */
export function rowAdvantage(adv: TokenMatrix, mask: readonly number[], b: number): number {
  let s = 0;
  let n = 0;
  for (let t = 0; t < adv.cols; t++) {
    s += adv.data[b * adv.cols + t] * mask[t];
    n += mask[t];
  }
  return n ? s / n : 0;
}
