// Writes testdata/chat-tokenizer/{tokenizer.json,tokenizer_config.json}: a tiny byte-level BPE
// in the Hugging Face tokenizers format, laid out so that every id can be worked out by hand:
//   0..2     special tokens <|endoftext|>, <|im_start|>, <|im_end|>
//   3..258   one token per byte b, id = 3 + b, spelled with GPT-2's bytes-to-unicode map
//   259..    one token per merge, in merge (rank) order
// Run: node dev/test/testdata/make-chat-tokenizer.mjs
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// GPT-2's reversible byte -> printable character map (printable Latin-1 bytes map to
// themselves, the rest to U+0100 upwards in byte order).
function bytesToUnicode() {
  const keep = [];
  for (let b = 0x21; b <= 0x7e; b++) keep.push(b);
  for (let b = 0xa1; b <= 0xac; b++) keep.push(b);
  for (let b = 0xae; b <= 0xff; b++) keep.push(b);
  const map = new Array(256);
  let n = 0;
  for (let b = 0; b < 256; b++) map[b] = keep.includes(b) ? String.fromCharCode(b) : String.fromCharCode(256 + n++);
  return map;
}

const SPECIALS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'];
const MERGES = [
  ['Ġ', 't'],
  ['h', 'e'],
  ['Ġt', 'he'],
  ['l', 'l'],
  ['e', 'll'],
  ['H', 'ell'],
  ['Hell', 'o'],
  ['Ġ', 'w'],
  ['o', 'r'],
  ['Ġw', 'or'],
  ['l', 'd'],
  ['Ġwor', 'ld'],
  ['Ã', '©'],
  ['u', 's'],
  ['e', 'r'],
  ['us', 'er'],
];

const vocab = {};
SPECIALS.forEach((t, i) => (vocab[t] = i));
bytesToUnicode().forEach((c, b) => (vocab[c] = 3 + b));
let next = 3 + 256;
for (const [a, b] of MERGES) vocab[a + b] = next++;

const tokenizer = {
  version: '1.0',
  truncation: null,
  padding: null,
  added_tokens: SPECIALS.map((content, id) => ({
    id,
    content,
    single_word: false,
    lstrip: false,
    rstrip: false,
    normalized: false,
    special: true,
  })),
  normalizer: null,
  pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
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
    merges: MERGES.map(([a, b]) => `${a} ${b}`),
  },
};

// SmolLM2-Instruct's ChatML template: a default system turn when the conversation has none.
const CHAT_TEMPLATE =
  "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}" +
  "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}" +
  "{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}" +
  "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

const config = {
  add_prefix_space: false,
  added_tokens_decoder: Object.fromEntries(tokenizer.added_tokens.map((t) => [String(t.id), { ...t, id: undefined }])),
  additional_special_tokens: ['<|im_start|>', '<|im_end|>'],
  bos_token: '<|im_start|>',
  chat_template: CHAT_TEMPLATE,
  clean_up_tokenization_spaces: false,
  eos_token: '<|im_end|>',
  model_max_length: 2048,
  pad_token: '<|im_end|>',
  tokenizer_class: 'GPT2Tokenizer',
  unk_token: '<|endoftext|>',
  vocab_size: next,
};

const out = join(dirname(fileURLToPath(import.meta.url)), 'chat-tokenizer');
writeFileSync(join(out, 'tokenizer.json'), JSON.stringify(tokenizer, null, 2) + '\n');
writeFileSync(join(out, 'tokenizer_config.json'), JSON.stringify(config, null, 2) + '\n');
console.log(`wrote ${out}: vocab ${next}, ${MERGES.length} merges`);
