// Tokenizers from a Hugging Face folder: tokenizer.json + tokenizer_config.json, run by
// @huggingface/tokenizers (0.2). That library implements the BPE, Unigram and WordPiece models
// (no WordLevel) and, given a model it does not know, silently falls back to a "Legacy" model
// that maps whole words to ids. So the files are checked here first: a malformed tokenizer.json
// or an unsupported model type gets one message naming the file and the field, not a wrong
// tokenisation or a TypeError from inside the library.

import { brief, clampMessage } from '../contract/brief';
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import type { ModelSource } from './sources';
import { catastrophicRegex, tokenizerRegexes } from './regexBound';

export class TokenizerError extends Error {
  constructor(message: string) {
    super(clampMessage(message));
    this.name = 'TokenizerError';
  }
}

/** Token models @huggingface/tokenizers implements. */
export const SUPPORTED_MODEL_TYPES = ['BPE', 'Unigram', 'WordPiece'] as const;

/** Ids of the special tokens a generation loop needs; eos may be several (Qwen2.5: im_end, endoftext). */
export interface SpecialTokenIds {
  bos: number | null;
  eos: number[];
  pad: number | null;
  unk: number | null;
}

export interface TokenizerLoadOptions {
  /** Model id or folder name, used in error messages. */
  label?: string;
  /** Parsed generation_config.json: its eos_token_id (number or list) joins the eos ids. */
  generationConfig?: unknown;
  /** Parsed config.json: its bos/eos/pad_token_id fill in what tokenizer_config.json lacks. */
  modelConfig?: unknown;
}

export interface EncodeOptions {
  /** Let the tokenizer's post-processor add its special tokens (e.g. a Llama bos). Default true. */
  addSpecialTokens?: boolean;
}

export interface DecodeOptions {
  /** Drop special tokens (<|im_end|>, ...) from the text. Default false. */
  skipSpecialTokens?: boolean;
  /**
   * Apply the legacy English clean-up (" ." -> "."). Defaults to tokenizer_config.json's
   * clean_up_tokenization_spaces, and to false when absent so byte-level text round-trips exactly.
   */
  cleanUpTokenizationSpaces?: boolean;
}

type Json = Record<string, unknown>;

const SPECIAL_KEYS = [
  'bos_token',
  'eos_token',
  'pad_token',
  'unk_token',
  'sep_token',
  'cls_token',
  'mask_token',
] as const;

function isObject(x: unknown): x is Json {
  return x !== null && typeof x === 'object' && !Array.isArray(x);
}

/** A special token in tokenizer_config.json is a string or an AddedToken dict {content, ...}. */
function tokenString(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (isObject(v) && typeof v.content === 'string') return v.content;
  return null;
}

/** GPT-2's byte -> printable-character map, inverted: character -> byte. */
const UNICODE_TO_BYTE: ReadonlyMap<string, number> = (() => {
  const keep = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const m = new Map<string, number>();
  let n = 0;
  for (let b = 0; b < 256; b++) m.set(String.fromCharCode(keep(b) ? b : 256 + n++), b);
  return m;
})();

function usesByteLevelDecoder(decoder: unknown): boolean {
  if (!isObject(decoder)) return false;
  if (decoder.type === 'ByteLevel') return true;
  if (decoder.type === 'Sequence' && Array.isArray(decoder.decoders))
    return decoder.decoders.some(usesByteLevelDecoder);
  return false;
}

