import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  MAX_HEADER_BYTES,
  SafetensorsError,
  checkFinite,
  getFiniteFloat32,
  decodeBF16,
  decodeF16,
  encodeBF16,
  encodeF16,
  parseSafetensors,
  readSafetensors,
  readShardedSafetensors,
  readShardedSafetensorsFromUrl,
  writeSafetensors,
} from './safetensors';

const FIXTURES = pathToFileURL(resolve('dev/fixtures') + '/');
const fixtureBytes = (dir: string) => new Uint8Array(readFileSync(new URL(`${dir}/model.safetensors`, FIXTURES)));

/** Builds a file by hand: u64 LE length, header text, data bytes. */
function handBuilt(header: string, data: number[] = []): Uint8Array {
  const hb = new TextEncoder().encode(header);
  const out = new Uint8Array(8 + hb.length + data.length);
  new DataView(out.buffer).setUint32(0, hb.length, true);
  out.set(hb, 8);
  out.set(data, 8 + hb.length);
  return out;
}

function expectError(fn: () => unknown, ...parts: (string | RegExp)[]) {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(SafetensorsError);
  for (const p of parts) expect((err as Error).message).toMatch(p);
}

describe('safetensors reader on the fixtures', () => {
  it('reads the BF16 fixture header and decodes values checked independently', () => {
    const f = parseSafetensors(fixtureBytes('tiny-llama'), 'tiny-llama/model.safetensors');
    expect(f.names()).toHaveLength(20);
    expect(f.metadata).toEqual({ format: 'pt' });
    expect(f.info('model.embed_tokens.weight')).toMatchObject({ dtype: 'BF16', shape: [64, 32], byteLength: 4096 });
    expect(f.info('model.layers.1.self_attn.k_proj.weight').shape).toEqual([16, 32]);
    // First four embedding values, decoded by hand (Python struct) from bytes 21 3a 19 3e 0c be e4 be.
    const emb = f.getFloat32('model.embed_tokens.weight');
    expect(emb.length).toBe(64 * 32);
    expect(Array.from(emb.slice(0, 4))).toEqual([0.000614166259765625, 0.1494140625, -0.13671875, -0.4453125]);
    expect(Array.from(f.getFloat32('model.norm.weight').slice(0, 4))).toEqual([
      0.953125, 1.1640625, 1.0859375, 1.078125,
    ]);
  });

  it('reads the F32 fixture', () => {
    const f = parseSafetensors(fixtureBytes('tiny-llama-f32'));
    const emb = f.getFloat32('model.embed_tokens.weight');
    expect(emb[0]).toBeCloseTo(1.020459532737732, 7);
    expect(emb[1]).toBeCloseTo(-1.2778325080871582, 7);
    expect(emb[3]).toBeCloseTo(-0.28388479351997375, 7);
  });
});

describe('float16 / bfloat16 conversions', () => {
  it('decodes hand-picked BF16 bit patterns', () => {
    const v = decodeBF16(new Uint16Array([0x3f80, 0xc000, 0x7f80, 0xff80, 0x0000, 0x8000, 0x3e80]));
    expect(Array.from(v)).toEqual([1, -2, Infinity, -Infinity, 0, -0, 0.25]);
    expect(Number.isNaN(decodeBF16(new Uint16Array([0x7fc0]))[0])).toBe(true);
  });

  it('decodes hand-picked F16 bit patterns including subnormals', () => {
    const v = decodeF16(new Uint16Array([0x3c00, 0xc000, 0x7bff, 0x0001, 0x0400, 0x7c00, 0xfc00, 0x3555]));
    expect(Array.from(v)).toEqual([1, -2, 65504, 2 ** -24, 2 ** -14, Infinity, -Infinity, Math.fround(0.333251953125)]);
    expect(Number.isNaN(decodeF16(new Uint16Array([0x7e00]))[0])).toBe(true);
  });

  it('encodes with round-to-nearest-even', () => {
    // 1 + 2^-8 is halfway between bf16 1.0 (0x3f80) and 1.0078125 (0x3f81): ties to even -> 0x3f80.
    // 1 + 3*2^-8 is halfway between 0x3f81 and 0x3f82: ties to even -> 0x3f82.
    expect(Array.from(encodeBF16([1, 1 + 2 ** -8, 1 + 3 * 2 ** -8, -2, Infinity]))).toEqual([
      0x3f80, 0x3f80, 0x3f82, 0xc000, 0x7f80,
    ]);
    // 1 + 2^-11 is halfway between f16 1.0 and 1 + 2^-10: ties to even -> 0x3c00; 65520 overflows to Inf.
    expect(Array.from(encodeF16([1, 1 + 2 ** -11, -2, 65504, 65520, 2 ** -24, 0.333251953125]))).toEqual([
      0x3c00, 0x3c00, 0xc000, 0x7bff, 0x7c00, 0x0001, 0x3555,
    ]);
  });
});

