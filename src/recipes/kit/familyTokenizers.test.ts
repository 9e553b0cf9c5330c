// The real Qwen3 and Gemma 3 tokenizers (dev/fixtures/families/tokenizers/, provenance in its
// README.md) loaded as a recipe loads a model folder's tokenizer files (loadChatTokenizer: the
// @huggingface/tokenizers and @huggingface/jinja path), held to independent numbers: the ids
// transformers.js's implementation gives (reference.json, made by transformersjs-reference.cjs),
// the ids tokenizer.json's added_tokens assign, and the chat formats of the model cards.
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { applyChatTemplate, type ChatMessage } from '../../model/chat';
import { mapSource, type FileData } from '../../model/sources';
import { loadChatTokenizer, tokenizerCodec, type ChatTokenizer } from './env';

const DIR = 'dev/fixtures/families/tokenizers';
const REFERENCE = JSON.parse(readFileSync(`${DIR}/reference.json`, 'utf8'));
// A 33 MB tokenizer.json parses and compiles in ~1.5 s idle, ~7 s on a loaded 2-core machine.
const LOAD_MS = 60_000;

interface Family {
  ref: {
    bos_token_id: number | null;
    eos_token_id: number;
    pad_token_id: number;
    tokens: Record<string, number>;
    texts: Record<string, { text: string; ids: number[]; idsNoSpecial: number[] }>;
  };
  /** tokenizer.json's added_tokens, content -> {id, special}, read from the file itself. */
  added: Map<string, { id: number; special: boolean }>;
  loaded: ChatTokenizer;
}

/** The fixture as a model folder (the in-memory source a picked folder also reads through). */
function folder(name: string, tokenizerJson: string, extra: Record<string, FileData>) {
  return mapSource({ 'tokenizer.json': tokenizerJson, ...extra }, { label: `${name} tokenizer fixture` });
}

async function loadFamily(name: string): Promise<Family> {
  const tokenizerJson = gunzipSync(readFileSync(`${DIR}/${name}/tokenizer.json.gz`)).toString('utf8');
  const configText = readFileSync(`${DIR}/${name}/tokenizer_config.json`, 'utf8');
  const added = new Map<string, { id: number; special: boolean }>();
  // The added tokens sit before the 10+ MB model section; parse only that list.
  const head = tokenizerJson.slice(0, tokenizerJson.indexOf('"normalizer"'));
  const list = JSON.parse(head.slice(head.indexOf('['), head.lastIndexOf(']') + 1)) as {
    id: number;
    content: string;
    special: boolean;
  }[];
  for (const t of list) added.set(t.content, { id: t.id, special: t.special });
  const loaded = await loadChatTokenizer(folder(name, tokenizerJson, { 'tokenizer_config.json': configText }), name);
  return { ref: REFERENCE[name], added, loaded };
}

/** The id checks both families share. */
function idChecks(get: () => Family, addsBos: boolean) {
  it('encodes every text to the ids transformers.js gives, with and without special tokens', () => {
    const { ref, loaded } = get();
    expect(Object.keys(ref.texts).length).toBeGreaterThanOrEqual(9);
    for (const [name, t] of Object.entries(ref.texts)) {
      expect(loaded.tokenizer.encode(t.text), name).toEqual(t.ids);
      expect(loaded.tokenizer.encode(t.text, { addSpecialTokens: false }), name).toEqual(t.idsNoSpecial);
      expect(loaded.codec.encodeText(t.text), name).toEqual(t.idsNoSpecial);
    }
    // The post-processor's bos is the only difference between the two encodings.
    const bos = ref.bos_token_id;
    expect(ref.texts.ascii.ids.length - ref.texts.ascii.idsNoSpecial.length).toBe(addsBos ? 1 : 0);
    if (addsBos) expect(ref.texts.ascii.ids[0]).toBe(bos);
  });

  it("gives the special tokens the ids of tokenizer.json's added_tokens and of transformers.js", () => {
    const { ref, added, loaded } = get();
    for (const [token, id] of Object.entries(ref.tokens)) {
      expect(added.get(token)?.id, token).toBe(id);
      expect(loaded.tokenizer.tokenToId(token), token).toBe(id);
      // Qwen3's <think> and </think> are added tokens the files mark not special: a decode that
      // skips special tokens keeps the reasoning markers.
      expect(loaded.tokenizer.isSpecial(id), token).toBe(added.get(token)?.special);
    }
    expect(loaded.tokenizer.special.bos).toBe(ref.bos_token_id);
    expect(loaded.tokenizer.special.eos[0]).toBe(ref.eos_token_id);
    expect(loaded.tokenizer.special.pad).toBe(ref.pad_token_id);
    // Every id up to the last added token exists (Qwen3: 151669, Gemma 3: 262145).
    expect(loaded.tokenizer.vocabSize).toBe(Math.max(...[...added.values()].map((t) => t.id)) + 1);
  });

  it('decodes its own encoding back to the text', () => {
    const { ref, loaded } = get();
    for (const [name, t] of Object.entries(ref.texts)) {
      expect(loaded.tokenizer.decode(t.idsNoSpecial), name).toBe(t.text);
      expect(loaded.tokenizer.pieces(t.idsNoSpecial).join(''), name).toBe(t.text);
    }
  });
}

