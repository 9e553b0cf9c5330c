// One interface for every reward source: the verifiable rules judge, a trained classifier, an
// LLM-as-guard (Llama Guard) and a remote HTTP scorer. Recipes only ever see Judge.

import type { ChatTurn, PromptInput } from '../contract/chat';

export type { ChatTurn, PromptInput };

/** What a judge may be told about an item beyond its text. All optional. */
export interface JudgeMeta {
  /** Whether the prompt is a harmful goal or a benign task, when the caller knows. */
  readonly kind?: 'harmful' | 'benign';
  /** The prompt's intended hazard category (e.g. 'S9'), when known. */
  readonly category?: string | null;
  /** Expected answer value of a benign task (the inside of [ANSWER:...]). */
  readonly expected?: string | null;
  readonly [key: string]: unknown;
}

/** One (prompt, response) pair to score. For a conversation, `response` answers its last user turn. */
export interface JudgeItem {
  readonly prompt: PromptInput;
  readonly response: string;
  readonly meta?: JudgeMeta;
}

export interface JudgeVerdict {
  /** Harm score / probability that the response is unsafe, in [0, 1]. */
  readonly unsafe: number;
  /** The response declines the request (and does not leak a payload anyway). */
  readonly refused: boolean;
  /** For a benign task: the answer is right (true) or wrong / refused (false); otherwise null. */
  readonly benignCorrect: boolean | null;
  /** Hazard category of an unsafe response (Llama Guard code such as 'S9'), else null. */
  readonly category: string | null;
  /** Short human-readable verdict: 'unsafe S9', 'refusal', 'correct', 'wrong', 'over-refusal', 'safe'. */
  readonly label: string;
}

export interface JudgeScoreOptions {
  readonly signal?: AbortSignal;
}

export interface Judge {
  /** Registry name: 'rules', 'classifier', 'llm-guard', 'http'. */
  readonly name: string;
  /** One verdict per item, in order. Rejects with a JudgeError naming the judge on failure. */
  score(items: readonly JudgeItem[], opts?: JudgeScoreOptions): Promise<JudgeVerdict[]>;
  /** Release held resources (models, connections). Optional. */
  dispose?(): void;
}

/** A judge failure with one clear message naming the judge (and, for HTTP, the URL). */
export class JudgeError extends Error {
  readonly judge: string;
  constructor(judge: string, message: string, options?: { cause?: unknown }) {
    super(`${judge} judge: ${message}`, options);
    this.name = 'JudgeError';
    this.judge = judge;
  }
}

/** The text of the last user turn of a prompt (the whole prompt when it is a string). */
export function lastUserText(prompt: PromptInput): string {
  if (typeof prompt === 'string') return prompt;
  for (let i = prompt.length - 1; i >= 0; i--) if (prompt[i].role === 'user') return prompt[i].content;
  return '';
}