/** Checks the parts of tokenizer.json the library would otherwise trip over or misread. */
function validateTokenizerJson(json: unknown, file: string): Json {
  if (!isObject(json)) throw new TokenizerError(`${file}: expected a JSON object at the top level`);
  const model = json.model;
  if (!isObject(model)) throw new TokenizerError(`${file}: field "model" is missing or not an object`);
  // Old files may leave the type out; infer it the way the library does, but never let a
  // WordLevel-shaped model fall through to the library's word-lookup fallback.
  let type = model.type;
  if (type === undefined) {
    if (Array.isArray(model.vocab)) type = 'Unigram';
    else if (Array.isArray(model.merges)) type = 'BPE';
    else if ('continuing_subword_prefix' in model && 'max_input_chars_per_word' in model) type = 'WordPiece';
    else
      throw new TokenizerError(
        `${file}: field "model.type" is missing (expected one of ${SUPPORTED_MODEL_TYPES.join(', ')})`,
      );
  }
  if (type === 'WordLevel') {
    throw new TokenizerError(
      `${file}: field "model.type" is "WordLevel", which @huggingface/tokenizers does not implement ` +
        `(supported: ${SUPPORTED_MODEL_TYPES.join(', ')})`,
    );
  }
  if (type !== undefined && !(SUPPORTED_MODEL_TYPES as readonly unknown[]).includes(type)) {
    throw new TokenizerError(
      `${file}: field "model.type" is ${brief(type)}; supported: ${SUPPORTED_MODEL_TYPES.join(', ')}`,
    );
  }
  if (type === 'BPE' || type === 'WordPiece') {
    if (!isObject(model.vocab))
      throw new TokenizerError(`${file}: field "model.vocab" must be an object of token -> id`);
    for (const [tok, id] of Object.entries(model.vocab)) {
      if (!Number.isInteger(id) || (id as number) < 0) {
        throw new TokenizerError(`${file}: field "model.vocab" maps ${brief(tok)} to ${brief(id)}, not a token id`);
      }
    }
  }
  if (type === 'Unigram' && !Array.isArray(model.vocab)) {
    throw new TokenizerError(`${file}: field "model.vocab" must be a list of [piece, score] for a Unigram model`);
  }
  if (type === 'BPE') {
    if (!Array.isArray(model.merges)) throw new TokenizerError(`${file}: field "model.merges" must be a list`);
    model.merges.forEach((m, i) => {
      const ok =
        (typeof m === 'string' && m.includes(' ')) ||
        (Array.isArray(m) && m.length === 2 && typeof m[0] === 'string' && typeof m[1] === 'string');
      if (!ok)
        throw new TokenizerError(`${file}: field "model.merges[${i}]" must be "a b" or ["a", "b"], got ${brief(m)}`);
    });
  }
  const added = json.added_tokens ?? [];
  if (!Array.isArray(added)) throw new TokenizerError(`${file}: field "added_tokens" must be a list`);
  added.forEach((t, i) => {
    if (!isObject(t) || typeof t.content !== 'string' || !Number.isInteger(t.id) || (t.id as number) < 0) {
      throw new TokenizerError(`${file}: field "added_tokens[${i}]" needs a string "content" and an integer "id"`);
    }
  });
  // The library requires these keys to exist (null is fine); real files always carry them.
  return {
    normalizer: null,
    pre_tokenizer: null,
    post_processor: null,
    decoder: null,
    ...json,
    model: { ...model, type },
    added_tokens: added,
  };
}

/** Maps the library's "Unknown X type" messages to the tokenizer.json field at fault. */
function libraryError(e: unknown, file: string): TokenizerError {
  const msg = e instanceof Error ? e.message : String(e);
  const fields: Record<string, string> = {
    Normalizer: 'normalizer',
    PreTokenizer: 'pre_tokenizer',
    PostProcessor: 'post_processor',
    Decoder: 'decoder',
    TokenizerModel: 'model',
  };
  const m = /^Unknown (\w+) type/.exec(msg);
  if (m && fields[m[1]]) return new TokenizerError(`${file}: field "${fields[m[1]]}" (or one nested in it): ${msg}`);
  return new TokenizerError(`${file}: ${msg}`);
}

/** Reads token ids from a config field that may hold one id or a list. */
function idList(v: unknown, file: string, field: string): number[] {
  if (v === undefined || v === null) return [];
  const list = Array.isArray(v) ? v : [v];
  for (const x of list) {
    if (!Number.isInteger(x) || x < 0)
      throw new TokenizerError(`${file}: field "${field}" must be a token id or a list of ids, got ${brief(v)}`);
  }
  return list as number[];
}

/**
 * A loaded tokenizer. Ids are plain numbers; `pieces` gives the text each id contributes, for
 * per-token displays.
 */
