import { describe, expect, it } from 'vitest';
import {
  checkFileName,
  clearModelCache,
  directorySource,
  filesSource,
  listWeightFiles,
  mapSource,
  MissingModelFileError,
  ModelSourceError,
  shardFilesFromIndex,
  urlSource,
  type DirectoryHandleLike,
  type FileProgress,
} from './sources';

const enc = new TextEncoder();

/** A File as <input webkitdirectory> gives it: the path below the picked folder's parent. */
function pickedFile(path: string, content: string | Uint8Array): File {
  const f = new File([content as BlobPart], path.split('/').pop()!);
  Object.defineProperty(f, 'webkitRelativePath', { value: path });
  return f;
}

/** A 100,000-byte "weights" file whose bytes are i mod 251. */
const weights = Uint8Array.from({ length: 100_000 }, (_, i) => i % 251);

describe('mapSource', () => {
  it('serves bytes, text and JSON, and names a missing file and the source', async () => {
    const src = mapSource(
      {
        'config.json': '{"model_type":"llama"}',
        'model.safetensors': weights.buffer,
        'sub/x.bin': new Uint8Array([1, 2, 3]).subarray(1),
      },
      { label: 'my map' },
    );
    expect(src.kind).toBe('map');
    expect(await src.list()).toEqual(['config.json', 'model.safetensors', 'sub/x.bin']);
    expect(await src.getJson('config.json')).toEqual({ model_type: 'llama' });
    expect(new Uint8Array(await src.getBytes('sub/x.bin'))).toEqual(new Uint8Array([2, 3]));
    expect(await src.has('tokenizer.json')).toBe(false);
    const err = await src.getBytes('tokenizer.json').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MissingModelFileError);
    expect((err as Error).message).toBe('tokenizer.json not found in my map');
    expect((err as MissingModelFileError).source).toBe('my map');
  });

  it('reports progress for local reads, ending at the size', async () => {
    const src = mapSource({ 'model.safetensors': weights });
    const events: FileProgress[] = [];
    const bytes = new Uint8Array(await src.getBytes('model.safetensors', { onProgress: (e) => events.push(e) }));
    expect(bytes.byteLength).toBe(100_000);
    expect(bytes[99_999]).toBe(99_999 % 251);
    expect(events[0]).toEqual({ file: 'model.safetensors', loaded: 0, total: 100_000, local: true, done: false });
    expect(events[events.length - 1]).toEqual({
      file: 'model.safetensors',
      loaded: 100_000,
      total: 100_000,
      local: true,
      done: true,
    });
    for (let i = 1; i < events.length; i++) expect(events[i].loaded).toBeGreaterThanOrEqual(events[i - 1].loaded);
    const blob = await src.getBlob('model.safetensors');
    expect(blob.size).toBe(100_000);
  });

  it('names the file that is not JSON', async () => {
    const src = mapSource({ 'config.json': '{"a": 1,' }, { label: 'folder x' });
    await expect(src.getJson('config.json')).rejects.toThrow(/^config\.json from folder x: not valid JSON/);
  });
});

describe('filesSource (a picked folder)', () => {
  it('drops the folder name from webkitRelativePath and uses it as the label', async () => {
    const src = filesSource([
      pickedFile('SmolLM2/config.json', '{"vocab_size": 49152}'),
      pickedFile('SmolLM2/model.safetensors', weights),
      pickedFile('SmolLM2/onnx/model.onnx', 'x'),
    ]);
    expect(src.kind).toBe('files');
    expect(src.label).toBe('folder SmolLM2');
    expect(await src.list()).toEqual(['config.json', 'model.safetensors', 'onnx/model.onnx']);
    expect(await src.getJson('config.json')).toEqual({ vocab_size: 49152 });
    expect((await src.getBytes('model.safetensors')).byteLength).toBe(100_000);
    await expect(src.getText('tokenizer.json')).rejects.toThrow('tokenizer.json not found in folder SmolLM2');
  });

  it('keeps plain names for loose files', async () => {
    const src = filesSource([new File(['{}'], 'config.json'), new File(['{}'], 'tokenizer.json')]);
    expect(src.label).toBe('selected files');
    expect(await src.list()).toEqual(['config.json', 'tokenizer.json']);
  });
});

