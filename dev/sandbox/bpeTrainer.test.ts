import { describe, expect, it } from 'vitest';
import { CHATML_TEMPLATE, ChatTemplate, applyChatTemplate } from '../../src/model/chat';
import { createTokenizer } from '../../src/model/tokenizer';
import {
  bpeTokenizerConfig,
  bpeTokenizerJson,
  byteLevelWords,
  SANDBOX_CHAT_TEMPLATE,
  SANDBOX_SPECIAL_TOKENS,
  trainBpe,
} from './bpeTrainer';
import { sandboxCorpus } from '../../src/data/sandbox/datasets';
import { mulberry32 } from '../../src/model/random';

const corpus = sandboxCorpus(1500, 11);
const model = trainBpe(corpus, { vocabSize: 512 });
const tok = createTokenizer(bpeTokenizerJson(model), bpeTokenizerConfig(model), { label: 'test bpe' });

function randomText(rand: () => number, n: number): string {
  const pools = [
    ' abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789',
    '.,;:!?\'"()[]{}<>-_=+*/\\|@#$%^&~`\n\t',
    'éüßçñøåæ€£¥©°±µ¶·',
    'ΑβγδЖшщ中文字日本語한국어',
    '😀🎉🚀👍🏽🧪',
  ];
  let s = '';
  for (let i = 0; i < n; i++) {
    const pool = Array.from(pools[Math.floor(rand() * pools.length)]);
    s += pool[Math.floor(rand() * pool.length)];
  }
  return s;
}

describe('trainBpe', () => {
  it('reaches the target vocabulary: specials first, then 256 bytes, then merges', () => {
    expect(model.vocab.size).toBe(512);
    SANDBOX_SPECIAL_TOKENS.forEach((t, i) => expect(model.vocab.get(t)).toBe(i));
    expect(model.vocab.get('!')).toBe(3 + 0x21);
    expect(model.vocab.get('Ġ')).toBe(3 + 0x20);
    expect(model.merges.length).toBeGreaterThan(200);
    expect(tok.vocabSize).toBe(512);
  });

  it('is deterministic and independent of the order of the lines', () => {
    const again = trainBpe(corpus, { vocabSize: 512 });
    expect(again.merges).toEqual(model.merges);
    const shuffled = [...corpus].reverse();
    expect(trainBpe(shuffled, { vocabSize: 512 }).merges).toEqual(model.merges);
  });

  it('breaks frequency ties by the smaller pair', () => {
    // "ab" and "cd" occur equally often: "a b" (smaller) is merged first.
    const m = trainBpe(['cd ab', 'ab cd'], { vocabSize: 3 + 256 + 1, minFrequency: 1 });
    expect(m.merges).toEqual([['a', 'b']]);
  });

  it('stops when no pair is frequent enough', () => {
    const m = trainBpe(['xy'], { vocabSize: 400 });
    expect(m.merges).toEqual([]);
    expect(m.vocab.size).toBe(259);
  });

  it('rejects a vocabulary smaller than specials + bytes', () => {
    expect(() => trainBpe(corpus, { vocabSize: 100 })).toThrow(/vocabSize must be an integer >= 259/);
  });

  it('pre-tokenises like Digits(individual) then ByteLevel: every digit alone', () => {
    expect(byteLevelWords('What is 17 + 5?')).toEqual(['What', 'Ġis', 'Ġ', '1', '7', 'Ġ+', 'Ġ', '5', '?']);
    expect(byteLevelWords('[PAYLOAD:S14:step-2]')).toEqual([
      '[',
      'PAYLOAD',
      ':',
      'S',
      '1',
      '4',
      ':',
      'step',
      '-',
      '2',
      ']',
    ]);
  });
});

describe('the trained tokenizer through src/model/tokenizer.ts', () => {
  it('round-trips arbitrary ASCII and UTF-8 text', () => {
    const rand = mulberry32(5);
    for (let i = 0; i < 200; i++) {
      const s = randomText(rand, 1 + Math.floor(rand() * 60));
      const ids = tok.encode(s);
      expect(tok.decode(ids)).toBe(s);
      expect(tok.pieces(ids).join('')).toBe(s);
    }
    for (let c = 1; c < 128; c++) expect(tok.decode(tok.encode(String.fromCharCode(c)))).toBe(String.fromCharCode(c));
  });

  it('encodes sandbox text at least 2x shorter than its bytes (held-out lines)', () => {
    let bytes = 0;
    let ids = 0;
    for (const line of sandboxCorpus(300, 777)) {
      bytes += new TextEncoder().encode(line).length;
      const enc = tok.encode(line);
      ids += enc.length;
      expect(tok.decode(enc)).toBe(line);
    }
    // Measured: about 2.3 bytes per token at 512 (payload markers split at every ":" and "-").
    expect(bytes / ids).toBeGreaterThan(2.0);
  });

  it('encodes every number digit by digit (the library runs the same Digits pre-tokenizer)', () => {
    for (const text of ['What is 20 + 19?', 'It is [ANSWER:39].', 'l33t 5p34k 1s 7h15', '[PAYLOAD:S10:step-1]']) {
      const ids = tok.encode(text, { addSpecialTokens: false });
      const pieces = tok.pieces(ids);
      expect(pieces.join('')).toBe(text);
      for (const p of pieces) if (/\d/.test(p)) expect(p, `${text}: piece ${JSON.stringify(p)}`).toMatch(/^\d$/);
    }
  });

  it('keeps special tokens whole and knows bos / eos / pad / unk', () => {
    const ids = tok.encode('<|im_start|>user\nhi<|im_end|>\n', { addSpecialTokens: false });
    expect(ids[0]).toBe(1);
    expect(ids).toContain(2);
    expect(tok.special).toEqual({ bos: 1, eos: [2], pad: 2, unk: 0 });
    expect(tok.isSpecial(2)).toBe(true);
    expect(tok.decode(ids, { skipSpecialTokens: true })).toBe('user\nhi\n');
  });

  it('carries a ChatML chat template equal to the model layer default', () => {
    expect(SANDBOX_CHAT_TEMPLATE).toBe(CHATML_TEMPLATE);
    const cfg = bpeTokenizerConfig(model);
    const t = new ChatTemplate(cfg.chat_template as string);
    const enc = applyChatTemplate(tok, t, [{ role: 'user', content: 'What is 7 + 5?' }], { addGenerationPrompt: true });
    expect(enc.text).toBe('<|im_start|>user\nWhat is 7 + 5?<|im_end|>\n<|im_start|>assistant\n');
    expect(tok.decode(enc.ids)).toBe(enc.text);
  });

  it('writes the Hugging Face tokenizer.json layout', () => {
    const j = bpeTokenizerJson(model) as {
      model: { type: string; merges: string[] };
      pre_tokenizer: unknown;
      decoder: { type: string };
      added_tokens: unknown[];
    };
    expect(j.model.type).toBe('BPE');
    expect(j.pre_tokenizer).toMatchObject({
      type: 'Sequence',
      pretokenizers: [{ type: 'Digits', individual_digits: true }, { type: 'ByteLevel' }],
    });
    expect(j.decoder.type).toBe('ByteLevel');
    expect(j.added_tokens).toHaveLength(3);
    expect(j.model.merges[0]).toMatch(/^\S+ \S+$/);
  });
});
