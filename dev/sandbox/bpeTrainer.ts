// Byte-level BPE training for the sandbox tokenizer, written out as the Hugging Face
// `tokenizer.json` (model BPE, ByteLevel pre-tokenizer / post-processor / decoder, added special
// tokens) + `tokenizer_config.json` (ChatML chat template, bos / eos / pad / unk) that SmolLM2's
// files have, so the sandbox models load through exactly the tokenizer code a hub model takes
// (src/model/tokenizer.ts, @huggingface/tokenizers).
//
// Training is the GPT-2 recipe, made deterministic:
//   1. pre-tokenise every line the way the library does at encode time: split off every digit
//      on its own (the Digits(individual_digits) pre-tokenizer of SmolLM2, so numbers are spelled
//      digit by digit and sums are learnable column by column), then the ByteLevel regex on each
//      piece (contractions, ` ?letters`, ` ?digits`, ` ?other`, whitespace); map each UTF-8 byte
//      to its printable GPT-2 character, and count the distinct words;
//   2. start from the 256 byte symbols; repeat: count adjacent symbol pairs over all words
//      (weighted by word count), merge the most frequent pair, ties broken by the smaller
//      (left, right) pair in code-unit order, until the vocabulary reaches the target size
//      (or no pair occurs twice).
// The library encodes by merge rank, which replays the training merges in order, so a training
// word encodes to the segmentation it had at the end of training.
//
// Ids: special tokens first (as SmolLM2: <|endoftext|> 0, <|im_start|> 1, <|im_end|> 2), then the
// 256 bytes in byte order, then one id per merge in merge order.

/** The ByteLevel pre-tokeniser's split pattern (GPT-2), as @huggingface/tokenizers runs it. */
export const BYTE_LEVEL_PATTERN = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

/** Special tokens of the sandbox tokenizer, in id order. */
export const SANDBOX_SPECIAL_TOKENS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'] as const;

/**
 * ChatML, the chat template of the sandbox models (the same text as src/model/chat.ts's
 * CHATML_TEMPLATE, kept here so the data layer does not import the model layer; a test checks
 * they agree).
 */
export const SANDBOX_CHAT_TEMPLATE =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}" +
  "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/** GPT-2's byte -> printable character map (bytes that print as themselves keep their code). */
export const BYTE_TO_UNICODE: readonly string[] = (() => {
  const keep = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const out: string[] = [];
  let n = 0;
  for (let b = 0; b < 256; b++) out.push(String.fromCharCode(keep(b) ? b : 256 + n++));
  return out;
})();

export interface BpeTrainOptions {
  /** Final vocabulary size including special tokens and the 256 byte symbols (default 448). */
  vocabSize?: number;
  /** Special tokens, given the first ids (default SANDBOX_SPECIAL_TOKENS). */
  specialTokens?: readonly string[];
  /** A pair must occur at least this often (weighted) to be merged (default 2). */
  minFrequency?: number;
}

export interface BpeModel {
  /** Token string (byte-level spelling) -> id, specials included. */
  vocab: Map<string, number>;
  /** Merges in rank order, as [left, right]. */
  merges: [string, string][];
  specialTokens: string[];
}

const utf8 = new TextEncoder();

/** The Digits pre-tokeniser with individual_digits: runs of non-digits, and each digit alone. */
export const DIGITS_PATTERN = /[^\d]+|\d/gu;

/**
 * Splits text the way the pre-tokeniser of bpeTokenizerJson does (Digits, then ByteLevel on each
 * piece) and spells each piece in byte characters.
 */
export function byteLevelWords(text: string): string[] {
  const pieces = (text.match(DIGITS_PATTERN) ?? []).flatMap((d) => d.match(BYTE_LEVEL_PATTERN) ?? []);
  return pieces.map((p) => Array.from(utf8.encode(p), (b) => BYTE_TO_UNICODE[b]).join(''));
}

function comparePair(a: string, b: string, c: string, d: string): number {
  // Code-unit order, independent of locale.
  if (a !== c) return a < c ? -1 : 1;
  if (b !== d) return b < d ? -1 : 1;
  return 0;
}

