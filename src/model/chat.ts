// Chat templates. @huggingface/tokenizers has no apply_chat_template, so this does what
// transformers / transformers.js do: render the model's Jinja `chat_template` with
// @huggingface/jinja, given `messages`, `add_generation_prompt` and the special-token strings
// (bos_token, eos_token, ...), then encode the text with add_special_tokens = false: the template
// already wrote every special token it wants, and a post-processor bos would double it.
//
// Where the template lives, newest convention first: `chat_template.jinja` beside the
// tokenizer; `chat_template` in tokenizer_config.json, either a string or a list of
// {name, template} (a "default" one, plus e.g. "tool_use" or "rag").

import { Template } from '@huggingface/jinja';
import { briefText, clampMessage } from '../contract/brief';
import {
  renderWithin,
  TEMPLATE_OVERHEAD_CHARS,
  TemplateBudgetError,
  templateBudget,
  templateOutputLimit,
} from './templateBudget';
import type { ModelSource } from './sources';
import type { TextTokenizer } from './tokenizer';

export class ChatTemplateError extends Error {
  constructor(message: string) {
    super(clampMessage(message));
    this.name = 'ChatTemplateError';
  }
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool' | (string & {});
  content: string;
  [key: string]: unknown;
}

/**
 * ChatML, for models whose files carry no template (base models, the sandbox models):
 * `<|im_start|>{role}\n{content}<|im_end|>\n` per message, then `<|im_start|>assistant\n` when
 * a generation prompt is asked for. If the tokenizer lacks the ChatML tokens they are encoded as
 * plain text, which still trains, but the model has never seen them.
 */
export const CHATML_TEMPLATE =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}" +
  "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

export const CHAT_TEMPLATE_FILE = 'chat_template.jinja';

export interface RenderOptions {
  /** End with the opening of an assistant turn, so the model writes the reply. Default false. */
  addGenerationPrompt?: boolean;
  /** bos_token, eos_token, pad_token, ... as strings (TextTokenizer.specialTokens). */
  specialTokens?: Readonly<Record<string, string>>;
  /** More template variables: tools, documents, enable_thinking, ... */
  variables?: Record<string, unknown>;
}

export class ChatTemplate {
  /** The model folder or id, for messages. */
  readonly model: string;
  /** Where the text came from: "chat_template.jinja", "tokenizer_config.json", "tokenizer_config.json (tool_use)" or "default ChatML". */
  readonly origin: string;
  readonly source: string;
  /** True when the model had no template and ChatML stands in. */
  readonly isDefault: boolean;
  private readonly template: Template;

  constructor(source: string, opts: { model?: string; origin?: string; isDefault?: boolean } = {}) {
    this.model = opts.model ?? 'model';
    this.origin = opts.origin ?? 'chat template';
    this.isDefault = opts.isDefault ?? false;
    this.source = source;
    try {
      this.template = new Template(source);
    } catch (e) {
      throw new ChatTemplateError(
        `${this.where()}: the template does not parse: ${briefText((e as Error).message ?? String(e), 300)}`,
      );
    }
  }

  private where(): string {
    return `chat template of ${this.model} (${this.origin})`;
  }

  /** The conversation as the model sees it, special tokens written out. */
  render(messages: readonly ChatMessage[], opts: RenderOptions = {}): string {
    if (!Array.isArray(messages)) throw new ChatTemplateError(`${this.where()}: messages must be a list`);
    messages.forEach((m, i) => {
      if (m === null || typeof m !== 'object' || typeof m.role !== 'string' || typeof m.content !== 'string') {
        throw new ChatTemplateError(`${this.where()}: messages[${i}] needs a string "role" and "content"`);
      }
    });
    const budget = templateBudget();
    let out: string;
    try {
      out = renderWithin(this.template, budget, {
        ...opts.specialTokens,
        ...opts.variables,
        messages,
        add_generation_prompt: opts.addGenerationPrompt ?? false,
      });
    } catch (e) {
      if (e instanceof TemplateBudgetError) throw new ChatTemplateError(`${this.where()}: ${e.message}`);
      throw new ChatTemplateError(
        `${this.where()}: failed to render: ${briefText((e as Error).message ?? String(e), 300)}`,
      );
    }
    const limit = templateOutputLimit(messages);
    if (out.length > limit)
      throw new ChatTemplateError(
        `${this.where()}: the rendered prompt is ${out.length.toLocaleString('en-US')} characters, over the limit of ${limit.toLocaleString('en-US')} (the messages' length plus ${TEMPLATE_OVERHEAD_CHARS.toLocaleString('en-US')})`,
      );
    return out;
  }
}