export class TextTokenizer {
  /** Model id or folder, for messages. */
  readonly label: string;
  /** One more than the largest id the tokenizer knows (vocabulary plus added tokens). */
  readonly vocabSize: number;
  readonly special: SpecialTokenIds;
  /** bos_token, eos_token, ... as strings, for chat templates. Absent keys are left out. */
  readonly specialTokens: Readonly<Record<string, string>>;
  /** Every id the tokenizer marks special (added tokens with special: true). */
  readonly specialIds: ReadonlySet<number>;
  /** tokenizer_config.json with AddedToken dicts flattened to strings. */
  readonly config: Readonly<Json>;
  private readonly hf: HfTokenizer;
  private readonly vocab: readonly (string | undefined)[];
  private readonly addedContent: ReadonlySet<string>;
  private readonly byteLevel: boolean;
  private readonly cleanUp: boolean;
  private readonly eosSet: ReadonlySet<number>;

  constructor(tokenizerJson: unknown, tokenizerConfig: unknown = {}, opts: TokenizerLoadOptions = {}) {
    this.label = opts.label ?? 'tokenizer';
    const where = opts.label ? ` (${opts.label})` : '';
    const tjFile = `tokenizer.json${where}`;
    const tcFile = `tokenizer_config.json${where}`;
    const json = validateTokenizerJson(tokenizerJson, tjFile);
    // Before the library compiles them: a backtracking regex from a model repo froze the worker.
    for (const { field, source } of tokenizerRegexes(json)) {
      const why = catastrophicRegex(source);
      if (why) throw new TokenizerError(`${tjFile}: field "${field}" (${brief(source)}) is refused: ${why}`);
    }
    if (tokenizerConfig === null || tokenizerConfig === undefined) tokenizerConfig = {};
    if (!isObject(tokenizerConfig)) throw new TokenizerError(`${tcFile}: expected a JSON object at the top level`);

    const config: Json = { ...tokenizerConfig };
    const strings: Record<string, string> = {};
    for (const key of SPECIAL_KEYS) {
      const v = config[key];
      if (v === undefined || v === null) continue;
      const s = tokenString(v);
      if (s === null) throw new TokenizerError(`${tcFile}: field "${key}" must be a string or {"content": string}`);
      config[key] = s;
      strings[key] = s;
    }
    if (config.additional_special_tokens !== undefined) {
      const extra = config.additional_special_tokens;
      if (!Array.isArray(extra))
        throw new TokenizerError(`${tcFile}: field "additional_special_tokens" must be a list`);
      config.additional_special_tokens = extra.map((v, i) => {
        const s = tokenString(v);
        if (s === null)
          throw new TokenizerError(
            `${tcFile}: field "additional_special_tokens[${i}]" must be a string or {"content": string}`,
          );
        return s;
      });
    }
    this.config = config;
    this.specialTokens = strings;

    try {
      this.hf = new HfTokenizer(json, config);
    } catch (e) {
      throw libraryError(e, tjFile);
    }
    const model = this.hf.model;
    if (!model) throw new TokenizerError(`${tjFile}: field "model" produced no token model`);
    this.vocab = model.vocab;
    this.vocabSize = model.vocab.length;

    const added = json.added_tokens as { id: number; content: string; special?: boolean }[];
    this.addedContent = new Set(added.map((t) => t.content));
    this.specialIds = new Set(added.filter((t) => t.special).map((t) => t.id));
    this.byteLevel = usesByteLevelDecoder(json.decoder);
    const cu = config.clean_up_tokenization_spaces;
    this.cleanUp = typeof cu === 'boolean' ? cu : false;

    // Special ids: tokenizer_config.json's strings first, then generation_config.json and
    // config.json (which is where a list of several eos ids lives).
    const idOf = (key: (typeof SPECIAL_KEYS)[number]): number | null => {
      const s = strings[key];
      if (s === undefined) return null;
      const id = this.hf.token_to_id(s);
      if (id === undefined)
        throw new TokenizerError(`${tcFile}: field "${key}" is ${brief(s)}, which is not a token of tokenizer.json`);
      return id;
    };
    const gen = isObject(opts.generationConfig) ? opts.generationConfig : {};
    const cfg = isObject(opts.modelConfig) ? opts.modelConfig : {};
    const genFile = `generation_config.json${where}`;
    const cfgFile = `config.json${where}`;
    const checked = (ids: number[], file: string, field: string) => {
      for (const id of ids) {
        if (id >= this.vocabSize) {
          throw new TokenizerError(
            `${file}: field "${field}" holds id ${id}, outside the tokenizer's vocabulary of ${this.vocabSize}`,
          );
        }
      }
      return ids;
    };
    const first = (...lists: number[][]) => lists.find((l) => l.length > 0)?.[0] ?? null;

    const eos: number[] = [];
    const eosTok = idOf('eos_token');
    for (const id of [
      ...(eosTok === null ? [] : [eosTok]),
      ...checked(idList(gen.eos_token_id, genFile, 'eos_token_id'), genFile, 'eos_token_id'),
      ...checked(idList(cfg.eos_token_id, cfgFile, 'eos_token_id'), cfgFile, 'eos_token_id'),
    ]) {
      if (!eos.includes(id)) eos.push(id);
    }
    const bosTok = idOf('bos_token');
    const padTok = idOf('pad_token');
    this.special = {
      bos:
        bosTok ??
        first(
          checked(idList(gen.bos_token_id, genFile, 'bos_token_id'), genFile, 'bos_token_id'),
          checked(idList(cfg.bos_token_id, cfgFile, 'bos_token_id'), cfgFile, 'bos_token_id'),
        ),
      eos,
      pad:
        padTok ??
        first(
          checked(idList(gen.pad_token_id, genFile, 'pad_token_id'), genFile, 'pad_token_id'),
          checked(idList(cfg.pad_token_id, cfgFile, 'pad_token_id'), cfgFile, 'pad_token_id'),
        ),
      unk: idOf('unk_token'),
    };
    this.eosSet = new Set(eos);
  }

