// The fit check's prompt length counted with the model's own tokenizer and chat template (issue
// 40): the page's estimate of 3 characters a token is off by a factor of 2-4 for code, CJK text or
// a byte-level vocabulary of 512 like the sandbox's. Only the longest prompts by characters are
// encoded (COUNTED_PROMPTS of them): tokens per character differ between rows, so the longest in
// tokens is nearly always among them, and a 100,000-row upload is not encoded whole for a check.
import { readPromptSet } from '../../contract/promptSets';
import type { PromptTokenCount } from '../../contract/workerApi';
import type { ChatCodec } from './types';

/** Prompts encoded per check: the longest ones by characters. */
export const COUNTED_PROMPTS = 16;

/** The longest prompt of a prompt file in tokens (each as a rollout sends it: its user turns in one message). */
export function countLongestPrompt(text: string, file: string, codec: ChatCodec): PromptTokenCount {
  const set = readPromptSet(text, file);
  const asText = (p: (typeof set.rows)[number]['prompt']) =>
    typeof p === 'string'
      ? p
      : p
          .filter((t) => t.role === 'user')
          .map((t) => t.content)
          .join('\n');
  const rows = set.rows
    .map((r) => ({ text: asText(r.prompt), line: r.line }))
    .sort((a, b) => b.text.length - a.text.length)
    .slice(0, COUNTED_PROMPTS);
  let best = { tokens: 0, line: 0 };
  for (const r of rows) {
    const tokens = codec.encodeChat([{ role: 'user', content: r.text }], { addGenerationPrompt: true }).length;
    if (tokens > best.tokens) best = { tokens, line: r.line };
  }
  return { ...best, counted: rows.length, rows: set.rows.length, tokenizer: codec.label };
}
