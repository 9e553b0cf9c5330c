// Token counts of chat messages with the tokenizer and chat template of a model the export ships
// (models/NAME/: tokenizer.json, tokenizer_config.json, chat_template.jinja), as veRL counts them:
// the template rendered with the generation prompt, then encoded without added special tokens
// (what transformers' apply_chat_template(tokenize=True) returns; RLHFDataset measures prompts so,
// rl_dataset.py:247, and the agent loop templates each user turn so, tool_agent_loop.py:398).
import { resolveChatTemplate, type ChatMessage } from '../../model/chat';
import { createTokenizer } from '../../model/tokenizer';

/** Tokens of `messages` rendered with the generation prompt. */
export type ChatTokenCounter = (messages: readonly ChatMessage[]) => number;

/** A counter for the model's files, or null where the export does not ship its tokenizer (a hub model). */
export function chatTokenCounter(files: Readonly<Record<string, Uint8Array>> | undefined): ChatTokenCounter | null {
  if (!files?.['tokenizer.json']) return null;
  const text = (name: string) => (files[name] ? new TextDecoder().decode(files[name]) : null);
  const config = JSON.parse(text('tokenizer_config.json') ?? '{}') as unknown;
  const tokenizer = createTokenizer(JSON.parse(text('tokenizer.json')!), config);
  const template = resolveChatTemplate({ tokenizerConfig: config, chatTemplateJinja: text('chat_template.jinja') });
  return (messages) =>
    tokenizer.encode(template.render(messages, { addGenerationPrompt: true, specialTokens: tokenizer.specialTokens }), {
      addSpecialTokens: false,
    }).length;
}
