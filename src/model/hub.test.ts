import { createReadStream, readFileSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { resolveChatTemplate } from './chat';
import { InvalidModelIdError } from '../contract/hubRef';
import { hubSource, loadModelFiles, ProgressTally } from './hub';
import { MissingModelFileError, ModelSourceError, type CacheStorageLike, type FileProgress } from './sources';
import { createTokenizer, loadTokenizer } from './tokenizer';

const here = dirname(fileURLToPath(import.meta.url));
const fixtures = resolve('dev/fixtures');
const tinyDir = resolve(fixtures, 'tiny-llama-f32');
const tokDir = resolve(here, '../../dev/test/testdata/chat-tokenizer');

// Repositories the test server hosts: name -> file -> path on disk.
const tiny: Record<string, string> = {
  'config.json': resolve(tinyDir, 'config.json'),
  'model.safetensors': resolve(tinyDir, 'model.safetensors'),
  'tokenizer.json': resolve(tokDir, 'tokenizer.json'),
  'tokenizer_config.json': resolve(tokDir, 'tokenizer_config.json'),
};
const SHARDS = ['model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors'];
const shardIndex = JSON.stringify({
  metadata: { total_size: 0 },
  weight_map: { 'lm_head.weight': SHARDS[1], 'model.embed_tokens.weight': SHARDS[0], 'model.norm.weight': SHARDS[1] },
});

let server: Server;
let endpoint: string;
/** Every request the server saw: "METHOD path". */
let requests: string[] = [];

function sendFile(req: IncomingMessage, res: ServerResponse, path: string, mode: 'normal' | 'chunked' | 'truncated') {
  const size = statSync(path).size;
  const headers: Record<string, string | number> = { 'content-type': 'application/octet-stream' };
  if (mode !== 'chunked') headers['content-length'] = size;
  res.writeHead(200, headers);
  if (req.method === 'HEAD') return res.end();
  if (mode === 'truncated') {
    // Claim the full length, send half, then drop the connection.
    res.write(readFileSync(path).subarray(0, size >> 1), () => res.destroy());
    return;
  }
  // Small chunks so a download reports progress several times.
  createReadStream(path, { highWaterMark: 16 * 1024 }).pipe(res);
}

function handle(req: IncomingMessage, res: ServerResponse) {
  requests.push(`${req.method} ${req.url}`);
  const m = /^\/([^/]+)\/([^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(req.url ?? '');
  if (!m) return res.writeHead(400).end();
  const [, owner, name, revision, file] = m.map(decodeURIComponent);
  if (owner !== 'test-org' || revision !== 'main') return res.writeHead(404).end('Entry not found');
  if (name === 'gated') return res.writeHead(401).end('Access to model test-org/gated is restricted');
  // The hub answers an id it does not know with 401 and this error code (huggingface_hub reads it as RepositoryNotFoundError).
  if (name === 'nonexistent') return res.writeHead(401, { 'x-error-code': 'RepoNotFound' }).end('Repository not found');
  if (name === 'sharded') {
    if (file === 'model.safetensors.index.json') {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(shardIndex) });
      return res.end(req.method === 'HEAD' ? undefined : shardIndex);
    }
    // Both shards are served as the tiny checkpoint: the loader only moves bytes.
    if (SHARDS.includes(file)) return sendFile(req, res, tiny['model.safetensors'], 'normal');
    if (file === 'model.safetensors') return res.writeHead(404).end('Entry not found');
  }
  const path = ['tiny', 'chunked', 'truncated', 'sharded'].includes(name) ? tiny[file] : undefined;
  if (!path) return res.writeHead(404).end('Entry not found');
  const mode = name === 'chunked' ? 'chunked' : name === 'truncated' ? 'truncated' : 'normal';
  sendFile(req, res, path, mode);
}

beforeAll(async () => {
  server = createServer(handle);
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((ok) => server.close(() => ok()));
});
beforeEach(() => {
  requests = [];
});

/** In-memory Cache Storage, standing in for the browser's `caches` in Node. */
class MemoryCaches implements CacheStorageLike {
  readonly stores = new Map<string, Map<string, Response>>();
  async open(name: string) {
    const store = this.stores.get(name) ?? new Map<string, Response>();
    this.stores.set(name, store);
    return {
      match: async (url: string) => store.get(url)?.clone(),
      put: async (url: string, response: Response) => {
        // As Cache.put does: the body is read in full before the entry exists.
        const body = response.body ? new Uint8Array(await response.arrayBuffer()) : null;
        store.set(url, new Response(body, { status: response.status, headers: response.headers }));
      },
    };
  }
  async delete(name: string) {
    return this.stores.delete(name);
  }
}

/** Byte equality without vitest's element-by-element deep diff (slow on 80 kB). */
function sameBytes(a: ArrayBuffer | Uint8Array, b: ArrayBuffer | Uint8Array): boolean {
  const x = a instanceof Uint8Array ? a : new Uint8Array(a);
  const y = b instanceof Uint8Array ? b : new Uint8Array(b);
  return x.byteLength === y.byteLength && Buffer.compare(x, y) === 0;
}

function checkProgress(events: FileProgress[], file: string, size: number) {
  const mine = events.filter((e) => e.file === file);
  expect(mine.length).toBeGreaterThan(1);
  for (let i = 1; i < mine.length; i++) expect(mine[i].loaded).toBeGreaterThanOrEqual(mine[i - 1].loaded);
  expect(mine[0].loaded).toBe(0);
  const last = mine[mine.length - 1];
  expect(last).toMatchObject({ loaded: size, total: size, done: true });
  expect(mine.filter((e) => e.done)).toHaveLength(1);
  return mine;
}

describe('model ids', () => {
  it('refuses an invalid id before any download', () => {
    expect(() => hubSource('not-a-model-id', { endpoint })).toThrow(InvalidModelIdError);
  });
});

describe('hub loading from a local server', () => {
  it('downloads files byte-exact with monotonic progress ending at the file size', async () => {
    const src = hubSource('test-org/tiny', { endpoint });
    expect(src.label).toBe('hub model test-org/tiny');
    const events: FileProgress[] = [];
    const bytes = await src.getBytes('model.safetensors', { onProgress: (e) => events.push({ ...e }) });
    const disk = readFileSync(tiny['model.safetensors']);
    expect(sameBytes(bytes, disk)).toBe(true);
    const mine = checkProgress(events, 'model.safetensors', disk.byteLength);
    expect(mine.length).toBeGreaterThanOrEqual(4); // 84,576 bytes in 16 KiB chunks
    expect(mine.every((e) => e.total === disk.byteLength && !e.local)).toBe(true);
    expect(requests).toEqual(['GET /test-org/tiny/resolve/main/model.safetensors']);
    expect(await src.getJson('config.json')).toMatchObject({ model_type: 'llama', vocab_size: 64 });
  });

  it('reports an unknown length as null, then the size at the end', async () => {
    const src = hubSource('test-org/chunked', { endpoint });
    const events: FileProgress[] = [];
    const bytes = await src.getBytes('model.safetensors', { onProgress: (e) => events.push({ ...e }) });
    const size = statSync(tiny['model.safetensors']).size;
    expect(bytes.byteLength).toBe(size);
    const mine = checkProgress(events, 'model.safetensors', size);
    expect(mine.slice(0, -1).every((e) => e.total === null)).toBe(true);
  });

  it('names the file and the model on 404, on 401, and on a dropped download', async () => {
    const src = hubSource('test-org/tiny', { endpoint });
    const err = await src.getBytes('generation_config.json').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MissingModelFileError);
    expect((err as MissingModelFileError).file).toBe('generation_config.json');
    expect((err as Error).message).toMatch(
      /^generation_config\.json not found in hub model test-org\/tiny \(HTTP 404 at http:\/\/127\.0\.0\.1:\d+\/test-org\/tiny\/resolve\/main\/generation_config\.json\)$/,
    );
    expect(await src.has('generation_config.json')).toBe(false);
    expect(await src.has('tokenizer.json')).toBe(true);
    expect(requests.filter((r) => r.startsWith('HEAD'))).toEqual(['HEAD /test-org/tiny/resolve/main/tokenizer.json']);

    await expect(hubSource('test-org/gated', { endpoint }).getBytes('config.json')).rejects.toThrow(
      /^config\.json from hub model test-org\/gated: HTTP 401 .*gated or private/,
    );
    const dropped = await hubSource('test-org/truncated', { endpoint })
      .getBytes('model.safetensors')
      .catch((e: unknown) => e);
    expect(dropped).toBeInstanceOf(ModelSourceError);
    expect((dropped as Error).message).toMatch(
      /^model\.safetensors from hub model test-org\/truncated: download (failed|ended) after \d+ of 84576 bytes/,
    );
  });

  it('tells an unknown repository from a hub it cannot reach (offline)', async () => {
    await expect(hubSource('test-org/nonexistent', { endpoint }).getBytes('config.json')).rejects.toThrow(
      /^no such repository on the Hugging Face hub: test-org\/nonexistent \(or it is private: pass an access token\) \(config\.json: HTTP 401 at /,
    );
    // Nothing listens on port 9 (discard): the request gets no answer at all, as offline.
    const offline = hubSource('test-org/tiny', { endpoint: 'http://127.0.0.1:9', cache: false });
    await expect(offline.getBytes('config.json')).rejects.toThrow(
      /^cannot reach the Hugging Face hub \(http:\/\/127\.0\.0\.1:9\): offline\? \(config\.json from hub model test-org\/tiny: /,
    );
    const real = hubSource('HuggingFaceTB/SmolLM2-135M', {
      cache: false,
      fetch: () => Promise.reject(new TypeError('Failed to fetch')),
    });
    await expect(real.getBytes('config.json')).rejects.toThrow(
      /^cannot reach the Hugging Face hub: offline\? \(config\.json/,
    );
  });

  it('sends an access token when given one', async () => {
    let seen: string | null = null;
    const fetchSpy = (async (url: string, init?: RequestInit) => {
      seen = new Headers(init?.headers).get('authorization');
      return fetch(url, init);
    }) as typeof globalThis.fetch;
    await hubSource('test-org/tiny', { endpoint, token: 'hf_secret', fetch: fetchSpy }).getText('config.json');
    expect(seen).toBe('Bearer hf_secret');
  });

  it('loads a whole model folder, then its tokenizer and chat template', async () => {
    const src = hubSource('test-org/tiny', { endpoint });
    const events: FileProgress[] = [];
    const tally = new ProgressTally();
    let overall = { loaded: 0, total: null as number | null };
    const files = await loadModelFiles(src, {
      onProgress: (e) => {
        events.push({ ...e });
        overall = tally.update(e);
      },
    });
    expect(files.label).toBe('hub model test-org/tiny');
    expect(files.config).toMatchObject({ hidden_size: 32 });
    expect(files.generationConfig).toBeNull();
    expect(files.chatTemplateJinja).toBeNull();
    expect(files.weightFiles).toEqual(['model.safetensors']);
    expect(files.weightIndex).toBeNull();
    const disk = (f: string) => new Uint8Array(readFileSync(tiny[f]));
    expect(sameBytes(files.weights.get('model.safetensors')!, disk('model.safetensors'))).toBe(true);
    for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.safetensors']) {
      checkProgress(events, f, statSync(tiny[f]).size);
    }
    const sizes = Object.values(tiny).reduce((a, p) => a + statSync(p).size, 0);
    expect(overall).toEqual({ loaded: sizes, total: sizes });

    const tok = createTokenizer(files.tokenizerJson, files.tokenizerConfig, {
      label: files.label,
      modelConfig: files.config,
    });
    expect(tok.encode('Hello world')).toEqual([265, 270]);
    // eos: tokenizer_config's <|im_end|> (2), config.json's eos_token_id 2: one id.
    expect(tok.special.eos).toEqual([2]);
    const tpl = resolveChatTemplate({ tokenizerConfig: files.tokenizerConfig, model: files.label });
    expect(tpl.render([{ role: 'user', content: 'Hi' }], { addGenerationPrompt: true })).toMatch(
      /<\|im_start\|>user\nHi<\|im_end\|>\n<\|im_start\|>assistant\n$/,
    );

    const viaSource = await loadTokenizer(hubSource('test-org/tiny', { endpoint }));
    expect(viaSource.label).toBe('hub model test-org/tiny');
  });

  it('loads the shards a sharded index names', async () => {
    const files = await loadModelFiles(hubSource('test-org/sharded', { endpoint }));
    expect(files.weightFiles).toEqual(SHARDS);
    expect(files.weightIndex).toMatchObject({ weight_map: { 'lm_head.weight': SHARDS[1] } });
    expect([...files.weights.keys()]).toEqual(SHARDS);
    expect(files.weights.get(SHARDS[1])!.byteLength).toBe(statSync(tiny['model.safetensors']).size);
  });

  it('says which file is missing from a folder without weights or tokenizer', async () => {
    await expect(loadModelFiles(hubSource('test-org/nothing', { endpoint }))).rejects.toThrow(
      /^config\.json not found in hub model test-org\/nothing/,
    );
  });
});

describe('Cache Storage', () => {
  it('skips caching cleanly where there is none (Node)', async () => {
    expect((globalThis as { caches?: unknown }).caches).toBeUndefined();
    const src = hubSource('test-org/tiny', { endpoint });
    await src.getText('config.json');
    await src.getText('config.json');
    expect(requests).toHaveLength(2);
  });

  it('serves the second load from the cache, offline, missing files included', async () => {
    const cache = new MemoryCaches();
    const first = await loadModelFiles(hubSource('test-org/tiny', { endpoint, cache }));
    expect(requests.length).toBeGreaterThan(0);
    expect(requests.some((r) => r.includes('generation_config.json'))).toBe(true);

    // Offline: a fetch that always fails. Every file, and every absence, must come from the cache.
    const offline = (async () => {
      throw new TypeError('fetch failed (offline)');
    }) as typeof globalThis.fetch;
    const events: FileProgress[] = [];
    requests = [];
    const second = await loadModelFiles(hubSource('test-org/tiny', { endpoint, cache, fetch: offline }), {
      onProgress: (e) => events.push({ ...e }),
    });
    expect(requests).toEqual([]);
    expect(sameBytes(second.weights.get('model.safetensors')!, first.weights.get('model.safetensors')!)).toBe(true);
    expect(second.tokenizerJson).toEqual(first.tokenizerJson);
    expect(second.generationConfig).toBeNull();
    const size = statSync(tiny['model.safetensors']).size;
    expect(checkProgress(events, 'model.safetensors', size).every((e) => e.local)).toBe(true);

    // Without the cache the same offline source fails, saying so plainly, naming the file and the URL.
    await expect(
      hubSource('test-org/tiny', { endpoint, cache: false, fetch: offline }).getText('config.json'),
    ).rejects.toThrow(
      /^cannot reach the Hugging Face hub \(http:\/\/127\.0\.0\.1:\d+\): offline\? \(config\.json from hub model test-org\/tiny: fetch failed \(offline\) at http:\/\/127\.0\.0\.1:\d+\/test-org\/tiny\/resolve\/main\/config\.json\)$/,
    );
  });

  it('does not cache failed or dropped downloads', async () => {
    const cache = new MemoryCaches();
    await hubSource('test-org/truncated', { endpoint, cache })
      .getBytes('model.safetensors')
      .catch(() => undefined);
    await hubSource('test-org/gated', { endpoint, cache })
      .getBytes('config.json')
      .catch(() => undefined);
    const store = [...cache.stores.values()][0];
    expect(store === undefined || store.size === 0).toBe(true);
  });
});