describe('safetensors writer', () => {
  it('writes exactly the bytes of a hand-built file', () => {
    const header =
      '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"U8","shape":[3],"data_offsets":[8,11]}}';
    // 106-byte header padded with 6 spaces to 112 (a multiple of 8).
    const padded = header + ' '.repeat((8 - (header.length % 8)) % 8);
    // 1.0f = 00 00 80 3f, -2.0f = 00 00 00 c0
    const expected = handBuilt(padded, [0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0, 7, 8, 9]);
    const written = writeSafetensors({
      a: { dtype: 'F32', shape: [2], data: [1, -2] },
      b: { dtype: 'U8', shape: [3], data: [7, 8, 9] },
    });
    expect(Array.from(written)).toEqual(Array.from(expected));
    const f = parseSafetensors(expected);
    expect(Array.from(f.getFloat32('a'))).toEqual([1, -2]);
    expect(Array.from(f.getRaw('b') as Uint8Array)).toEqual([7, 8, 9]);
  });

  it('round-trips every writable dtype with metadata', () => {
    const bytes = writeSafetensors(
      {
        f32: { dtype: 'F32', shape: [2, 2], data: [0.1, -3.5, 1e-20, 7] },
        f16: { dtype: 'F16', shape: [3], data: [1, -0.5, 65504] },
        bf16: { dtype: 'BF16', shape: [3], data: [1, -0.5, 1 + 2 ** -7] },
        i8: { dtype: 'I8', shape: [4], data: [-128, -1, 0, 127] },
        u8: { dtype: 'U8', shape: [1, 2], data: [0, 255] },
        i32: { dtype: 'I32', shape: [2], data: [-2147483648, 2147483647] },
        empty: { dtype: 'F32', shape: [0, 3], data: [] },
      },
      { format: 'pt', note: 'round trip' },
    );
    const f = parseSafetensors(bytes, 'rt.safetensors');
    expect((8 + f.headerLength) % 8).toBe(0); // data block starts 8-byte aligned
    expect(f.metadata).toEqual({ format: 'pt', note: 'round trip' });
    expect(Array.from(f.getFloat32('f32'))).toEqual([0.1, -3.5, 1e-20, 7].map(Math.fround));
    expect(Array.from(f.getFloat32('f16'))).toEqual([1, -0.5, 65504]);
    expect(Array.from(f.getFloat32('bf16'))).toEqual([1, -0.5, 1 + 2 ** -7]);
    expect(Array.from(f.getRaw('i8') as Int8Array)).toEqual([-128, -1, 0, 127]);
    expect(Array.from(f.getInt32('i8'))).toEqual([-128, -1, 0, 127]);
    expect(f.info('u8').shape).toEqual([1, 2]);
    expect(Array.from(f.getRaw('u8') as Uint8Array)).toEqual([0, 255]);
    expect(Array.from(f.getInt32('i32'))).toEqual([-2147483648, 2147483647]);
    expect(f.info('empty').shape).toEqual([0, 3]);
    expect(f.getFloat32('empty').length).toBe(0);
  });

  it('round-trips the BF16 fixture bit for bit', () => {
    const src = parseSafetensors(fixtureBytes('tiny-llama'));
    const tensors: Record<string, { dtype: 'BF16'; shape: number[]; data: Uint16Array }> = {};
    for (const n of src.names())
      tensors[n] = { dtype: 'BF16', shape: src.info(n).shape, data: src.getRaw(n) as Uint16Array };
    const again = parseSafetensors(writeSafetensors(tensors, { format: 'pt' }));
    for (const n of src.names())
      expect(Array.from(again.getRaw(n) as Uint16Array)).toEqual(Array.from(src.getRaw(n) as Uint16Array));
    // Re-encoding decoded bf16 values from float32 is exact too.
    const emb = src.getFloat32('model.embed_tokens.weight');
    expect(Array.from(encodeBF16(emb))).toEqual(Array.from(src.getRaw('model.embed_tokens.weight') as Uint16Array));
  });

  it('rejects data that disagrees with the shape, and out-of-range integers', () => {
    expectError(() => writeSafetensors({ w: { dtype: 'F32', shape: [2, 2], data: [1, 2, 3] } }), /"w"/, /4 elements/);
    expectError(() => writeSafetensors({ q: { dtype: 'I8', shape: [1], data: [200] } }), /"q"/, /out of range/);
    expectError(() => writeSafetensors({ z: { dtype: 'I64', shape: [1], data: [1] } }), /"z"/, /I64 cannot be written/);
  });
});

