// A model repo's files are input too (issue 40): a tokenizer.json whose `Split` pre-tokenizer regex
// is `(a+)+$` took 11.8 s on 24 characters and never ended on 32 (a `Replace` normaliser's
// `(a|aa)+$` the same); a chat template looping over range(1000000000) ran V8 out of memory at
// 2.5 GB, and two nested range(100000) loops hung. Each is served here from disk as the hub serves
// it and loaded through the hub loader: refused at once, naming the file, the field and the limit;
// the same server's clean repo still loads and renders after.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import '@tensorflow/tfjs-backend-wasm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serveHubRepos, type HubServer } from '../../../dev/servers/hubServer';
import {
  HOSTILE_NESTED_TEMPLATE,
  HOSTILE_RANGE_TEMPLATE,
  HOSTILE_REPLACE,
  hostileSplit,
  writeRepo,
  type TokenizerJson,
} from '../../../dev/test/hostileRepos';
import { hubSource } from '../../model/hub';
import { loadChatModel } from './env';

const root = mkdtempSync(join(tmpdir(), 'hostile-repos-'));
const TINY = {
  weights: resolve('dev/fixtures/tiny-llama-f32'),
  tokenizer: resolve('dev/test/testdata/chat-tokenizer'),
};
const repo = (name: string, o: { tokenizer?: (t: TokenizerJson) => TokenizerJson; template?: string } = {}) =>
  writeRepo(join(root, name), TINY, o);

let hub: HubServer;
beforeAll(async () => {
  await tf.setBackend('wasm');
  hub = await serveHubRepos({
    'evil/split': repo('split', { tokenizer: hostileSplit }),
    'evil/replace': repo('replace', { tokenizer: () => HOSTILE_REPLACE }),
    'evil/range': repo('range', { template: HOSTILE_RANGE_TEMPLATE }),
    'evil/nested': repo('nested', { template: HOSTILE_NESTED_TEMPLATE }),
    'good/tiny': repo('good', { template: '{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}' }),
  });
});
afterAll(async () => {
  await hub?.close();
});

const load = (id: string) => loadChatModel(hubSource(id, { endpoint: hub.endpoint }), id);
const first = [{ role: 'user' as const, content: 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!' }];

describe('hostile model repos, through the hub loader', () => {
  it('a catastrophic Split or Replace regex is refused before the tokenizer is built', async () => {
    const t0 = performance.now();
    await expect(load('evil/split')).rejects.toThrow(
      /^tokenizer\.json \(.*evil\/split.*\): field "pre_tokenizer\.pretokenizers\[0\]\.pattern\.Regex" \("\(a\+\)\+\$"\) is refused: the repeated group at character 0 \("\(a\+\)\+"\) holds an unbounded repeat itself/,
    );
    await expect(load('evil/replace')).rejects.toThrow(
      /field "normalizer\.pattern\.Regex" \("\(a\|aa\)\+\$"\) is refused: .* holds an alternation itself/,
    );
    expect(performance.now() - t0).toBeLessThan(10_000);
  });

  it('a template looping over range(1e9), or two nested range(1e5), is refused on its first prompt', async () => {
    for (const id of ['evil/range', 'evil/nested']) {
      const m = await load(id);
      try {
        const t0 = performance.now();
        expect(() => m.codec.encodeChat(first, { addGenerationPrompt: true })).toThrow(
          /^chat template of .*\(chat_template\.jinja\): loops over range\(\) asked for [\d,]+ items in one render, over the limit of 100,000$/,
        );
        expect(performance.now() - t0).toBeLessThan(10_000);
      } finally {
        m.dispose();
      }
    }
    // The same server's clean repo loads and renders.
    const good = await load('good/tiny');
    try {
      const ids = good.codec.encodeChat(first, { addGenerationPrompt: true });
      expect(good.codec.decode(ids)).toContain('aaaa');
    } finally {
      good.dispose();
    }
  });
});
