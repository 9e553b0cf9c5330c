import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  applyChatTemplate,
  CHATML_TEMPLATE,
  ChatTemplate,
  ChatTemplateError,
  loadChatTemplate,
  resolveChatTemplate,
  type ChatMessage,
} from './chat';
import { mapSource } from './sources';
import { createTokenizer } from './tokenizer';

const dir = resolve(dirname(fileURLToPath(import.meta.url)), '../../dev/test/testdata/chat-tokenizer');
const tokenizerText = readFileSync(resolve(dir, 'tokenizer.json'), 'utf8');
const configText = readFileSync(resolve(dir, 'tokenizer_config.json'), 'utf8');
const config = () => JSON.parse(configText) as Record<string, any>;
const tokenizer = () => createTokenizer(JSON.parse(tokenizerText), config(), { label: 'chat-tokenizer' });

const twoTurns: ChatMessage[] = [
  { role: 'user', content: 'Hi' },
  { role: 'assistant', content: 'Hello world' },
];
const SMOL_SYSTEM =
  '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n';

/** Byte token ids of plain ASCII text with no merges (id = 3 + byte). */
const bytes = (s: string) => [...s].map((c) => 3 + c.charCodeAt(0));

describe('ChatML rendering of the fixture template (SmolLM2-Instruct)', () => {
  const tpl = () => resolveChatTemplate({ tokenizerConfig: config(), model: 'chat-tokenizer' });

  it('renders a two-turn conversation, adding the default system turn', () => {
    const t = tpl();
    expect(t.isDefault).toBe(false);
    expect(t.origin).toBe('tokenizer_config.json');
    expect(t.render(twoTurns)).toBe(
      SMOL_SYSTEM + '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello world<|im_end|>\n',
    );
  });

  it('ends with an open assistant turn when asked for a generation prompt', () => {
    const msgs: ChatMessage[] = [...twoTurns, { role: 'user', content: 'café 😀?' }];
    expect(tpl().render(msgs, { addGenerationPrompt: true })).toBe(
      SMOL_SYSTEM +
        '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello world<|im_end|>\n' +
        '<|im_start|>user\ncafé 😀?<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('keeps a given system message instead of the default', () => {
    const msgs: ChatMessage[] = [{ role: 'system', content: 'Be brief.' }, ...twoTurns];
    expect(tpl().render(msgs, { addGenerationPrompt: false })).toBe(
      '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello world<|im_end|>\n',
    );
  });
});

describe('applyChatTemplate', () => {
  it('encodes the rendered text with the special tokens as single ids', () => {
    const tok = tokenizer();
    const chatml = resolveChatTemplate({ model: 'bare' }); // default ChatML: no system turn
    expect(chatml.isDefault).toBe(true);
    const { text, ids } = applyChatTemplate(tok, chatml, twoTurns);
    expect(text).toBe('<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello world<|im_end|>\n');
    // <|im_start|>=1, user=274, \n=13, H i, <|im_end|>=2, \n, <|im_start|>, "assistant" (no merge
    // applies: bytes), \n, Hello=265, Ġworld=270, <|im_end|>, \n
    expect(ids).toEqual([1, 274, 13, ...bytes('Hi'), 2, 13, 1, ...bytes('assistant'), 13, 265, 270, 2, 13]);
    const gen = applyChatTemplate(tok, chatml, twoTurns.slice(0, 1), { addGenerationPrompt: true });
    expect(gen.ids).toEqual([1, 274, 13, ...bytes('Hi'), 2, 13, 1, ...bytes('assistant'), 13]);
  });

  it('does not let the post-processor add special tokens the template did not write', () => {
    const json = JSON.parse(tokenizerText);
    json.post_processor = {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<|endoftext|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [],
      special_tokens: {},
    };
    const tok = createTokenizer(json, config());
    expect(tok.encode('Hi')[0]).toBe(0);
    const { ids } = applyChatTemplate(tok, resolveChatTemplate(), [{ role: 'user', content: 'Hi' }]);
    expect(ids[0]).toBe(1);
  });

  it("passes the tokenizer's special-token strings to the template", () => {
    const t = new ChatTemplate(
      "{{ bos_token }}{% for m in messages %}{{ m['content'] + eos_token }}{% endfor %}{{ pad_token }}",
    );
    const { text, ids } = applyChatTemplate(tokenizer(), t, twoTurns);
    expect(text).toBe('<|im_start|>Hi<|im_end|>Hello world<|im_end|><|im_end|>');
    expect(ids).toEqual([1, ...bytes('Hi'), 2, 265, 270, 2, 2]);
  });
});

describe('finding the template', () => {
  const named = [
    { name: 'default', template: 'D{{ messages[0].content }}' },
    { name: 'tool_use', template: 'T{{ tools[0] }}' },
  ];

  it('picks "default" from a list of named templates, or the one asked for', () => {
    const d = resolveChatTemplate({ tokenizerConfig: { chat_template: named }, model: 'm' });
    expect(d.render([{ role: 'user', content: 'x' }])).toBe('Dx');
    const t = resolveChatTemplate({ tokenizerConfig: { chat_template: named }, model: 'm', name: 'tool_use' });
    expect(t.origin).toBe('tokenizer_config.json (tool_use)');
    expect(t.render([], { variables: { tools: ['search'] } })).toBe('Tsearch');
    expect(() => resolveChatTemplate({ tokenizerConfig: { chat_template: named }, model: 'm', name: 'rag' })).toThrow(
      /tokenizer_config\.json of m: no chat template named "rag" \(available: default, tool_use\)/,
    );
    expect(() => resolveChatTemplate({ tokenizerConfig: { chat_template: [{ name: 'x' }] }, model: 'm' })).toThrow(
      /field "chat_template\[0\]"/,
    );
  });

  it('prefers chat_template.jinja over tokenizer_config.json', () => {
    const t = resolveChatTemplate({ tokenizerConfig: config(), chatTemplateJinja: 'J{{ messages | length }}' });
    expect(t.origin).toBe('chat_template.jinja');
    expect(t.render(twoTurns)).toBe('J2');
  });

  it('falls back to ChatML, or refuses when asked to', () => {
    expect(resolveChatTemplate({ tokenizerConfig: {} }).source).toBe(CHATML_TEMPLATE);
    expect(() => resolveChatTemplate({ tokenizerConfig: {}, model: 'base-model', fallback: 'error' })).toThrow(
      /base-model has no chat template/,
    );
  });

  it('loads from a model source', async () => {
    const withJinja = mapSource(
      { 'tokenizer_config.json': configText, 'chat_template.jinja': 'X' },
      { label: 'folder a' },
    );
    const a = await loadChatTemplate(withJinja);
    expect(a.origin).toBe('chat_template.jinja');
    expect(a.model).toBe('folder a');
    const b = await loadChatTemplate(mapSource({ 'tokenizer_config.json': configText }));
    expect(b.render(twoTurns)).toContain(SMOL_SYSTEM);
    const c = await loadChatTemplate(mapSource({ 'config.json': '{}' }));
    expect(c.isDefault).toBe(true);
  });
});

describe('errors name the model folder', () => {
  it('when the template raises or hits an undefined call', () => {
    const cfg = {
      chat_template:
        "{% if messages[0]['role'] != 'user' %}{{ raise_exception('Conversations must start with the user') }}{% endif %}ok",
    };
    const t = resolveChatTemplate({ tokenizerConfig: cfg, model: 'folder my-model' });
    expect(t.render([{ role: 'user', content: 'a' }])).toBe('ok');
    const err = (() => {
      try {
        t.render([{ role: 'assistant', content: 'a' }]);
      } catch (e) {
        return e;
      }
      return null;
    })();
    expect(err).toBeInstanceOf(ChatTemplateError);
    expect((err as Error).message).toMatch(
      /^chat template of folder my-model \(tokenizer_config\.json\): failed to render: .*Conversations must start with the user/,
    );
  });

  it('when the template does not parse, or messages are malformed', () => {
    expect(() => resolveChatTemplate({ tokenizerConfig: { chat_template: '{% for %}' }, model: 'broken' })).toThrow(
      /^chat template of broken \(tokenizer_config\.json\): the template does not parse/,
    );
    const t = resolveChatTemplate({ model: 'm' });
    expect(() => t.render([{ role: 'user' } as unknown as ChatMessage])).toThrow(
      /chat template of m .*messages\[0\] needs/,
    );
  });
});
