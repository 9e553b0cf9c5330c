import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { mapSource } from './sources';
import {
  createTokenizer,
  loadTokenizer,
  loadTokenizerFromFiles,
  loadTokenizerFromUrls,
  TextTokenizer,
  TokenizerError,
} from './tokenizer';

// The fixture (see dev/test/testdata/make-chat-tokenizer.mjs): ids 0..2 are <|endoftext|>, <|im_start|>,
// <|im_end|>; byte b is id 3 + b; merge k (rank k) makes id 259 + k:
//   259 Ġt  260 he  261 Ġthe  262 ll  263 ell  264 Hell  265 Hello  266 Ġw  267 or  268 Ġwor
//   269 ld  270 Ġworld  271 é (Ã©)  272 us  273 er  274 user
const dir = resolve(dirname(fileURLToPath(import.meta.url)), '../../dev/test/testdata/chat-tokenizer');
const tokenizerText = readFileSync(resolve(dir, 'tokenizer.json'), 'utf8');
const configText = readFileSync(resolve(dir, 'tokenizer_config.json'), 'utf8');
const tokenizerJson = () => JSON.parse(tokenizerText) as Record<string, any>;
const tokenizerConfig = () => JSON.parse(configText) as Record<string, any>;
const load = () => createTokenizer(tokenizerJson(), tokenizerConfig(), { label: 'chat-tokenizer' });

/** The byte token of a byte value: id 3 + b. */
const B = (ch: string) => 3 + ch.charCodeAt(0);

describe('byte-level BPE fixture', () => {
  it('reports vocabulary size and special ids', () => {
    const tok = load();
    expect(tok.vocabSize).toBe(3 + 256 + 16);
    expect(tok.special).toEqual({ bos: 1, eos: [2], pad: 2, unk: 0 });
    expect(tok.specialTokens).toMatchObject({
      bos_token: '<|im_start|>',
      eos_token: '<|im_end|>',
      pad_token: '<|im_end|>',
    });
    expect([...tok.specialIds].sort()).toEqual([0, 1, 2]);
    expect(tok.isEos(2)).toBe(true);
    expect(tok.isEos(1)).toBe(false);
    expect(tok.idToToken(270)).toBe('Ġworld');
    expect(tok.tokenToId('<|im_end|>')).toBe(2);
  });

  it('applies merges in rank order', () => {
    const tok = load();
    // "Hello": l l (rank 3) -> e ll (4) -> H ell (5) -> Hell o (6). " world": Ġ w (7) -> o r (8)
    // -> Ġw or (9) -> l d (10) -> Ġwor ld (11).
    expect(tok.encode('Hello world')).toEqual([265, 270]);
    // "the" has no Ġ: only h e (1) applies -> [t, he]. " there": Ġ t (0) -> h e (1) ->
    // Ġt he (2) -> Ġthe r e; e r (14) never gets the e, h e took it first.
    expect(tok.encode('the there')).toEqual([B('t'), 260, 261, B('r'), B('e')]);
    expect(tok.encode(' the')).toEqual([261]);
    expect(tok.encode('')).toEqual([]);
  });

  it('encodes UTF-8 as bytes: é is merged, an emoji is four byte tokens', () => {
    const tok = load();
    // é = C3 A9 -> merge 12 (id 271); " 😀" = 20 F0 9F 98 80 (one pre-token, no merges)
    expect(tok.encode('café 😀')).toEqual([
      B('c'),
      B('a'),
      B('f'),
      271,
      3 + 0x20,
      3 + 0xf0,
      3 + 0x9f,
      3 + 0x98,
      3 + 0x80,
    ]);
  });

  it('matches special tokens whole and encodes the text between them', () => {
    const tok = load();
    // user = u s (13) -> e r (14) -> us er (15) = 274; "\n" is byte 0x0A -> 13
    expect(tok.encode('<|im_start|>user\nHi<|im_end|>')).toEqual([1, 274, 13, B('H'), B('i'), 2]);
  });

  it('round-trips arbitrary UTF-8', () => {
    const tok = load();
    for (const s of [
      'Hello world',
      'naïve façade — Ünïcödé ✓',
      '😀👍🏽 family: 👨‍👩‍👧 flags 🇫🇷',
      '中文，日本語のテキスト',
      '  leading and trailing spaces  \n\ttabs\r\n',
      "it's don't we'll 12345 3.14",
      'Hello world again <|im_end|> after special',
    ]) {
      expect(tok.decode(tok.encode(s))).toBe(s);
    }
  });

  it('decodes special tokens, or skips them', () => {
    const tok = load();
    const ids = [1, 274, 13, B('H'), B('i'), 2];
    expect(tok.decode(ids)).toBe('<|im_start|>user\nHi<|im_end|>');
    expect(tok.decode(ids, { skipSpecialTokens: true })).toBe('user\nHi');
    expect(tok.decode([])).toBe('');
    expect(tok.decode(new Int32Array([265, 270]))).toBe('Hello world');
  });

  it('rejects ids outside the vocabulary', () => {
    const tok = load();
    expect(() => tok.decode([265, 275])).toThrow(/token id 275 is not in the vocabulary \(size 275\)/);
    expect(() => tok.pieces([-1])).toThrow(TokenizerError);
  });

  it('gives each id the text it adds; split characters go to the id completing them', () => {
    const tok = load();
    const ids = tok.encode('café 😀');
    expect(tok.pieces(ids)).toEqual(['c', 'a', 'f', 'é', ' ', '', '', '', '😀']);
    expect(tok.pieces([1, 274, 13, 265, 270, 2])).toEqual([
      '<|im_start|>',
      'user',
      '\n',
      'Hello',
      ' world',
      '<|im_end|>',
    ]);
    // An unfinished character shows as U+FFFD, as in decode().
    expect(tok.pieces([3 + 0xf0, 3 + 0x9f])).toEqual(['', '\uFFFD']);
    expect(tok.decode([3 + 0xf0, 3 + 0x9f])).toBe('\uFFFD');
  });

  it('adds the post-processor special tokens only when asked', () => {
    const json = tokenizerJson();
    json.post_processor = {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<|endoftext|>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [],
      special_tokens: { '<|endoftext|>': { id: '<|endoftext|>', ids: [0], tokens: ['<|endoftext|>'] } },
    };
    const tok = createTokenizer(json, tokenizerConfig());
    expect(tok.encode('Hi')).toEqual([0, B('H'), B('i')]);
    expect(tok.encode('Hi', { addSpecialTokens: false })).toEqual([B('H'), B('i')]);
  });

  it('collects several eos ids from generation_config.json and config.json', () => {
    const tok = createTokenizer(tokenizerJson(), tokenizerConfig(), {
      generationConfig: { eos_token_id: [2, 0] },
      modelConfig: { eos_token_id: 1 },
    });
    expect(tok.special.eos).toEqual([2, 0, 1]);
    expect(tok.isEos(0)).toBe(true);
  });

  it('falls back to config.json ids without tokenizer_config.json, and reads AddedToken dicts', () => {
    const bare = createTokenizer(tokenizerJson(), undefined, { modelConfig: { bos_token_id: 1, eos_token_id: 2 } });
    expect(bare.special).toEqual({ bos: 1, eos: [2], pad: null, unk: null });
    const cfg = tokenizerConfig();
    cfg.bos_token = { __type: 'AddedToken', content: '<|endoftext|>', special: true };
    const dict = createTokenizer(tokenizerJson(), cfg);
    expect(dict.specialTokens.bos_token).toBe('<|endoftext|>');
    expect(dict.special.bos).toBe(0);
  });
});