/** The chat checks: the model card's string, its ids, the stop tokens. */
function chatChecks(get: () => Family, conversation: ChatMessage[], variables: Record<string, unknown>) {
  it("renders the chat through the folder's template to the reference text and ids", () => {
    const { ref, loaded } = get();
    const chat = applyChatTemplate(loaded.tokenizer, loaded.template, conversation, {
      addGenerationPrompt: true,
      variables,
    });
    expect(loaded.template.origin).toBe('tokenizer_config.json');
    expect(chat.text).toBe(ref.texts.chat.text);
    expect(chat.ids).toEqual(ref.texts.chat.idsNoSpecial);
  });
}

describe('Qwen3 tokenizer (Qwen/Qwen3-0.6B files)', () => {
  let f: Family;
  beforeAll(async () => {
    f = await loadFamily('qwen3');
  }, LOAD_MS);
  const get = () => f;
  idChecks(get, false);
  // The assistant turn before the last query carries reasoning the template drops.
  const conversation: ChatMessage[] = [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'What is 2+2?' },
    { role: 'assistant', content: '<think>\nadd them\n</think>\n\n4' },
    { role: 'user', content: 'And 3+3?' },
  ];
  chatChecks(get, conversation, { enable_thinking: false });

  it('writes the ChatML turns of the model card; enable_thinking false closes an empty think block', () => {
    const t = f.loaded.template;
    const base =
      '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n' +
      '<|im_start|>assistant\n4<|im_end|>\n<|im_start|>user\nAnd 3+3?<|im_end|>\n<|im_start|>assistant\n';
    expect(t.render(conversation, { addGenerationPrompt: true })).toBe(base);
    expect(t.render(conversation, { addGenerationPrompt: true, variables: { enable_thinking: true } })).toBe(base);
    expect(t.render(conversation, { addGenerationPrompt: true, variables: { enable_thinking: false } })).toBe(
      `${base}<think>\n\n</think>\n\n`,
    );
    // A reply after the last query keeps its reasoning, in a normalised think block.
    expect(
      t.render([
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: '<think>plan</think>Done.' },
      ]),
    ).toBe('<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\nplan\n</think>\n\nDone.<|im_end|>\n');
  });

  it('stops generation at <|im_end|>, the eos of the files', () => {
    expect(f.loaded.tokenizer.special.eos).toEqual([151645]);
    expect(f.loaded.codec.eos).toEqual([151645]);
    expect(f.loaded.codec.pad).toBe(151643);
    // The replies a recipe scores drop the special tokens but keep the reasoning markers.
    expect(f.loaded.codec.decode(f.ref.texts.specials.idsNoSpecial)).toBe('xuser\nHi\ny <think>z</think>');
  });
});

describe('Gemma 3 tokenizer (google/gemma-3 files)', () => {
  let f: Family;
  beforeAll(async () => {
    f = await loadFamily('gemma3');
  }, LOAD_MS);
  const get = () => f;
  idChecks(get, true);
  const conversation: ChatMessage[] = [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'What is 2+2?' },
    { role: 'assistant', content: '4' },
    { role: 'user', content: 'And 3+3?' },
  ];
  chatChecks(get, conversation, {});

  it('writes the turns of the model card: one <bos>, the system folded into the first user turn, "model"', () => {
    const chat = applyChatTemplate(f.loaded.tokenizer, f.loaded.template, conversation, {
      addGenerationPrompt: true,
    });
    expect(chat.text).toBe(
      '<bos><start_of_turn>user\nBe brief.\n\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n4<end_of_turn>\n' +
        '<start_of_turn>user\nAnd 3+3?<end_of_turn>\n<start_of_turn>model\n',
    );
    // The template writes bos; the encoding adds none of its own.
    expect(chat.ids.filter((id) => id === 2)).toEqual([2]);
    expect(chat.ids[0]).toBe(2);
  });

  it('stops generation at <end_of_turn>, also where the files name <eos> as eos', () => {
    const { tokenizer, template, codec } = f.loaded;
    expect(codec.eos).toEqual([106]);
    expect(codec.pad).toBe(0);
    // tokenizer_config.json with eos_token "<eos>" and no generation_config listing 106: the
    // same tokenizer with that eos (a second 33 MB load would double the file's time).
    const eosOnly = Object.create(tokenizer, { special: { value: { ...tokenizer.special, eos: [1] } } });
    expect(tokenizerCodec(eosOnly, template).eos).toEqual([1, 106]);
  });
});
