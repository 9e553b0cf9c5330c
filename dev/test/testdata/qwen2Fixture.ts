// A tiny Qwen2 model in the layout of a hub repository, generated on demand for tests (nothing is
// committed): config.json (Qwen2ForCausalLM, untied head, a vocab_size padded past the
// tokenizer's as Qwen pads it), model.safetensors (BF16, q/k/v biases), tokenizer.json (byte-level
// BPE behind Qwen2's Split-regex pre-tokenizer and an NFC normaliser: not the sandbox's
// Digits + ByteLevel), tokenizer_config.json (a ChatML template with a default system message),
// and generation_config.json with two eos ids, one of which only it lists.
//
// Everything is a function of SEED, so two calls write the same bytes. One hidden direction (dim
// 0) is held constant through the residual stream (embedding column 0 = 1, every o_proj and
// down_proj output row 0 = 0) and the LM head reads only it for <|endoftext|>: greedy decoding
// then writes <|endoftext|> at once, which stops generation only if that second eos id is known.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { mulberry32 } from '../../../src/engine/index';

export const QWEN2_DIMS = {
  hidden: 64,
  intermediate: 128,
  layers: 2,
  heads: 4,
  kvHeads: 2,
  headDim: 16,
  vocab: 320,
  ropeTheta: 1_000_000,
  eps: 1e-6,
} as const;

/** GPT-2's reversible byte -> printable character map. */
export function bytesToUnicode(): string[] {
  const keep = new Set<number>();
  for (let b = 0x21; b <= 0x7e; b++) keep.add(b);
  for (let b = 0xa1; b <= 0xac; b++) keep.add(b);
  for (let b = 0xae; b <= 0xff; b++) keep.add(b);
  let n = 0;
  return Array.from({ length: 256 }, (_, b) => String.fromCharCode(keep.has(b) ? b : 256 + n++));
}

// Merges chosen so that the pre-tokenizer shows: "(hello" is one Qwen2 pre-token (punctuation
// joins the letters after it) and merges into one token; GPT-2's regex would split off "(".
export const MERGES: [string, string][] = [
  ['e', 'l'],
  ['el', 'l'],
  ['(', 'h'],
  ['(h', 'ell'],
  ['(hell', 'o'],
  ['Ġ', 'w'],
  ['o', 'r'],
  ['Ġw', 'or'],
  ['l', 'd'],
  ['Ġwor', 'ld'],
  ['h', 'i'],
  ['Ġ', 'a'],
  ['s', 's'],
  ['i', 's'],
  ['t', 'a'],
  ['n', 't'],
];
const BYTE = bytesToUnicode();
export const VOCAB: Record<string, number> = {};
BYTE.forEach((c, b) => (VOCAB[c] = b));
MERGES.forEach(([a, b], i) => (VOCAB[a + b] = 256 + i));
const FIRST_SPECIAL = 256 + MERGES.length;
export const ENDOFTEXT = FIRST_SPECIAL;
export const IM_START = FIRST_SPECIAL + 1;
export const IM_END = FIRST_SPECIAL + 2;
/** Qwen2's pre-tokenizer pattern. */
export const QWEN2_PATTERN =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
export const DEFAULT_SYSTEM = 'You are Tiny, a test model. You are a helpful assistant.';
/** Qwen2.5's template shape: the first message if it is a system one, else the default system message. */
export const CHAT_TEMPLATE =
  "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}" +
  `{%- else %}{{- '<|im_start|>system\\n${DEFAULT_SYSTEM}<|im_end|>\\n' }}{%- endif %}` +
  "{%- for message in messages %}{%- if not (message.role == 'system' and loop.first) %}" +
  "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}{%- endif %}{%- endfor %}" +
  "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

/** float32 -> bfloat16 bits, round to nearest even (what torch's .to(bfloat16) does). */
export function bf16Bits(x: number): number {
  const u = new Uint32Array(new Float32Array([x]).buffer)[0];
  return ((u + 0x7fff + ((u >>> 16) & 1)) >>> 16) & 0xffff;
}
export const bf16Value = (bits: number): number => new Float32Array(new Uint32Array([bits << 16]).buffer)[0];

export interface Qwen2Tensor {
  shape: number[];
  /** The stored (bfloat16) values, exactly, as float64. */
  data: Float64Array;
}