describe('safetensors header validation', () => {
  const ok = '{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}';
  const eight = [0, 0, 0x80, 0x3f, 0, 0, 0, 0x40];

  it('accepts the well-formed hand-built file', () => {
    expect(Array.from(parseSafetensors(handBuilt(ok, eight)).getFloat32('w'))).toEqual([1, 2]);
  });

  it('truncated file: shorter than the length prefix', () => {
    expectError(() => parseSafetensors(new Uint8Array(5), 'x.safetensors'), /x\.safetensors/, /truncated/, /5 bytes/);
  });

  it('truncated file: header longer than the file', () => {
    const f = handBuilt(ok, eight).slice(0, 30);
    expectError(() => parseSafetensors(f, 'cut.safetensors'), /cut\.safetensors/, /truncated/);
  });

  it('header length over 100 MB', () => {
    const f = new Uint8Array(16);
    new DataView(f.buffer).setBigUint64(0, BigInt(MAX_HEADER_BYTES + 1), true);
    expectError(() => parseSafetensors(f, 'huge.safetensors'), /huge\.safetensors/, /100 MB/);
    new DataView(f.buffer).setBigUint64(0, 0xffffffffffffffffn, true);
    expectError(() => parseSafetensors(f, 'huge.safetensors'), /exceeds/);
  });

  it('invalid header JSON', () => {
    expectError(
      () => parseSafetensors(handBuilt('{"w":{"dtype":', eight), 'bad.safetensors'),
      /bad\.safetensors/,
      /not valid JSON/,
    );
    expectError(
      () => parseSafetensors(handBuilt('[1,2]', eight), 'arr.safetensors'),
      /arr\.safetensors/,
      /JSON object/,
    );
  });

  it('offsets past the end of the data', () => {
    const h = '{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}';
    expectError(
      () => parseSafetensors(handBuilt(h, eight), 'short.safetensors'),
      /short\.safetensors/,
      /"w"/,
      /past the end/,
    );
  });

  it('overlapping tensors', () => {
    const h =
      '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}';
    expectError(
      () => parseSafetensors(handBuilt(h, eight), 'ov.safetensors'),
      /ov\.safetensors/,
      /"a"/,
      /"b"/,
      /overlap/,
    );
  });

  it('unknown dtype', () => {
    const h = '{"w":{"dtype":"F12","shape":[2],"data_offsets":[0,8]}}';
    expectError(
      () => parseSafetensors(handBuilt(h, eight), 'dt.safetensors'),
      /dt\.safetensors/,
      /"w"/,
      /unknown dtype "F12"/,
    );
  });

  it('dtype and shape disagree with the byte length', () => {
    const h = '{"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}';
    expectError(
      () => parseSafetensors(handBuilt(h, eight), 'sz.safetensors'),
      /sz\.safetensors/,
      /"w"/,
      /12 bytes/,
      /span 8/,
    );
  });

  it('malformed fields name the field', () => {
    expectError(
      () => parseSafetensors(handBuilt('{"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,8]}}', eight)),
      /"w"/,
      /"shape"/,
    );
    expectError(
      () => parseSafetensors(handBuilt('{"w":{"dtype":"F32","shape":[2],"data_offsets":[8]}}', eight)),
      /"w"/,
      /"data_offsets"/,
    );
    expectError(() => parseSafetensors(handBuilt('{"w":{"shape":[2],"data_offsets":[0,8]}}', eight)), /"w"/, /"dtype"/);
    expectError(() => parseSafetensors(handBuilt('{"__metadata__":{"k":1}}', [])), /__metadata__\.k/);
  });

  it('a known but undecodable dtype is named when read', () => {
    const h = '{"w":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}}';
    const f = parseSafetensors(handBuilt(h, [1, 2]), 'f8.safetensors');
    expectError(() => f.getFloat32('w'), /f8\.safetensors/, /"w"/, /F8_E4M3 cannot be read/);
    expectError(() => f.getFloat32('nope'), /no tensor named "nope"/);
  });

  it('reads I64 as int32 and rejects values that do not fit', () => {
    const data = new Uint8Array(16);
    const dv = new DataView(data.buffer);
    dv.setBigInt64(0, -5n, true);
    dv.setBigInt64(8, 7n, true);
    const f = parseSafetensors(handBuilt('{"i":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}}', Array.from(data)));
    expect(Array.from(f.getInt32('i'))).toEqual([-5, 7]);
    expect(Array.from(f.getFloat32('i'))).toEqual([-5, 7]);
    dv.setBigInt64(8, 1n << 40n, true);
    const g = parseSafetensors(
      handBuilt('{"i":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}}', Array.from(data)),
      'big.safetensors',
    );
    expectError(() => g.getInt32('i'), /big\.safetensors/, /"i"/, /does not fit int32/);
  });
});

