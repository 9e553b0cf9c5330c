// Chat shapes shared by every layer (data, judges, recipes, the worker API, the UI).

/** One chat message. The sandbox uses `user` and `assistant`; uploads and hub models may add `system`. */
export interface ChatTurn {
  readonly role: 'system' | 'user' | 'assistant';
  readonly content: string;
}

/** A prompt is either one user message or a conversation (multi-turn attacks, crescendo). */
export type PromptInput = string | readonly ChatTurn[];