  /** Text -> ids. */
  encode(text: string, opts: EncodeOptions = {}): number[] {
    return this.hf.encode(text, { add_special_tokens: opts.addSpecialTokens ?? true }).ids;
  }

  /** Ids -> text. Throws on an id outside the vocabulary (a model/tokenizer mismatch). */
  decode(ids: ArrayLike<number>, opts: DecodeOptions = {}): string {
    const list = this.checkIds(ids);
    if (list.length === 0) return '';
    return this.hf.decode(list, {
      skip_special_tokens: opts.skipSpecialTokens ?? false,
      clean_up_tokenization_spaces: opts.cleanUpTokenizationSpaces ?? this.cleanUp,
    });
  }

  /**
   * The text each id adds, one string per id; joined they equal decode(ids) (without clean-up).
   * With byte-level tokens a character split over several ids is given to the id that completes
   * it, and the ids before it get "" (a lone emoji byte is not printable text).
   */
  pieces(ids: ArrayLike<number>): string[] {
    const list = this.checkIds(ids);
    if (this.byteLevel) {
      const utf8 = new TextEncoder();
      const dec = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
      const out = list.map((id) => {
        const tok = this.vocab[id] as string;
        let bytes: Uint8Array;
        if (this.addedContent.has(tok)) {
          bytes = utf8.encode(tok);
        } else {
          const arr: number[] = [];
          for (const ch of tok) {
            const b = UNICODE_TO_BYTE.get(ch);
            if (b === undefined) arr.push(...utf8.encode(ch));
            else arr.push(b);
          }
          bytes = new Uint8Array(arr);
        }
        return dec.decode(bytes, { stream: true });
      });
      // Bytes left at the end are an unfinished character: decode() shows it as U+FFFD.
      const tail = dec.decode();
      if (tail && out.length > 0) out[out.length - 1] += tail;
      return out;
    }
    // Other decoders (Metaspace, WordPiece) can change earlier text as tokens arrive, so take
    // the difference of successive prefix decodes; when a prefix is rewritten, fall back to
    // the id decoded alone.
    const out: string[] = [];
    let prev = '';
    for (let i = 0; i < list.length; i++) {
      const cur = this.decode(list.slice(0, i + 1), { cleanUpTokenizationSpaces: false });
      out.push(
        cur.startsWith(prev) ? cur.slice(prev.length) : this.decode([list[i]], { cleanUpTokenizationSpaces: false }),
      );
      prev = cur;
    }
    return out;
  }