describe('safetensors: the data block is tiled exactly (issue 24)', () => {
  it('a header length cut into the space padding is refused, not read a few bytes early', () => {
    // A norm weight of 0.979 stored after a header that the writer pads with spaces.
    const f = writeSafetensors({
      'model.norm.weight': { dtype: 'F32', shape: [4], data: [0.979, 0.979, 0.979, 0.979] },
    });
    const n = Number(new DataView(f.buffer).getBigUint64(0, true));
    const header = new TextDecoder().decode(f.subarray(8, 8 + n));
    const pad = header.length - header.trimEnd().length;
    expect(pad).toBeGreaterThan(0); // the cut lands in real padding
    const cut = f.slice();
    new DataView(cut.buffer).setBigUint64(0, BigInt(n - pad), true);
    expectError(
      () => parseSafetensors(cut, 'cut.safetensors'),
      /cut\.safetensors/,
      /index 16 bytes/,
      new RegExp(`holds ${16 + pad}`),
    );
    // The uncut file reads the value back.
    expect(parseSafetensors(f).getFloat32('model.norm.weight')[0]).toBeCloseTo(0.979, 6);
  });

  it('bytes after the last tensor, or a hole between tensors, are refused', () => {
    const h = '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}';
    expectError(
      () => parseSafetensors(handBuilt(h, [0, 0, 0x80, 0x3f, 9, 9, 9, 9]), 'tail.safetensors'),
      /tail\.safetensors/,
      /index 4 bytes/,
      /holds 8/,
    );
    const gap =
      '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[2],"data_offsets":[6,8]}}';
    expectError(
      () => parseSafetensors(handBuilt(gap, [0, 0, 0x80, 0x3f, 9, 9, 1, 2]), 'gap.safetensors'),
      /gap\.safetensors/,
      /\[4, 6\)/,
      /"b"/,
      /holes/,
    );
  });

  it('two overlapping tensors are refused even with a zero-length tensor sorted between them', () => {
    const h =
      '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"z":{"dtype":"F32","shape":[0],"data_offsets":[4,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}';
    expectError(
      () => parseSafetensors(handBuilt(h, [0, 0, 0x80, 0x3f, 0, 0, 0, 0x40]), 'ov0.safetensors'),
      /ov0\.safetensors/,
      /"a"/,
      /overlap/,
    );
  });

  it('zero-length tensors at the seams are fine', () => {
    const h =
      '{"z0":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"z":{"dtype":"F32","shape":[3,0],"data_offsets":[4,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}';
    const f = parseSafetensors(handBuilt(h, [0, 0, 0x80, 0x3f, 0, 0, 0, 0x40]));
    expect(Array.from(f.getFloat32('b'))).toEqual([2]);
    expect(f.getFloat32('z').length).toBe(0);
  });

  it('a header that does not begin with "{" is refused', () => {
    expectError(
      () => parseSafetensors(handBuilt(' {}', []), 'sp.safetensors'),
      /sp\.safetensors/,
      /beginning with "\{"/,
    );
  });
});