describe('directorySource (a FileSystemDirectoryHandle)', () => {
  type Tree = { [name: string]: string | Tree };
  const notFound = (name: string) =>
    Object.assign(new Error(`A requested file or directory could not be found: ${name}`), { name: 'NotFoundError' });
  function handle(name: string, tree: Tree): DirectoryHandleLike {
    return {
      name,
      async getFileHandle(n) {
        const v = tree[n];
        if (typeof v !== 'string')
          throw v === undefined ? notFound(n) : Object.assign(new Error('dir'), { name: 'TypeMismatchError' });
        return { getFile: async () => new File([v], n) };
      },
      async getDirectoryHandle(n) {
        const v = tree[n];
        if (v === undefined || typeof v === 'string') throw notFound(n);
        return handle(n, v);
      },
      async *values() {
        for (const [n, v] of Object.entries(tree))
          yield { kind: typeof v === 'string' ? 'file' : 'directory', name: n };
      },
    };
  }

  it('accepts a real FileSystemDirectoryHandle (type check)', () => {
    const fromPicker = (h: FileSystemDirectoryHandle) => directorySource(h);
    expect(typeof fromPicker).toBe('function');
  });

  it('reads files, subfolders included, and lists them', async () => {
    const src = directorySource(handle('Qwen2.5', { 'config.json': '{"a":1}', tokenizer: { 'tokenizer.json': 'T' } }));
    expect(src.label).toBe('folder Qwen2.5');
    expect(await src.list()).toEqual(['config.json', 'tokenizer/tokenizer.json']);
    expect(await src.getText('tokenizer/tokenizer.json')).toBe('T');
    expect(await src.has('tokenizer')).toBe(false); // a folder is not a file
    expect(await src.has('nope/x.json')).toBe(false);
    await expect(src.getBytes('generation_config.json')).rejects.toThrow(
      'generation_config.json not found in folder Qwen2.5',
    );
  });

  it('passes on other failures with the file name', async () => {
    const broken: DirectoryHandleLike = {
      name: 'b',
      getFileHandle: async () => {
        throw Object.assign(new Error('permission revoked'), { name: 'NotAllowedError' });
      },
      getDirectoryHandle: async () => {
        throw new Error('unused');
      },
    };
    const src = directorySource(broken);
    await expect(src.getBytes('config.json')).rejects.toThrow(/^config\.json from folder b: permission revoked$/);
    expect(await src.list()).toBeNull();
  });
});

describe('file names and weights', () => {
  it('refuses names that leave the folder', () => {
    expect(checkFileName('config.json')).toBe('config.json');
    expect(checkFileName('onnx/model.onnx')).toBe('onnx/model.onnx');
    for (const bad of ['', '/etc/passwd', '../x', 'a/../../b', 'a\\b', 'a//b', './x']) {
      expect(() => checkFileName(bad), bad).toThrow(ModelSourceError);
    }
    expect(() => mapSource({ '../up': 'x' })).toThrow(/invalid model file name "\.\.\/up"/);
  });

  it('lists each shard of an index once, in order', () => {
    const index = {
      metadata: { total_size: 10 },
      weight_map: {
        'lm_head.weight': 'model-00002-of-00002.safetensors',
        'model.embed_tokens.weight': 'model-00001-of-00002.safetensors',
        'model.norm.weight': 'model-00002-of-00002.safetensors',
      },
    };
    expect(shardFilesFromIndex(index)).toEqual([
      'model-00001-of-00002.safetensors',
      'model-00002-of-00002.safetensors',
    ]);
    expect(() => shardFilesFromIndex({})).toThrow(/model\.safetensors\.index\.json: field "weight_map" is missing/);
    expect(() => shardFilesFromIndex({ weight_map: { a: 3 } })).toThrow(/field "weight_map\.a" must be a file name/);
    expect(() => shardFilesFromIndex({ weight_map: { a: '../../secret' } })).toThrow(
      /field "weight_map\.a" names "\.\.\/\.\.\/secret"/,
    );
    expect(() => shardFilesFromIndex({ weight_map: {} }, 'idx.json')).toThrow(
      /^idx\.json: field "weight_map" names no shard files/,
    );
  });

  it('finds the weight files of a folder', async () => {
    expect(await listWeightFiles(mapSource({ 'model.safetensors': 'x' }))).toEqual(['model.safetensors']);
    const sharded = mapSource({
      'model.safetensors.index.json': JSON.stringify({ weight_map: { w: 'b.safetensors', v: 'a.safetensors' } }),
    });
    expect(await listWeightFiles(sharded)).toEqual(['a.safetensors', 'b.safetensors']);
    await expect(listWeightFiles(mapSource({ 'config.json': '{}' }, { label: 'empty' }))).rejects.toThrow(
      /^model\.safetensors not found in empty \(nor model\.safetensors\.index\.json\)$/,
    );
  });
});

