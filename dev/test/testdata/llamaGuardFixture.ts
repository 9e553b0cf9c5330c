// A tiny Llama-architecture guard in the layout of a hub repository (Llama Guard 3's shape:
// LlamaForCausalLM, Llama 3's pre-tokenizer and header tokens, <|eot_id|> as eos), generated on
// demand for tests. Its weights are random except for a few hidden directions built so that its
// verdict has a known cause: the word "bomb" anywhere in the conversation.
//
// Directions of the residual stream (every o_proj / down_proj output row below FREE is zero, so
// the random parts never write into them):
//   0  constant 1 (embedding column 0)
//   1  1 on the tokens "bomb" / " bomb"
//   2  the share of "bomb" tokens seen so far: layer 0, head 0 has q = 0 (uniform causal
//      attention), its value's first dim reads direction 1, and o_proj writes that into 2
//   3..7  the current token is "unsafe", "\n", "S", "9", "safe"
// The untied LM head reads only those: "safe" from 0, "unsafe" from 2, and after "unsafe" comes
// "\n", then "S", "9", <|eot_id|>; after "safe" <|eot_id|>. So greedy decoding writes
// "unsafe\nS9" when "bomb" occurs and "safe" when it does not, and the first-token probability
// says the same; quantising to int4 or int8 keeps those rows exact (one non-zero per group).
import { mulberry32 } from '../../../src/engine/index';
import { bf16Bits, bf16Value, bytesToUnicode, safetensorsBf16, writeRepoFiles, type Qwen2Tensor } from './qwen2Fixture';

export const GUARD_DIMS = {
  hidden: 64,
  intermediate: 128,
  layers: 2,
  heads: 4,
  kvHeads: 2,
  headDim: 16,
  vocab: 288,
  ropeTheta: 500_000,
  eps: 1e-5,
} as const;
const FREE = 8;

/** Llama 3's pre-tokenizer pattern. */
export const LLAMA3_PATTERN =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const MERGES: [string, string][] = [
  ['s', 'a'],
  ['sa', 'f'],
  ['saf', 'e'],
  ['u', 'n'],
  ['un', 'safe'],
  ['b', 'o'],
  ['bo', 'm'],
  ['bom', 'b'],
  ['Ġ', 'bomb'],
  ['Ċ', 'Ċ'],
];
const BYTE = bytesToUnicode();
export const GUARD_VOCAB: Record<string, number> = {};
BYTE.forEach((c, b) => (GUARD_VOCAB[c] = b));
MERGES.forEach(([a, b], i) => (GUARD_VOCAB[a + b] = 256 + i));
const SPECIALS = [
  '<|begin_of_text|>',
  '<|end_of_text|>',
  '<|start_header_id|>',
  '<|end_header_id|>',
  '<|eot_id|>',
  '<|finetune_right_pad_id|>',
];
export const GUARD_SPECIAL: Record<string, number> = Object.fromEntries(
  SPECIALS.map((s, i) => [s, 256 + MERGES.length + i]),
);
const EOT = GUARD_SPECIAL['<|eot_id|>'];
const V = GUARD_VOCAB;