describe('safetensors: finite weights and short messages (issue 24)', () => {
  it('NaN and Infinity are refused naming the tensor and the index', () => {
    const f = parseSafetensors(
      writeSafetensors({
        w: { dtype: 'F32', shape: [2, 3], data: [0, 1, 2, 3, NaN, 5] },
        h: { dtype: 'F16', shape: [2], data: [1, Infinity] },
      }),
      'nan.safetensors',
    );
    expectError(() => getFiniteFloat32(f, 'w'), /nan\.safetensors/, /"w"/, /NaN at index 4 = \[1, 1\]/);
    expectError(() => getFiniteFloat32(f, 'h'), /"h"/, /Infinity at index 1/);
    expect(() => checkFinite(new Float32Array([1, -1e38, 0]), 'ok', 'x')).not.toThrow();
  });

  it('5,000-level nesting and million-character values give a short message, not a stack overflow', () => {
    const deep = '['.repeat(5000) + ']'.repeat(5000);
    const h = `{"w":{"dtype":"F32","shape":${deep},"data_offsets":[0,8]}}`;
    expectError(
      () => parseSafetensors(handBuilt(h, [0, 0, 0x80, 0x3f, 0, 0, 0, 0x40])),
      /"shape"/,
      /non-negative integers/,
    );
    const long = `{"${'n'.repeat(1_000_000)}":{"dtype":"${'X'.repeat(1_000_000)}","shape":[2],"data_offsets":[0,8]}}`;
    let msg = '';
    try {
      parseSafetensors(handBuilt(long, [0, 0, 0x80, 0x3f, 0, 0, 0, 0x40]));
    } catch (e) {
      expect(e).toBeInstanceOf(SafetensorsError);
      msg = (e as Error).message;
    }
    expect(msg).toMatch(/"dtype"/);
    expect(msg.length).toBeLessThan(500);
  });
});

/** A fetch stub serving files from a map, streaming each body in 1000-byte chunks. */
function stubFetch(files: Record<string, Uint8Array>, withLength = true): typeof fetch {
  return (async (input: string | URL | Request) => {
    const url = String(input);
    const body = files[url];
    if (!body) return new Response('not found', { status: 404, statusText: 'Not Found' });
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < body.length; i += 1000) c.enqueue(body.slice(i, i + 1000));
        c.close();
      },
    });
    return new Response(stream, { headers: withLength ? { 'content-length': String(body.length) } : {} });
  }) as typeof fetch;
}

