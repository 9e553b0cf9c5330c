// The hostile model-repo files of issue 40, shared by the Node test (src/recipes/kit/hostileRepo.test.ts)
// and the Chromium one (e2e/hostileRepo.e2e.ts): a tokenizer.json whose Split pre-tokenizer regex
// `(a+)+$` took 11.8 s on 24 characters, a Replace normaliser `(a|aa)+$` the same, and chat templates
// looping over range(1e9) (V8 out of memory at 2.5 GB) or two nested range(1e5) (hung).
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export type TokenizerJson = Record<string, unknown>;

/** tokenizer.json fields with a catastrophic `Split` regex before the tokenizer's own pre-tokenizer. */
export const hostileSplit = (t: TokenizerJson): TokenizerJson => ({
  pre_tokenizer: {
    type: 'Sequence',
    pretokenizers: [
      { type: 'Split', pattern: { Regex: '(a+)+$' }, behavior: 'Isolated', invert: false },
      ...(t.pre_tokenizer ? [t.pre_tokenizer] : []),
    ],
  },
});

/** tokenizer.json fields with a catastrophic `Replace` normaliser. */
export const HOSTILE_REPLACE: TokenizerJson = {
  normalizer: { type: 'Replace', pattern: { Regex: '(a|aa)+$' }, content: 'b' },
};

export const HOSTILE_RANGE_TEMPLATE = '{% for i in range(1000000000) %}x{% endfor %}{{ messages[0].content }}';
export const HOSTILE_NESTED_TEMPLATE =
  '{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}';

/**
 * A repo folder `dir` with `model`'s files (config.json, model.safetensors, tokenizer_config.json,
 * and generation_config.json when present) and `tokenizer` patched by `o.tokenizer`, plus
 * chat_template.jinja when `o.template` is given.
 */
export function writeRepo(
  dir: string,
  model: { weights: string; tokenizer: string },
  o: { tokenizer?: (t: TokenizerJson) => TokenizerJson; template?: string } = {},
): string {
  mkdirSync(dir, { recursive: true });
  for (const f of ['config.json', 'model.safetensors']) copyFileSync(join(model.weights, f), join(dir, f));
  copyFileSync(join(model.tokenizer, 'tokenizer_config.json'), join(dir, 'tokenizer_config.json'));
  const t = JSON.parse(readFileSync(join(model.tokenizer, 'tokenizer.json'), 'utf8')) as TokenizerJson;
  writeFileSync(join(dir, 'tokenizer.json'), JSON.stringify({ ...t, ...o.tokenizer?.(t) }));
  if (o.template) writeFileSync(join(dir, 'chat_template.jinja'), o.template);
  return dir;
}