describe('a non-byte-level tokenizer (WordPiece)', () => {
  const wordPiece = {
    added_tokens: [{ id: 0, content: '[UNK]', special: true }],
    normalizer: null,
    pre_tokenizer: { type: 'WhitespaceSplit' },
    post_processor: null,
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: {
      type: 'WordPiece',
      unk_token: '[UNK]',
      continuing_subword_prefix: '##',
      max_input_chars_per_word: 100,
      vocab: { '[UNK]': 0, hel: 1, '##lo': 2, world: 3 },
    },
  };

  it('encodes greedily longest-first and gives pieces from successive decodes', () => {
    const tok = createTokenizer(wordPiece, { unk_token: '[UNK]' });
    expect(tok.vocabSize).toBe(4);
    // "hello" -> hel + ##lo; "world" whole; "xyz" unknown
    expect(tok.encode('hello world xyz')).toEqual([1, 2, 3, 0]);
    expect(tok.decode([1, 2, 3])).toBe('hello world');
    expect(tok.pieces([1, 2, 3])).toEqual(['hel', 'lo', ' world']);
    expect(tok.special).toEqual({ bos: null, eos: [], pad: null, unk: 0 });
  });
});

describe('malformed files', () => {
  const fails = (json: unknown, config: unknown, pattern: RegExp, opts = { label: 'my-model' }) => {
    expect(() => createTokenizer(json, config, opts)).toThrow(TokenizerError);
    expect(() => createTokenizer(json, config, opts)).toThrow(pattern);
  };

  it('names WordLevel as unsupported', () => {
    const json = tokenizerJson();
    json.model = { type: 'WordLevel', vocab: { a: 0 }, unk_token: 'a' };
    fails(
      json,
      {},
      /^tokenizer\.json \(my-model\): field "model\.type" is "WordLevel".*not implement.*BPE, Unigram, WordPiece/,
    );
  });

  it('names the missing or broken field', () => {
    fails([], {}, /tokenizer\.json \(my-model\): expected a JSON object/);
    const noModel = tokenizerJson();
    delete noModel.model;
    fails(noModel, {}, /field "model" is missing/);
    const noType = tokenizerJson();
    noType.model = { vocab: { a: 0 }, unk_token: 'a' }; // WordLevel-shaped, no type
    fails(noType, {}, /field "model\.type" is missing/);
    const badMerge = tokenizerJson();
    badMerge.model.merges[1] = 'hex';
    fails(badMerge, {}, /field "model\.merges\[1\]"/);
    const badVocab = tokenizerJson();
    badVocab.model.vocab.he = 'x';
    fails(badVocab, {}, /field "model\.vocab" maps "he"/);
    const badAdded = tokenizerJson();
    badAdded.added_tokens[2] = { content: '<|im_end|>' };
    fails(badAdded, {}, /field "added_tokens\[2\]"/);
    const badPre = tokenizerJson();
    badPre.pre_tokenizer = { type: 'Nonsense' };
    fails(badPre, {}, /field "pre_tokenizer".*Unknown PreTokenizer type: Nonsense/);
  });

  it('infers a missing model type from the fields, as the library does', () => {
    const json = tokenizerJson();
    delete json.model.type;
    expect(createTokenizer(json, {}).encode('Hello world')).toEqual([265, 270]);
  });

  it('checks tokenizer_config.json and generation_config.json against the vocabulary', () => {
    fails(tokenizerJson(), 'nope', /tokenizer_config\.json \(my-model\): expected a JSON object/);
    fails(
      tokenizerJson(),
      { bos_token: '<s>' },
      /tokenizer_config\.json \(my-model\): field "bos_token" is "<s>", which is not a token/,
    );
    fails(tokenizerJson(), { eos_token: 7 }, /field "eos_token" must be a string/);
    expect(() =>
      createTokenizer(tokenizerJson(), {}, { label: 'm', generationConfig: { eos_token_id: [2, 999] } }),
    ).toThrow(
      /generation_config\.json \(m\): field "eos_token_id" holds id 999, outside the tokenizer's vocabulary of 275/,
    );
    expect(() => createTokenizer(tokenizerJson(), {}, { generationConfig: { eos_token_id: 'x' } })).toThrow(
      /generation_config\.json: field "eos_token_id" must be a token id/,
    );
  });
});