/** The model's tensors under their Hugging Face names, values already rounded to bfloat16. */
export function qwen2Weights(seed = 7): Map<string, Qwen2Tensor> {
  const D = QWEN2_DIMS;
  const rnd = mulberry32(seed);
  const out = new Map<string, Qwen2Tensor>();
  const add = (name: string, shape: number[], f: (i: number) => number) => {
    const n = shape.reduce((a, b) => a * b, 1);
    const data = new Float64Array(n);
    for (let i = 0; i < n; i++) data[i] = bf16Value(bf16Bits(f(i)));
    out.set(name, { shape, data });
  };
  const uni = (a: number) => () => (2 * rnd() - 1) * a;
  const H = D.hidden;
  const q = D.heads * D.headDim;
  const kv = D.kvHeads * D.headDim;
  // Column 0 of the embedding is the constant direction.
  add('model.embed_tokens.weight', [D.vocab, H], (i) => (i % H === 0 ? 1 : uni(0.5)()));
  for (let l = 0; l < D.layers; l++) {
    const p = `model.layers.${l}`;
    add(`${p}.input_layernorm.weight`, [H], () => 1 + uni(0.1)());
    add(`${p}.post_attention_layernorm.weight`, [H], () => 1 + uni(0.1)());
    add(`${p}.self_attn.q_proj.weight`, [q, H], uni(0.15));
    add(`${p}.self_attn.q_proj.bias`, [q], uni(0.1));
    add(`${p}.self_attn.k_proj.weight`, [kv, H], uni(0.15));
    add(`${p}.self_attn.k_proj.bias`, [kv], uni(0.1));
    add(`${p}.self_attn.v_proj.weight`, [kv, H], uni(0.15));
    add(`${p}.self_attn.v_proj.bias`, [kv], uni(0.1));
    // Output row 0 of o_proj and down_proj is zero: the residual's dim 0 stays 1.
    add(`${p}.self_attn.o_proj.weight`, [H, q], (i) => (i < q ? 0 : uni(0.15)()));
    add(`${p}.mlp.gate_proj.weight`, [D.intermediate, H], uni(0.15));
    add(`${p}.mlp.up_proj.weight`, [D.intermediate, H], uni(0.15));
    add(`${p}.mlp.down_proj.weight`, [H, D.intermediate], (i) => (i < D.intermediate ? 0 : uni(0.1)()));
  }
  add('model.norm.weight', [H], () => 1 + uni(0.1)());
  // Untied head; <|endoftext|> reads only dim 0, strongly.
  add('lm_head.weight', [D.vocab, H], (i) => (Math.floor(i / H) === ENDOFTEXT ? (i % H === 0 ? 12 : 0) : uni(0.3)()));
  return out;
}

export function safetensorsBf16(tensors: Map<string, Qwen2Tensor>): Uint8Array {
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  let offset = 0;
  for (const [name, t] of tensors) {
    header[name] = { dtype: 'BF16', shape: t.shape, data_offsets: [offset, offset + 2 * t.data.length] };
    offset += 2 * t.data.length;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const hb = new TextEncoder().encode(json);
  const out = new Uint8Array(8 + hb.length + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(hb.length), true);
  out.set(hb, 8);
  const dv = new DataView(out.buffer, 8 + hb.length);
  let o = 0;
  for (const t of tensors.values()) for (const x of t.data) (dv.setUint16(o, bf16Bits(x), true), (o += 2));
  return out;
}

function files(seed: number): Record<string, string | Uint8Array> {
  const D = QWEN2_DIMS;
  const specials = [
    [ENDOFTEXT, '<|endoftext|>'],
    [IM_START, '<|im_start|>'],
    [IM_END, '<|im_end|>'],
  ] as const;
  const added = specials.map(([id, content]) => ({
    id,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  }));
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: { type: 'NFC' },
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: QWEN2_PATTERN }, behavior: 'Isolated', invert: false },
        { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
      ],
    },
    post_processor: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: '',
      end_of_word_suffix: '',
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab: VOCAB,
      merges: MERGES.map(([a, b]) => `${a} ${b}`),
    },
  };
  const tokenizerConfig = {
    add_bos_token: false,
    add_prefix_space: false,
    added_tokens_decoder: Object.fromEntries(added.map(({ id, ...t }) => [String(id), t])),
    additional_special_tokens: ['<|im_start|>', '<|im_end|>'],
    bos_token: null,
    chat_template: CHAT_TEMPLATE,
    clean_up_tokenization_spaces: false,
    eos_token: '<|im_end|>',
    errors: 'replace',
    model_max_length: 512,
    pad_token: '<|endoftext|>',
    split_special_tokens: false,
    tokenizer_class: 'Qwen2Tokenizer',
    unk_token: null,
  };
  const config = {
    architectures: ['Qwen2ForCausalLM'],
    model_type: 'qwen2',
    hidden_size: D.hidden,
    intermediate_size: D.intermediate,
    num_hidden_layers: D.layers,
    num_attention_heads: D.heads,
    num_key_value_heads: D.kvHeads,
    vocab_size: D.vocab,
    max_position_embeddings: 512,
    rope_theta: D.ropeTheta,
    rms_norm_eps: D.eps,
    hidden_act: 'silu',
    tie_word_embeddings: false,
    use_sliding_window: false,
    sliding_window: 512,
    max_window_layers: D.layers,
    attention_dropout: 0.0,
    bos_token_id: ENDOFTEXT,
    eos_token_id: IM_END,
    torch_dtype: 'bfloat16',
    transformers_version: '4.46.0',
  };
  const generationConfig = {
    bos_token_id: ENDOFTEXT,
    eos_token_id: [IM_END, ENDOFTEXT],
    pad_token_id: ENDOFTEXT,
    do_sample: true,
    temperature: 0.7,
    top_p: 0.8,
    repetition_penalty: 1.05,
  };
  const json = (x: unknown) => JSON.stringify(x, null, 2);
  return {
    'config.json': json(config),
    'generation_config.json': json(generationConfig),
    'tokenizer.json': json(tokenizer),
    'tokenizer_config.json': json(tokenizerConfig),
    'model.safetensors': safetensorsBf16(qwen2Weights(seed)),
  };
}

/** Writes a generated repository's files into `dir` (created); returns their names. */
export function writeRepoFiles(dir: string, f: Record<string, string | Uint8Array>): string[] {
  mkdirSync(dir, { recursive: true });
  for (const [name, body] of Object.entries(f)) writeFileSync(join(dir, name), body);
  return Object.keys(f);
}

/** Writes the repository's files into `dir` (created); returns their names. */
export const writeQwen2Fixture = (dir: string, seed = 7): string[] => writeRepoFiles(dir, files(seed));