describe('safetensors sources', () => {
  const fixture = fixtureBytes('tiny-llama');

  it('reads from a Blob / File', async () => {
    const file = new File([fixture], 'picked.safetensors');
    const f = await readSafetensors(file);
    expect(f.fileName).toBe('picked.safetensors');
    expect(f.names()).toHaveLength(20);
    await expect(readSafetensors(new File([fixture.slice(0, 100)], 'cut.safetensors'))).rejects.toThrow(
      /cut\.safetensors.*truncated/,
    );
  });

  it('reads from a URL with streaming progress, with and without content-length', async () => {
    for (const withLength of [true, false]) {
      const seen: [number, number | null][] = [];
      const f = await readSafetensors('https://models.test/m/model.safetensors', {
        fetch: stubFetch({ 'https://models.test/m/model.safetensors': fixture }, withLength),
        onProgress: (l, t) => seen.push([l, t]),
      });
      expect(f.names()).toHaveLength(20);
      expect(seen.length).toBeGreaterThan(40); // 43,312 bytes in 1000-byte chunks
      expect(seen[seen.length - 1]).toEqual([fixture.length, withLength ? fixture.length : null]);
      for (let i = 1; i < seen.length; i++) expect(seen[i][0]).toBeGreaterThanOrEqual(seen[i - 1][0]);
    }
    await expect(readSafetensors('https://models.test/missing', { fetch: stubFetch({}) })).rejects.toThrow(
      /missing.*HTTP 404/,
    );
  });

  it('reads a sharded checkpoint through model.safetensors.index.json', async () => {
    const src = parseSafetensors(fixture);
    const names = src.names();
    const shardOf = (i: number) => (i < 10 ? 'model-00001-of-00002.safetensors' : 'model-00002-of-00002.safetensors');
    const parts: Record<string, Record<string, { dtype: 'BF16'; shape: number[]; data: Uint16Array }>> = {};
    const weightMap: Record<string, string> = {};
    names.forEach((n, i) => {
      (parts[shardOf(i)] ??= {})[n] = { dtype: 'BF16', shape: src.info(n).shape, data: src.getRaw(n) as Uint16Array };
      weightMap[n] = shardOf(i);
    });
    const files: Record<string, Uint8Array> = {};
    for (const [k, v] of Object.entries(parts)) files[`https://models.test/m/${k}`] = writeSafetensors(v);
    const index = { metadata: { total_size: 41280 }, weight_map: weightMap };
    files['https://models.test/m/model.safetensors.index.json'] = new TextEncoder().encode(JSON.stringify(index));

    const progress: [number, number | null][] = [];
    const sharded = await readShardedSafetensorsFromUrl('https://models.test/m/model.safetensors.index.json', {
      fetch: stubFetch(files),
      onProgress: (l, t) => progress.push([l, t]),
    });
    expect(sharded.names().sort()).toEqual([...names].sort());
    for (const n of names) expect(Array.from(sharded.getFloat32(n))).toEqual(Array.from(src.getFloat32(n)));
    expect(sharded.fileOf(names[15])).toMatch(/00002-of-00002/);
    const total =
      files['https://models.test/m/model-00001-of-00002.safetensors'].length +
      files['https://models.test/m/model-00002-of-00002.safetensors'].length;
    expect(progress[progress.length - 1]).toEqual([total, total]);

    // A weight_map entry pointing at a shard that lacks the tensor is named.
    const bad = { weight_map: { ...weightMap, 'lm_head.weight': 'model-00001-of-00002.safetensors' } };
    await expect(
      readShardedSafetensors(bad, async (s) => parseSafetensors(files[`https://models.test/m/${s}`], s)),
    ).rejects.toThrow(/"lm_head\.weight".*missing from shard model-00001-of-00002/);
    await expect(readShardedSafetensors({ nope: 1 }, async () => src)).rejects.toThrow(/"weight_map" missing/);
  });
});
