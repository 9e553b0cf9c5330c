// The chat templates of the new families through the lab's renderer (@huggingface/jinja): Gemma 3's
// (google/gemma-3-*-it) and Qwen3's thinking template (Qwen3-*-Thinking-2507), as published in
// their tokenizer configs (dev/fixtures/families/chat-templates/, provenance in dev/fixtures/README.md).
// Expected strings written from the templates' rules by hand.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ChatTemplateError, resolveChatTemplate } from './chat';

const template = (f: string) =>
  resolveChatTemplate({
    chatTemplateJinja: readFileSync(`dev/fixtures/families/chat-templates/${f}`, 'utf8'),
    model: f,
  });

describe('Gemma 3 chat template', () => {
  const t = template('gemma3.jinja');
  it('folds the system message into the first user turn, names the assistant "model", trims contents', () => {
    const text = t.render(
      [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi there ' },
        { role: 'assistant', content: 'Hello.' },
        { role: 'user', content: 'Why?' },
      ],
      { addGenerationPrompt: true, specialTokens: { bos_token: '<bos>' } },
    );
    expect(text).toBe(
      '<bos><start_of_turn>user\nBe brief.\n\nHi there<end_of_turn>\n<start_of_turn>model\nHello.<end_of_turn>\n' +
        '<start_of_turn>user\nWhy?<end_of_turn>\n<start_of_turn>model\n',
    );
  });
  it("refuses roles that do not alternate with the template's own message", () => {
    expect(() =>
      t.render([
        { role: 'user', content: 'a' },
        { role: 'user', content: 'b' },
      ]),
    ).toThrow(ChatTemplateError);
    expect(() => t.render([{ role: 'assistant', content: 'a' }])).toThrow(/Conversation roles must alternate/);
  });
});

describe('Qwen3 thinking chat template', () => {
  const t = template('qwen3-thinking-2507.jinja');
  it('drops the reasoning of turns before the last query and opens a thinking block for the reply', () => {
    const text = t.render(
      [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: '<think>\nhmm\n</think>\n\nHello.' },
        { role: 'user', content: 'Why?' },
      ],
      { addGenerationPrompt: true },
    );
    expect(text).toBe(
      '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n' +
        '<|im_start|>user\nWhy?<|im_end|>\n<|im_start|>assistant\n<think>\n',
    );
  });
  it('keeps the reasoning of an assistant turn after the last query (a tool loop)', () => {
    const text = t.render([
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: '<think>\nplan\n</think>\n\nDone.' },
    ]);
    expect(text).toBe(
      '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\nplan\n</think>\n\nDone.<|im_end|>\n',
    );
  });
});