describe('loading', () => {
  it('from Blobs, naming a file that is not JSON', async () => {
    const tok = await loadTokenizerFromFiles(new Blob([tokenizerText]), new Blob([configText]), { label: 'files' });
    expect(tok.encode('Hello world')).toEqual([265, 270]);
    expect(tok.special.eos).toEqual([2]);
    await expect(loadTokenizerFromFiles(new Blob(['{"model": ']), null, { label: 'x' })).rejects.toThrow(
      /tokenizer\.json \(x\): not valid JSON/,
    );
  });

  it('from URLs (fetch stub), with a clear error for HTTP failures', async () => {
    const served: Record<string, string> = {
      'http://t/tokenizer.json': tokenizerText,
      'http://t/tokenizer_config.json': configText,
    };
    const fetch = (async (url: string) =>
      url in served
        ? new Response(served[url])
        : new Response('no', { status: 404 })) as unknown as typeof globalThis.fetch;
    const tok = await loadTokenizerFromUrls('http://t/tokenizer.json', 'http://t/tokenizer_config.json', { fetch });
    expect(tok).toBeInstanceOf(TextTokenizer);
    expect(tok.label).toBe('http://t/tokenizer.json');
    expect(tok.special.bos).toBe(1);
    await expect(loadTokenizerFromUrls('http://t/missing.json', null, { fetch })).rejects.toThrow(
      /tokenizer\.json: fetch of http:\/\/t\/missing\.json failed: HTTP 404/,
    );
  });

  it('from a model source, reading generation_config.json when present', async () => {
    const src = mapSource(
      {
        'tokenizer.json': tokenizerText,
        'tokenizer_config.json': configText,
        'generation_config.json': JSON.stringify({ eos_token_id: [2, 0] }),
      },
      { label: 'mem' },
    );
    const tok = await loadTokenizer(src);
    expect(tok.label).toBe('mem');
    expect(tok.special.eos).toEqual([2, 0]);
    await expect(loadTokenizer(mapSource({ 'config.json': '{}' }, { label: 'empty' }))).rejects.toThrow(
      /tokenizer\.json not found in empty/,
    );
  });
});