export interface ResolveOptions {
  /** Parsed tokenizer_config.json. */
  tokenizerConfig?: unknown;
  /** The text of chat_template.jinja, when the folder has one (it wins over tokenizer_config.json). */
  chatTemplateJinja?: string | null;
  /** Model folder or id, for messages. */
  model?: string;
  /** Which named template to use when there are several; default "default". */
  name?: string;
  /** What to do without a template: use ChatML (default) or throw. */
  fallback?: 'chatml' | 'error';
}

/** Picks the model's chat template (see the file comment for the order), or ChatML. */
export function resolveChatTemplate(opts: ResolveOptions = {}): ChatTemplate {
  const model = opts.model ?? 'model';
  if (typeof opts.chatTemplateJinja === 'string' && opts.chatTemplateJinja.trim() !== '') {
    return new ChatTemplate(opts.chatTemplateJinja, { model, origin: CHAT_TEMPLATE_FILE });
  }
  const cfg = opts.tokenizerConfig;
  const raw = cfg !== null && typeof cfg === 'object' ? (cfg as { chat_template?: unknown }).chat_template : undefined;
  const file = 'tokenizer_config.json';
  if (typeof raw === 'string' && raw.trim() !== '') return new ChatTemplate(raw, { model, origin: file });
  if (raw !== undefined && raw !== null && typeof raw !== 'string') {
    const named = new Map<string, string>();
    if (Array.isArray(raw)) {
      raw.forEach((t, i) => {
        const entry = t as { name?: unknown; template?: unknown } | null;
        if (!entry || typeof entry.name !== 'string' || typeof entry.template !== 'string') {
          throw new ChatTemplateError(
            `${file} of ${model}: field "chat_template[${i}]" needs a string "name" and "template"`,
          );
        }
        named.set(entry.name, entry.template);
      });
    } else if (typeof raw === 'object') {
      for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
        if (typeof v !== 'string')
          throw new ChatTemplateError(`${file} of ${model}: field "chat_template.${k}" must be a string`);
        named.set(k, v);
      }
    } else {
      throw new ChatTemplateError(
        `${file} of ${model}: field "chat_template" must be a string or a list of {name, template}`,
      );
    }
    const want = opts.name ?? 'default';
    const text = named.get(want);
    if (text === undefined) {
      throw new ChatTemplateError(
        `${file} of ${model}: no chat template named "${want}" (available: ${[...named.keys()].join(', ') || 'none'})`,
      );
    }
    return new ChatTemplate(text, { model, origin: want === 'default' ? file : `${file} (${want})` });
  }
  if (opts.name !== undefined && opts.name !== 'default') {
    throw new ChatTemplateError(`${file} of ${model}: no chat template named "${opts.name}"`);
  }
  if (opts.fallback === 'error')
    throw new ChatTemplateError(`${model} has no chat template (${CHAT_TEMPLATE_FILE} or ${file} "chat_template")`);
  return new ChatTemplate(CHATML_TEMPLATE, { model, origin: 'default ChatML', isDefault: true });
}

/** Reads chat_template.jinja (if any) and tokenizer_config.json from a model source. */
export async function loadChatTemplate(
  source: ModelSource,
  opts: Omit<ResolveOptions, 'tokenizerConfig' | 'chatTemplateJinja' | 'model'> & { signal?: AbortSignal } = {},
): Promise<ChatTemplate> {
  const read = { signal: opts.signal };
  const jinja = (await source.has(CHAT_TEMPLATE_FILE, read)) ? await source.getText(CHAT_TEMPLATE_FILE, read) : null;
  const cfg = (await source.has('tokenizer_config.json', read))
    ? await source.getJson('tokenizer_config.json', read)
    : undefined;
  return resolveChatTemplate({ ...opts, tokenizerConfig: cfg, chatTemplateJinja: jinja, model: source.label });
}

export interface ChatEncoding {
  text: string;
  ids: number[];
}

/**
 * Renders `messages` with the template and the tokenizer's special-token strings, then encodes
 * the text without adding special tokens.
 */
export function applyChatTemplate(
  tokenizer: TextTokenizer,
  template: ChatTemplate,
  messages: readonly ChatMessage[],
  opts: Omit<RenderOptions, 'specialTokens'> = {},
): ChatEncoding {
  const text = template.render(messages, { ...opts, specialTokens: tokenizer.specialTokens });
  return { text, ids: tokenizer.encode(text, { addSpecialTokens: false }) };
}