  /** The vocabulary string of an id (byte-level spelling, e.g. "Ġworld"). */
  idToToken(id: number): string | undefined {
    return this.vocab[id];
  }

  tokenToId(token: string): number | undefined {
    return this.hf.token_to_id(token);
  }

  isEos(id: number): boolean {
    return this.eosSet.has(id);
  }

  isSpecial(id: number): boolean {
    return this.specialIds.has(id);
  }

  private checkIds(ids: ArrayLike<number>): number[] {
    const list = Array.from(ids);
    for (const id of list) {
      if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize || this.vocab[id] === undefined) {
        throw new TokenizerError(`${this.label}: token id ${id} is not in the vocabulary (size ${this.vocabSize})`);
      }
    }
    return list;
  }
}

/** Builds a tokenizer from parsed tokenizer.json and tokenizer_config.json objects. */
export function createTokenizer(
  tokenizerJson: unknown,
  tokenizerConfig?: unknown,
  opts: TokenizerLoadOptions = {},
): TextTokenizer {
  return new TextTokenizer(tokenizerJson, tokenizerConfig ?? {}, opts);
}

function parseJson(text: string, file: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new TokenizerError(`${file}: not valid JSON: ${(e as Error).message}`);
  }
}

/** From Files or Blobs (a folder the user picked, a drag-and-drop). */
export async function loadTokenizerFromFiles(
  tokenizerJson: Blob,
  tokenizerConfig?: Blob | null,
  opts: TokenizerLoadOptions = {},
): Promise<TextTokenizer> {
  const where = opts.label ? ` (${opts.label})` : '';
  const tj = parseJson(await tokenizerJson.text(), `tokenizer.json${where}`);
  const tc = tokenizerConfig ? parseJson(await tokenizerConfig.text(), `tokenizer_config.json${where}`) : {};
  return createTokenizer(tj, tc, opts);
}

/** From URLs; tokenizer_config.json is optional (pass null to skip it). */
export async function loadTokenizerFromUrls(
  tokenizerJsonUrl: string | URL,
  tokenizerConfigUrl?: string | URL | null,
  opts: TokenizerLoadOptions & { fetch?: typeof globalThis.fetch; signal?: AbortSignal } = {},
): Promise<TextTokenizer> {
  const doFetch = opts.fetch ?? globalThis.fetch;
  const get = async (url: string | URL, file: string): Promise<unknown> => {
    let res: Response;
    try {
      res = await doFetch(String(url), { signal: opts.signal });
    } catch (e) {
      throw new TokenizerError(`${file}: fetch of ${String(url)} failed: ${(e as Error).message}`);
    }
    if (!res.ok) throw new TokenizerError(`${file}: fetch of ${String(url)} failed: HTTP ${res.status}`);
    return parseJson(await res.text(), `${file} (${String(url)})`);
  };
  const tj = await get(tokenizerJsonUrl, 'tokenizer.json');
  const tc = tokenizerConfigUrl ? await get(tokenizerConfigUrl, 'tokenizer_config.json') : {};
  return createTokenizer(tj, tc, { ...opts, label: opts.label ?? String(tokenizerJsonUrl) });
}

/**
 * From a model source (hub, picked folder, in-memory map): tokenizer.json is required;
 * tokenizer_config.json, generation_config.json and config.json are read when present.
 */
export async function loadTokenizer(source: ModelSource, opts: { signal?: AbortSignal } = {}): Promise<TextTokenizer> {
  const optional = async (name: string) => ((await source.has(name, opts)) ? source.getJson(name, opts) : undefined);
  const tokenizerJson = await source.getJson('tokenizer.json', opts);
  const [tokenizerConfig, generationConfig, modelConfig] = [
    await optional('tokenizer_config.json'),
    await optional('generation_config.json'),
    await optional('config.json'),
  ];
  return createTokenizer(tokenizerJson, tokenizerConfig ?? {}, { label: source.label, generationConfig, modelConfig });
}
