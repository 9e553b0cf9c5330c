// The fit check's prompt count with the model's own tokenizer (issue 40): the sandbox defender's
// byte-level tokenizer makes 3 tokens of each CJK character, so a 200-character CJK row is longer in
// tokens than a 300-character ASCII row the 3-characters-a-token estimate ranks first.
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { applyChatTemplate, resolveChatTemplate } from '../../model/chat';
import { createTokenizer } from '../../model/tokenizer';
import { loadChatCodec } from './env';
import { COUNTED_PROMPTS, countLongestPrompt } from './promptTokens';
import { folderSource } from '../../cli/fs-source';

const DIR = resolve('public/models/defender');

function ownCount(text: string): number {
  const read = (f: string) => JSON.parse(readFileSync(join(DIR, f), 'utf8')) as unknown;
  const tokenizerConfig = read('tokenizer_config.json');
  const tok = createTokenizer(read('tokenizer.json'), tokenizerConfig, { label: 'defender' });
  const template = resolveChatTemplate({ tokenizerConfig, model: 'defender' });
  return applyChatTemplate(tok, template, [{ role: 'user', content: text }], { addGenerationPrompt: true }).ids.length;
}

describe('countLongestPrompt', () => {
  it("finds the longest prompt in the model's tokens, not in characters", async () => {
    const codec = await loadChatCodec(folderSource(DIR), 'defender');
    const ascii = 'a'.repeat(300);
    const cjk = '漢'.repeat(200);
    const rows = [ascii, cjk, 'short'].map((prompt) => JSON.stringify({ prompt }));
    const c = countLongestPrompt(rows.join('\n'), 'mix.jsonl', codec);
    expect(ownCount(cjk)).toBeGreaterThan(ownCount(ascii));
    expect(c).toMatchObject({ tokens: ownCount(cjk), line: 2, counted: 3, rows: 3 });
  });

  it(`encodes only the ${COUNTED_PROMPTS} longest prompts by characters`, async () => {
    const codec = await loadChatCodec(folderSource(DIR), 'defender');
    const rows = Array.from({ length: 40 }, (_, i) => JSON.stringify({ prompt: 'w '.repeat(i + 1) }));
    const c = countLongestPrompt(rows.join('\n'), 'many.jsonl', codec);
    expect(c).toMatchObject({ tokens: ownCount('w '.repeat(40)), line: 40, counted: COUNTED_PROMPTS, rows: 40 });
  });
});