/** The guard's tensors under their Hugging Face names, values already rounded to bfloat16. */
export function guardWeights(seed = 11): Map<string, Qwen2Tensor> {
  const D = GUARD_DIMS;
  const rnd = mulberry32(seed);
  const out = new Map<string, Qwen2Tensor>();
  const add = (name: string, shape: number[], f: (row: number, col: number) => number) => {
    const cols = shape.length === 2 ? shape[1] : 1;
    const data = new Float64Array(shape.reduce((a, b) => a * b, 1));
    for (let i = 0; i < data.length; i++) data[i] = bf16Value(bf16Bits(f(Math.floor(i / cols), i % cols)));
    out.set(name, { shape, data });
  };
  const uni = (a: number) => (2 * rnd() - 1) * a;
  const H = D.hidden;
  const q = D.heads * D.headDim;
  const kv = D.kvHeads * D.headDim;
  const feature: Record<number, number> = { [V['unsafe']]: 3, [V['Ċ']]: 4, [V['S']]: 5, [V['9']]: 6, [V['safe']]: 7 };
  add('model.embed_tokens.weight', [D.vocab, H], (t, c) => {
    if (c === 0) return 1;
    if (c === 1) return t === V['bomb'] || t === V['Ġbomb'] ? 1 : 0;
    if (c < FREE) return feature[t] === c ? 4 : 0;
    return uni(0.05);
  });
  for (let l = 0; l < D.layers; l++) {
    const p = `model.layers.${l}`;
    add(`${p}.input_layernorm.weight`, [H], () => 1 + uni(0.1));
    add(`${p}.post_attention_layernorm.weight`, [H], () => 1 + uni(0.1));
    // Layer 0, head 0 (rows 0..headDim-1): q = 0, so its attention is uniform over the prefix.
    add(`${p}.self_attn.q_proj.weight`, [q, H], (r) => (l === 0 && r < D.headDim ? 0 : uni(0.05)));
    add(`${p}.self_attn.k_proj.weight`, [kv, H], () => uni(0.05));
    add(`${p}.self_attn.v_proj.weight`, [kv, H], (r, c) => (l === 0 && r === 0 ? (c === 1 ? 1 : 0) : uni(0.05)));
    add(`${p}.self_attn.o_proj.weight`, [H, q], (r, c) =>
      r < FREE ? (l === 0 && r === 2 && c === 0 ? 400 : 0) : uni(0.05),
    );
    add(`${p}.mlp.gate_proj.weight`, [D.intermediate, H], () => uni(0.05));
    add(`${p}.mlp.up_proj.weight`, [D.intermediate, H], () => uni(0.05));
    add(`${p}.mlp.down_proj.weight`, [H, D.intermediate], (r) => (r < FREE ? 0 : uni(0.05)));
  }
  add('model.norm.weight', [H], () => 1);
  const head: Record<number, [number, number][]> = {
    [V['safe']]: [[0, 2]],
    [V['unsafe']]: [[2, 8]],
    [V['Ċ']]: [[3, 30]],
    [V['S']]: [[4, 30]],
    [V['9']]: [[5, 30]],
    [EOT]: [
      [6, 30],
      [7, 30],
    ],
  };
  add('lm_head.weight', [D.vocab, H], (t, c) => {
    const reads = head[t];
    if (reads) return reads.find(([d]) => d === c)?.[1] ?? 0;
    return c < FREE ? 0 : uni(0.02);
  });
  return out;
}

/** A Llama 3 chat template (the guard's own prompt is built by the judge, not by this). */
const CHAT_TEMPLATE =
  "{{- bos_token }}{%- for message in messages %}{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{%- endfor %}" +
  "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}";

function files(seed: number): Record<string, string | Uint8Array> {
  const D = GUARD_DIMS;
  const added = SPECIALS.map((content) => ({
    id: GUARD_SPECIAL[content],
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  }));
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true };
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: null,
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern: { Regex: LLAMA3_PATTERN }, behavior: 'Isolated', invert: false },
        { ...byteLevel, use_regex: false },
      ],
    },
    post_processor: { ...byteLevel, trim_offsets: false },
    decoder: byteLevel,
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: true,
      vocab: GUARD_VOCAB,
      merges: MERGES.map(([a, b]) => `${a} ${b}`),
    },
  };
  const tokenizerConfig = {
    added_tokens_decoder: Object.fromEntries(added.map(({ id, ...t }) => [String(id), t])),
    bos_token: '<|begin_of_text|>',
    chat_template: CHAT_TEMPLATE,
    clean_up_tokenization_spaces: true,
    eos_token: '<|eot_id|>',
    model_max_length: 131072,
    pad_token: '<|finetune_right_pad_id|>',
    tokenizer_class: 'PreTrainedTokenizerFast',
  };
  const config = {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    hidden_size: D.hidden,
    intermediate_size: D.intermediate,
    num_hidden_layers: D.layers,
    num_attention_heads: D.heads,
    num_key_value_heads: D.kvHeads,
    head_dim: D.headDim,
    vocab_size: D.vocab,
    max_position_embeddings: 2048,
    rope_theta: D.ropeTheta,
    rms_norm_eps: D.eps,
    hidden_act: 'silu',
    attention_bias: false,
    mlp_bias: false,
    tie_word_embeddings: false,
    bos_token_id: GUARD_SPECIAL['<|begin_of_text|>'],
    eos_token_id: EOT,
    pad_token_id: GUARD_SPECIAL['<|finetune_right_pad_id|>'],
    torch_dtype: 'bfloat16',
    transformers_version: '4.45.0',
  };
  const generationConfig = {
    bos_token_id: config.bos_token_id,
    eos_token_id: [GUARD_SPECIAL['<|end_of_text|>'], EOT],
    pad_token_id: config.pad_token_id,
    do_sample: false,
  };
  const json = (x: unknown) => JSON.stringify(x, null, 2);
  return {
    'config.json': json(config),
    'generation_config.json': json(generationConfig),
    'tokenizer.json': json(tokenizer),
    'tokenizer_config.json': json(tokenizerConfig),
    'model.safetensors': safetensorsBf16(guardWeights(seed)),
  };
}

/** Writes the guard repository's files into `dir` (created); returns their names. */
export const writeLlamaGuardFixture = (dir: string, seed = 11): string[] => writeRepoFiles(dir, files(seed));