describe('urlSource (fetch stubs; the real server is in hub.test.ts)', () => {
  it('joins names to the base URL and reports a compressed body as unknown length', async () => {
    const seen: string[] = [];
    const body = enc.encode('{"hello": "world"}');
    const fetch = (async (url: string) => {
      seen.push(url);
      // content-length of a gzip body counts compressed bytes: it must not be taken as the total.
      return new Response(body, { headers: { 'content-length': '7', 'content-encoding': 'gzip' } });
    }) as unknown as typeof globalThis.fetch;
    const src = urlSource('http://mirror.test/models/tiny', { fetch });
    expect(src.label).toBe('http://mirror.test/models/tiny/');
    expect(src.urlOf('sub dir/a#b.json')).toBe('http://mirror.test/models/tiny/sub%20dir/a%23b.json');
    const events: FileProgress[] = [];
    expect(await src.getJson('config.json', { onProgress: (e) => events.push(e) })).toEqual({ hello: 'world' });
    expect(seen).toEqual(['http://mirror.test/models/tiny/config.json']);
    expect(events[0].total).toBeNull();
    expect(events[events.length - 1]).toMatchObject({ loaded: body.byteLength, total: body.byteLength, done: true });
    expect(await src.list()).toBeNull();
  });

  it('takes a single-page-app fallback (index.html with status 200) for a missing model file', async () => {
    // What vite preview and many static hosts answer for any path they do not have.
    const fetch = (async (url: string) =>
      url.endsWith('config.json')
        ? new Response('{"a": 1}', { headers: { 'content-type': 'application/json' } })
        : new Response('<!doctype html><html></html>', {
            headers: { 'content-type': 'text/html; charset=utf-8' },
          })) as unknown as typeof globalThis.fetch;
    const src = urlSource('http://site.test/models/defender/', { fetch, cache: false });
    expect(await src.getJson('config.json')).toEqual({ a: 1 });
    expect(await src.has('model.safetensors.index.json')).toBe(false);
    await expect(src.getBytes('model.safetensors')).rejects.toThrow(/model\.safetensors/);
  });

  it('rejects a bad base URL and reports HTTP errors with the URL', async () => {
    expect(() => urlSource('not a url')).toThrow(/invalid model base URL "not a url"/);
    const fetch = (async () =>
      new Response('boom', { status: 500, statusText: 'Internal Server Error' })) as unknown as typeof globalThis.fetch;
    await expect(urlSource('http://h.test/m/', { fetch, label: 'mirror m' }).getBytes('config.json')).rejects.toThrow(
      /^config\.json from mirror m: HTTP 500 Internal Server Error at http:\/\/h\.test\/m\/config\.json$/,
    );
  });

  it('sends a request that got no answer once more, and reports the second failure', async () => {
    let calls = 0;
    const flaky = (async () => {
      if (++calls === 1) throw new TypeError('fetch failed'); // a kept-alive socket closed under it
      return new Response('{"a": 1}');
    }) as unknown as typeof globalThis.fetch;
    expect(await urlSource('http://h.test/m/', { fetch: flaky, cache: false }).getJson('config.json')).toEqual({
      a: 1,
    });
    expect(calls).toBe(2);
    calls = 0;
    const down = (async () => {
      calls++;
      throw new TypeError('fetch failed');
    }) as unknown as typeof globalThis.fetch;
    await expect(
      urlSource('http://h.test/m/', { fetch: down, cache: false, unreachable: 'offline?' }).getBytes('config.json'),
    ).rejects.toThrow(
      /^offline\? \(config\.json from http:\/\/h\.test\/m\/: fetch failed at http:\/\/h\.test\/m\/config\.json\)$/,
    );
    expect(calls).toBe(2);
  });

  it('stops on abort', async () => {
    const ctl = new AbortController();
    const fetch = (async () =>
      new Response(
        new ReadableStream<Uint8Array>({
          pull(c) {
            c.enqueue(new Uint8Array(10));
            ctl.abort();
          },
        }),
      )) as unknown as typeof globalThis.fetch;
    await expect(
      urlSource('http://h.test/', { fetch }).getBytes('model.safetensors', { signal: ctl.signal }),
    ).rejects.toMatchObject({
      name: 'AbortError',
    });
  });

  it('clearModelCache deletes the cache, and is a no-op without Cache Storage', async () => {
    const deleted: string[] = [];
    const cache = {
      open: async () => ({ match: async () => undefined, put: async () => undefined }),
      delete: async (name: string) => (deleted.push(name), true),
    };
    expect(await clearModelCache({ cache })).toBe(true);
    expect(deleted).toEqual(['sparring-models-v1']);
    expect(await clearModelCache()).toBe(false);
  });
});