/** Trains a byte-level BPE on text lines (see the file comment for the algorithm). */
export function trainBpe(lines: Iterable<string>, opts: BpeTrainOptions = {}): BpeModel {
  const specials = [...(opts.specialTokens ?? SANDBOX_SPECIAL_TOKENS)];
  const target = opts.vocabSize ?? 448;
  const minFreq = opts.minFrequency ?? 2;
  const base = specials.length + 256;
  if (!Number.isInteger(target) || target < base) {
    throw new Error(`trainBpe: vocabSize must be an integer >= ${base} (specials + 256 bytes), got ${target}`);
  }
  if (new Set(specials).size !== specials.length) throw new Error('trainBpe: special tokens must be distinct');

  // Distinct words with counts; iterate them in sorted order so nothing depends on input order.
  const counts = new Map<string, number>();
  for (const line of lines) for (const w of byteLevelWords(line)) counts.set(w, (counts.get(w) ?? 0) + 1);
  const wordKeys = [...counts.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const words = wordKeys.map((w) => ({ syms: Array.from(w), n: counts.get(w) as number }));

  const vocab = new Map<string, number>();
  specials.forEach((s, i) => vocab.set(s, i));
  BYTE_TO_UNICODE.forEach((ch, b) => vocab.set(ch, specials.length + b));
  const merges: [string, string][] = [];

  while (vocab.size < target) {
    // Pair counts: key "left\u0000right" (no byte-level symbol contains U+0000).
    const pairs = new Map<string, number>();
    for (const w of words) {
      const s = w.syms;
      for (let i = 0; i + 1 < s.length; i++) {
        const k = `${s[i]}\u0000${s[i + 1]}`;
        pairs.set(k, (pairs.get(k) ?? 0) + w.n);
      }
    }
    let best: [string, string] | null = null;
    let bestN = 0;
    for (const [k, n] of pairs) {
      if (n < minFreq) continue;
      const [l, r] = k.split('\u0000') as [string, string];
      if (n > bestN || (n === bestN && best !== null && comparePair(l, r, best[0], best[1]) < 0)) {
        best = [l, r];
        bestN = n;
      }
    }
    if (!best) break;
    const [l, r] = best;
    const merged = l + r;
    merges.push([l, r]);
    if (!vocab.has(merged)) vocab.set(merged, vocab.size);
    for (const w of words) {
      const s = w.syms;
      if (s.length < 2) continue;
      const out: string[] = [];
      for (let i = 0; i < s.length; i++) {
        if (i + 1 < s.length && s[i] === l && s[i + 1] === r) {
          out.push(merged);
          i++;
        } else {
          out.push(s[i]);
        }
      }
      w.syms = out;
    }
  }
  return { vocab, merges, specialTokens: specials };
}

/** tokenizer.json (Hugging Face tokenizers format) of a trained byte-level BPE. */
export function bpeTokenizerJson(model: BpeModel): Record<string, unknown> {
  const vocab: Record<string, number> = {};
  for (const [tok, id] of [...model.vocab.entries()].sort((a, b) => a[1] - b[1])) vocab[tok] = id;
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: model.specialTokens.map((content) => ({
      id: model.vocab.get(content) as number,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: null,
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Digits', individual_digits: true },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
      ],
    },
    post_processor: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false, use_regex: true },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: model.merges.map(([l, r]) => `${l} ${r}`),
    },
  };
}

export interface TokenizerConfigOptions {
  /** Jinja chat template (default ChatML). */
  chatTemplate?: string;
  /** Context length the model was trained for (model_max_length). */
  modelMaxLength?: number;
}

/**
 * tokenizer_config.json in SmolLM2-Instruct's layout: bos <|im_start|>, eos and pad <|im_end|>,
 * unk <|endoftext|>, the special tokens listed in added_tokens_decoder.
 */
export function bpeTokenizerConfig(model: BpeModel, opts: TokenizerConfigOptions = {}): Record<string, unknown> {
  const need = (t: string) => {
    if (!model.vocab.has(t)) throw new Error(`bpeTokenizerConfig: the tokenizer has no ${t} token`);
    return t;
  };
  const decoder: Record<string, unknown> = {};
  for (const t of model.specialTokens) {
    decoder[String(model.vocab.get(t))] = {
      content: t,
      lstrip: false,
      normalized: false,
      rstrip: false,
      single_word: false,
      special: true,
    };
  }
  return {
    add_prefix_space: false,
    added_tokens_decoder: decoder,
    additional_special_tokens: [...model.specialTokens],
    bos_token: need('<|im_start|>'),
    chat_template: opts.chatTemplate ?? SANDBOX_CHAT_TEMPLATE,
    clean_up_tokenization_spaces: false,
    eos_token: need('<|im_end|>'),
    model_max_length: opts.modelMaxLength ?? 256,
    pad_token: need('<|im_end|>'),
    tokenizer_class: 'GPT2Tokenizer',
    unk_token: need('<|endoftext|>'),
  };
}
