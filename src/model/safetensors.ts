// safetensors reader and writer (https://github.com/huggingface/safetensors, format section).
//
// Layout: u64 little-endian header length N, then N bytes of UTF-8 JSON
//   { "<name>": { "dtype": "F32", "shape": [..], "data_offsets": [begin, end] }, ...,
//     "__metadata__": { "<key>": "<string>" } }
// then the data block; offsets are relative to byte 8 + N.
//
// This module is pure TypeScript (no tfjs) so the worker, the storage layer and tests can use it
// without a backend. Every malformed input raises a SafetensorsError whose message names the file
// and the tensor or field at fault, because a user dropping a broken checkpoint must be told what
// is wrong with which file, not see a RangeError from deep inside a typed-array constructor.
// What the format promises is checked (https://huggingface.co/docs/safetensors, "Format"): the
// header starts with "{" and may be padded with spaces; the data block is entirely indexed, with
// no holes and no overlaps, so a header length that is off by a few bytes (say, cut into the
// padding) cannot shift every tensor silently. Alignment of the data is not required on read:
// the spec does not ask for it, and published files with odd offsets exist.

import { brief, briefName, briefShape, briefText, clampMessage } from '../contract/brief';

/** Every dtype code of the format. Only some can be decoded (see READABLE / WRITABLE). */
export type SafetensorsDtype =
  | 'F64'
  | 'F32'
  | 'F16'
  | 'BF16'
  | 'I64'
  | 'I32'
  | 'I16'
  | 'I8'
  | 'U64'
  | 'U32'
  | 'U16'
  | 'U8'
  | 'BOOL'
  | 'F8_E4M3'
  | 'F8_E5M2';

/** Bytes per element of every dtype code; a code outside this table is "unknown". */
export const DTYPE_BYTES: Readonly<Record<SafetensorsDtype, number>> = {
  F64: 8,
  F32: 4,
  F16: 2,
  BF16: 2,
  I64: 8,
  I32: 4,
  I16: 2,
  I8: 1,
  U64: 8,
  U32: 4,
  U16: 2,
  U8: 1,
  BOOL: 1,
  F8_E4M3: 1,
  F8_E5M2: 1,
};

/** dtypes this reader decodes into numbers. */
export const READABLE_DTYPES: readonly SafetensorsDtype[] = ['F64', 'F32', 'F16', 'BF16', 'I64', 'I32', 'I8', 'U8'];
/** dtypes this writer encodes. */
export const WRITABLE_DTYPES: readonly SafetensorsDtype[] = ['F32', 'F16', 'BF16', 'I8', 'U8', 'I32'];

/** Largest header accepted: a real checkpoint's header is well under 1 MB; more is corruption. */
export const MAX_HEADER_BYTES = 100 * 1024 * 1024;

export class SafetensorsError extends Error {
  constructor(message: string) {
    super(clampMessage(message));
    this.name = 'SafetensorsError';
  }
}

export interface TensorInfo {
  name: string;
  dtype: SafetensorsDtype;
  shape: number[];
  /** Absolute byte offset of the tensor's data in the file. */
  byteOffset: number;
  byteLength: number;
}

/** A typed array in the tensor's own element type (F16/BF16 come back as raw Uint16 bit patterns). */
export type RawTensorData =
  Float64Array | Float32Array | Uint16Array | Int8Array | Uint8Array | Int32Array | BigInt64Array;

/** Anything that hands out named tensors: a single file, a sharded checkpoint, a test stub. */
export interface TensorSource {
  /** A label for error messages (file name, or the index file of a sharded checkpoint). */
  readonly fileName: string;
  has(name: string): boolean;
  names(): string[];
  info(name: string): TensorInfo;
  /** Decoded to float32, whatever the stored dtype. */
  getFloat32(name: string): Float32Array;
  /** Which file holds `name` (for messages). */
  fileOf(name: string): string;
}

const numel = (shape: readonly number[]): number => shape.reduce((a, b) => a * b, 1);

function isDtype(s: string): s is SafetensorsDtype {
  return Object.prototype.hasOwnProperty.call(DTYPE_BYTES, s);
}

function isNonNegInt(x: unknown): x is number {
  return typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
}

/** Reads the u64 header length, checking it fits the file and the 100 MB limit. */
function readHeaderLength(prefix: Uint8Array, fileSize: number, fileName: string): number {
  if (fileSize < 8 || prefix.byteLength < 8) {
    throw new SafetensorsError(
      `${fileName}: truncated safetensors file: ${fileSize} bytes, fewer than the 8-byte header-length prefix`,
    );
  }
  const dv = new DataView(prefix.buffer, prefix.byteOffset, 8);
  const n = dv.getBigUint64(0, true);
  if (n > BigInt(MAX_HEADER_BYTES)) {
    throw new SafetensorsError(
      `${fileName}: safetensors header length ${n} bytes exceeds the ${MAX_HEADER_BYTES}-byte (100 MB) limit (corrupt or not a safetensors file)`,
    );
  }
  const len = Number(n);
  if (8 + len > fileSize) {
    throw new SafetensorsError(
      `${fileName}: truncated safetensors file: header claims ${len} bytes but only ${fileSize - 8} follow the length prefix`,
    );
  }
  return len;
}

interface ParsedHeader {
  headerLength: number;
  metadata: Record<string, string>;
  tensors: Map<string, TensorInfo>;
}

/** Parses and validates the header JSON against a data block of `dataLength` bytes. */
function parseHeader(headerBytes: Uint8Array, headerLength: number, fileSize: number, fileName: string): ParsedHeader {
  if (headerBytes[0] !== 0x7b) {
    throw new SafetensorsError(
      `${fileName}: safetensors header must be a JSON object beginning with "{" (the first 8 bytes are its little-endian length; corrupt or not a safetensors file)`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(headerBytes));
  } catch (e) {
    throw new SafetensorsError(
      `${fileName}: safetensors header (${headerLength} bytes) is not valid JSON: ${briefText((e as Error).message, 120)}`,
    );
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new SafetensorsError(`${fileName}: safetensors header must be a JSON object`);
  }
  const dataStart = 8 + headerLength;
  const dataLength = fileSize - dataStart;
  const metadata: Record<string, string> = {};
  const tensors = new Map<string, TensorInfo>();
  const spans: { name: string; begin: number; end: number }[] = [];
  for (const [name, entry] of Object.entries(json as Record<string, unknown>)) {
    if (name === '__metadata__') {
      if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
        throw new SafetensorsError(`${fileName}: field "__metadata__" must be an object of strings`);
      }
      for (const [k, v] of Object.entries(entry as Record<string, unknown>)) {
        if (typeof v !== 'string') {
          throw new SafetensorsError(
            `${fileName}: field "__metadata__.${briefText(k)}" must be a string, got ${brief(v)}`,
          );
        }
        metadata[k] = v;
      }
      continue;
    }
    const where = `${fileName}: tensor ${briefName(name)}`;
    if (entry === null || typeof entry !== 'object' || Array.isArray(entry)) {
      throw new SafetensorsError(
        `${where}: header entry is ${brief(entry)}, expected an object with dtype, shape, data_offsets`,
      );
    }
    const { dtype, shape, data_offsets: offsets } = entry as Record<string, unknown>;
    if (typeof dtype !== 'string' || !isDtype(dtype)) {
      const what = typeof dtype === 'string' ? `unknown dtype ${briefName(dtype)}` : `${brief(dtype)}`;
      throw new SafetensorsError(
        `${where}: field "dtype" is ${what}, expected one of ${Object.keys(DTYPE_BYTES).join(', ')}`,
      );
    }
    if (!Array.isArray(shape) || !shape.every(isNonNegInt)) {
      throw new SafetensorsError(
        `${where}: field "shape" must be an array of non-negative integers, got ${brief(shape)}`,
      );
    }
    if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isNonNegInt)) {
      throw new SafetensorsError(`${where}: field "data_offsets" must be [begin, end] integers, got ${brief(offsets)}`);
    }
    const [begin, end] = offsets as [number, number];
    if (end < begin) {
      throw new SafetensorsError(`${where}: data_offsets [${begin}, ${end}] end before begin`);
    }
    if (end > dataLength) {
      throw new SafetensorsError(
        `${where}: data_offsets [${begin}, ${end}] run past the end of the data (${dataLength} bytes; file truncated or header corrupt)`,
      );
    }
    const expected = numel(shape as number[]) * DTYPE_BYTES[dtype];
    if (expected !== end - begin) {
      throw new SafetensorsError(
        `${where}: dtype ${dtype} and shape ${briefShape(shape as number[])} need ${expected} bytes but data_offsets span ${end - begin}`,
      );
    }
    tensors.set(name, {
      name,
      dtype,
      shape: (shape as number[]).slice(),
      byteOffset: dataStart + begin,
      byteLength: end - begin,
    });
    spans.push({ name, begin, end });
  }
  // The data block must be tiled exactly: sorted by offsets, each tensor begins where the one
  // before ended (zero-length tensors included), and the last ends at the end of the file.
  spans.sort((a, b) => a.begin - b.begin || a.end - b.end);
  let pos = 0;
  let prev: (typeof spans)[number] | null = null;
  for (const cur of spans) {
    if (cur.begin < pos) {
      throw new SafetensorsError(
        `${fileName}: tensors ${briefName(prev!.name)} [${prev!.begin}, ${prev!.end}] and ${briefName(cur.name)} [${cur.begin}, ${cur.end}] overlap`,
      );
    }
    if (cur.begin > pos) {
      throw new SafetensorsError(
        `${fileName}: data bytes [${pos}, ${cur.begin}) before tensor ${briefName(cur.name)} belong to no tensor (the format forbids holes in the data block)`,
      );
    }
    pos = cur.end;
    if (cur.end > cur.begin) prev = cur;
  }
  if (pos !== dataLength) {
    throw new SafetensorsError(
      `${fileName}: the tensors index ${pos} bytes but the data block after the ${headerLength}-byte header holds ${dataLength} (header length wrong, or bytes appended)`,
    );
  }
  return { headerLength, metadata, tensors };
}

// ---------------------------------------------------------------------------------------------
// Float conversions

const f32Scratch = new Float32Array(1);
const u32Scratch = new Uint32Array(f32Scratch.buffer);

/** IEEE half bits -> number (subnormals, infinities and NaN included). */
export function f16BitsToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * frac * 2 ** -24;
  if (exp === 0x1f) return frac ? NaN : sign * Infinity;
  return sign * (1 + frac / 1024) * 2 ** (exp - 15);
}

/** number -> IEEE half bits, round to nearest even; overflow goes to +-Infinity. */
export function floatToF16Bits(x: number): number {
  f32Scratch[0] = x;
  const u = u32Scratch[0];
  const sign = (u >>> 16) & 0x8000;
  const exp = (u >>> 23) & 0xff;
  let mant = u & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 : 0); // Inf / NaN
  let e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00; // overflow
  if (e <= 0) {
    // Subnormal half (or zero): shift the implicit-1 mantissa right, rounding to nearest even.
    if (e < -10) return sign;
    mant |= 0x800000;
    const shift = 14 - e;
    const half = 1 << (shift - 1);
    const rest = mant & ((1 << shift) - 1);
    let h = mant >>> shift;
    if (rest > half || (rest === half && h & 1)) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest === 0x1000 && h & 1)) h++; // may carry into the exponent: correct
  return sign | h;
}

/** Decodes F16 bit patterns to float32. */
export function decodeF16(bits: Uint16Array): Float32Array {
  // A 65,536-entry table makes decoding a gather; it is built on first use (256 KB).
  const table = f16Table();
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) out[i] = table[bits[i]];
  return out;
}

let f16TableCache: Float32Array | null = null;
function f16Table(): Float32Array {
  if (!f16TableCache) {
    f16TableCache = new Float32Array(65536);
    for (let i = 0; i < 65536; i++) f16TableCache[i] = f16BitsToFloat(i);
  }
  return f16TableCache;
}

/** Decodes BF16 bit patterns to float32 (exact: bf16 is the top half of an f32). */
export function decodeBF16(bits: Uint16Array): Float32Array {
  const out = new Uint32Array(bits.length);
  for (let i = 0; i < bits.length; i++) out[i] = bits[i] << 16;
  return new Float32Array(out.buffer);
}

/** float32 -> BF16 bits, round to nearest even (NaN stays NaN). */
export function encodeBF16(values: ArrayLike<number>): Uint16Array {
  const f = Float32Array.from(values);
  const u = new Uint32Array(f.buffer);
  const out = new Uint16Array(f.length);
  for (let i = 0; i < f.length; i++) {
    const x = u[i];
    if ((x & 0x7f800000) === 0x7f800000 && (x & 0x7fffff) !== 0) {
      out[i] = (x >>> 16) | 0x40; // quiet NaN, keeps the sign
      continue;
    }
    const lsb = (x >>> 16) & 1;
    out[i] = ((x + 0x7fff + lsb) >>> 16) & 0xffff;
  }
  return out;
}

/** float32 -> F16 bits, round to nearest even. */
export function encodeF16(values: ArrayLike<number>): Uint16Array {
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = floatToF16Bits(values[i]);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Reader

/** One parsed safetensors file held in memory. */
export class SafetensorsFile implements TensorSource {
  readonly fileName: string;
  readonly metadata: Readonly<Record<string, string>>;
  readonly headerLength: number;
  private readonly bytes: Uint8Array;
  private readonly tensors: Map<string, TensorInfo>;

  /** Parses and validates `data` (the whole file). Throws SafetensorsError on any defect. */
  constructor(data: ArrayBuffer | Uint8Array, fileName = 'model.safetensors') {
    this.fileName = fileName;
    this.bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
    const n = readHeaderLength(this.bytes.subarray(0, 8), this.bytes.byteLength, fileName);
    const parsed = parseHeader(this.bytes.subarray(8, 8 + n), n, this.bytes.byteLength, fileName);
    this.metadata = parsed.metadata;
    this.headerLength = n;
    this.tensors = parsed.tensors;
  }

  has(name: string): boolean {
    return this.tensors.has(name);
  }

  /** Tensor names in header order. */
  names(): string[] {
    return [...this.tensors.keys()];
  }

  fileOf(): string {
    return this.fileName;
  }

  info(name: string): TensorInfo {
    const t = this.tensors.get(name);
    if (!t) throw new SafetensorsError(`${this.fileName}: no tensor named ${briefName(name)}`);
    return t;
  }

  /** The stored bytes of one tensor (a view, not a copy). */
  rawBytes(name: string): Uint8Array {
    const t = this.info(name);
    return this.bytes.subarray(t.byteOffset, t.byteOffset + t.byteLength);
  }

  /**
   * The tensor in its stored element type. Data offsets need not be aligned to the element
   * size, so the bytes are copied into a fresh buffer (little-endian host assumed, as every
   * browser and Node platform in use is).
   */
  getRaw(name: string): RawTensorData {
    const t = this.info(name);
    const copy = this.rawBytes(name).slice().buffer;
    switch (t.dtype) {
      case 'F64':
        return new Float64Array(copy);
      case 'F32':
        return new Float32Array(copy);
      case 'F16':
      case 'BF16':
        return new Uint16Array(copy);
      case 'I8':
        return new Int8Array(copy);
      case 'U8':
        return new Uint8Array(copy);
      case 'I32':
        return new Int32Array(copy);
      case 'I64':
        return new BigInt64Array(copy);
      default:
        throw new SafetensorsError(
          `${this.fileName}: tensor "${name}": dtype ${t.dtype} cannot be read (readable: ${READABLE_DTYPES.join(', ')})`,
        );
    }
  }

  /** Decoded to float32 (F16 and BF16 widened exactly; integers converted). */
  getFloat32(name: string): Float32Array {
    const t = this.info(name);
    const raw = this.getRaw(name);
    if (t.dtype === 'F32') return raw as Float32Array;
    if (t.dtype === 'BF16') return decodeBF16(raw as Uint16Array);
    if (t.dtype === 'F16') return decodeF16(raw as Uint16Array);
    if (raw instanceof BigInt64Array) return Float32Array.from(raw, (v) => Number(v));
    return Float32Array.from(raw as ArrayLike<number>);
  }

  /** Integer tensors (I8, U8, I32, I64) as Int32Array; I64 values outside int32 are an error. */
  getInt32(name: string): Int32Array {
    const t = this.info(name);
    if (!['I8', 'U8', 'I32', 'I64'].includes(t.dtype)) {
      throw new SafetensorsError(`${this.fileName}: tensor "${name}": dtype ${t.dtype} is not an integer type`);
    }
    const raw = this.getRaw(name);
    if (raw instanceof Int32Array) return raw;
    if (raw instanceof BigInt64Array) {
      const out = new Int32Array(raw.length);
      for (let i = 0; i < raw.length; i++) {
        const v = raw[i];
        if (v > 2147483647n || v < -2147483648n) {
          throw new SafetensorsError(
            `${this.fileName}: tensor "${name}": I64 value ${v} at index ${i} does not fit int32`,
          );
        }
        out[i] = Number(v);
      }
      return out;
    }
    return Int32Array.from(raw as ArrayLike<number>);
  }
}

/**
 * Throws a SafetensorsError naming the tensor and the first index holding NaN or +-Infinity: a
 * non-finite weight makes every later step NaN, so it is refused where tensors enter.
 */
export function checkFinite(
  values: ArrayLike<number>,
  tensor: string,
  fileName: string,
  shape?: readonly number[],
): void {
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v - v !== 0) {
      let at = '';
      if (shape && shape.length > 1) {
        const idx: number[] = [];
        let rest = i;
        for (let d = shape.length - 1; d >= 0; d--) {
          idx.unshift(rest % shape[d]);
          rest = Math.floor(rest / shape[d]);
        }
        at = ` = [${idx.join(', ')}]`;
      }
      throw new SafetensorsError(
        `${fileName}: tensor ${briefName(tensor)} holds ${v} at index ${i}${at}; weights must be finite numbers`,
      );
    }
  }
}

/** A tensor decoded to float32, refused (SafetensorsError) if any value is NaN or infinite. */
export function getFiniteFloat32(source: TensorSource, name: string): Float32Array {
  const data = source.getFloat32(name);
  checkFinite(data, name, source.fileOf(name), source.info(name).shape);
  return data;
}

/** Parses a whole safetensors file already in memory. */
export function parseSafetensors(data: ArrayBuffer | Uint8Array, fileName?: string): SafetensorsFile {
  return new SafetensorsFile(data, fileName);
}

export type ProgressCallback = (loadedBytes: number, totalBytes: number | null) => void;

export interface ReadOptions {
  /** Name used in error messages (defaults to the File name or the URL). */
  fileName?: string;
  /** Called as bytes arrive from a URL (total is null when the server sends no length). */
  onProgress?: ProgressCallback;
  /** fetch to use for URLs (defaults to globalThis.fetch); tests pass a stub. */
  fetch?: typeof globalThis.fetch;
  signal?: AbortSignal;
}

/**
 * Reads a safetensors file from an ArrayBuffer/Uint8Array, a Blob/File, or a URL.
 * A Blob's header is checked before the rest is read, so a wrong file fails fast.
 */
export async function readSafetensors(
  source: ArrayBuffer | Uint8Array | Blob | URL | string,
  opts: ReadOptions = {},
): Promise<SafetensorsFile> {
  if (source instanceof ArrayBuffer || source instanceof Uint8Array) {
    return new SafetensorsFile(source, opts.fileName);
  }
  if (typeof source === 'string' || source instanceof URL) {
    const url = source instanceof URL ? source.href : source;
    const bytes = await fetchBytes(url, opts);
    return new SafetensorsFile(bytes, opts.fileName ?? url);
  }
  const blob: Blob = source;
  const name = opts.fileName ?? ((blob as Partial<File>).name || 'model.safetensors');
  const prefix = new Uint8Array(await blob.slice(0, 8).arrayBuffer());
  const n = readHeaderLength(prefix, blob.size, name);
  parseHeader(new Uint8Array(await blob.slice(8, 8 + n).arrayBuffer()), n, blob.size, name);
  const all = new Uint8Array(await blob.arrayBuffer());
  opts.onProgress?.(all.byteLength, all.byteLength);
  return new SafetensorsFile(all, name);
}

/** Fetches a URL into memory, streaming so the caller can show progress. */
export async function fetchBytes(url: string, opts: ReadOptions = {}): Promise<Uint8Array> {
  const doFetch = opts.fetch ?? globalThis.fetch;
  let res: Response;
  try {
    res = await doFetch(url, { signal: opts.signal });
  } catch (e) {
    throw new SafetensorsError(`${url}: fetch failed: ${(e as Error).message}`);
  }
  if (!res.ok) throw new SafetensorsError(`${url}: fetch failed: HTTP ${res.status} ${res.statusText}`.trim());
  const lenHeader = res.headers.get('content-length');
  const total = lenHeader !== null && /^\d+$/.test(lenHeader) ? Number(lenHeader) : null;
  if (!res.body) {
    const buf = new Uint8Array(await res.arrayBuffer());
    opts.onProgress?.(buf.byteLength, total ?? buf.byteLength);
    return buf;
  }
  const reader = res.body.getReader();
  // With a known length, fill one preallocated buffer; bytes beyond it (or all bytes when the
  // length is unknown) are collected as chunks and joined at the end.
  const pre = new Uint8Array(total ?? 0);
  let inPre = 0;
  const chunks: Uint8Array[] = [];
  let loaded = 0;
  opts.onProgress?.(0, total);
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (chunks.length === 0 && inPre + value.byteLength <= pre.byteLength) {
      pre.set(value, inPre);
      inPre += value.byteLength;
    } else {
      chunks.push(value);
    }
    loaded += value.byteLength;
    opts.onProgress?.(loaded, total);
  }
  if (chunks.length === 0 && inPre === pre.byteLength) return pre;
  const out = new Uint8Array(loaded);
  out.set(pre.subarray(0, inPre), 0);
  let pos = inPre;
  for (const c of chunks) {
    out.set(c, pos);
    pos += c.byteLength;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Sharded checkpoints (model.safetensors.index.json)

export interface ShardIndex {
  metadata?: Record<string, unknown>;
  weight_map: Record<string, string>;
}

/** Validates a parsed model.safetensors.index.json. */
export function parseShardIndex(json: unknown, fileName = 'model.safetensors.index.json'): ShardIndex {
  if (typeof json === 'string') {
    try {
      json = JSON.parse(json);
    } catch (e) {
      throw new SafetensorsError(`${fileName}: not valid JSON: ${(e as Error).message}`);
    }
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) {
    throw new SafetensorsError(`${fileName}: must be a JSON object`);
  }
  const wm = (json as Record<string, unknown>).weight_map;
  if (wm === null || typeof wm !== 'object' || Array.isArray(wm)) {
    throw new SafetensorsError(`${fileName}: field "weight_map" missing or not an object`);
  }
  for (const [k, v] of Object.entries(wm as Record<string, unknown>)) {
    if (typeof v !== 'string' || v.length === 0) {
      throw new SafetensorsError(
        `${fileName}: field "weight_map" entry ${briefName(k)} is ${brief(v)}, expected a shard file name`,
      );
    }
  }
  return json as ShardIndex;
}

/** A checkpoint split across several files, addressed as one TensorSource. */
export class ShardedSafetensors implements TensorSource {
  readonly fileName: string;
  private readonly where = new Map<string, SafetensorsFile>();

  constructor(index: ShardIndex, shards: Map<string, SafetensorsFile>, indexFileName = 'model.safetensors.index.json') {
    this.fileName = indexFileName;
    for (const [name, shardName] of Object.entries(index.weight_map)) {
      const shard = shards.get(shardName);
      if (!shard)
        throw new SafetensorsError(
          `${indexFileName}: tensor ${briefName(name)} maps to shard ${briefName(shardName)}, which was not loaded`,
        );
      if (!shard.has(name)) {
        throw new SafetensorsError(
          `${indexFileName}: tensor ${briefName(name)} is listed in weight_map but missing from shard ${shard.fileName}`,
        );
      }
      this.where.set(name, shard);
    }
  }

  has(name: string): boolean {
    return this.where.has(name);
  }
  names(): string[] {
    return [...this.where.keys()];
  }
  private shard(name: string): SafetensorsFile {
    const s = this.where.get(name);
    if (!s) throw new SafetensorsError(`${this.fileName}: no tensor named ${briefName(name)} in weight_map`);
    return s;
  }
  info(name: string): TensorInfo {
    return this.shard(name).info(name);
  }
  fileOf(name: string): string {
    return this.shard(name).fileName;
  }
  getFloat32(name: string): Float32Array {
    return this.shard(name).getFloat32(name);
  }
  getRaw(name: string): RawTensorData {
    return this.shard(name).getRaw(name);
  }
}

/**
 * Loads a sharded checkpoint: `loadShard` is called once per distinct shard file named in the
 * index (a URL fetch, a File from a picked folder, a Node fs read).
 */
export async function readShardedSafetensors(
  index: ShardIndex | unknown,
  loadShard: (shardFileName: string) => Promise<SafetensorsFile>,
  indexFileName = 'model.safetensors.index.json',
): Promise<ShardedSafetensors> {
  const idx = parseShardIndex(index, indexFileName);
  const shardNames = [...new Set(Object.values(idx.weight_map))];
  const shards = new Map<string, SafetensorsFile>();
  for (const s of shardNames) shards.set(s, await loadShard(s));
  return new ShardedSafetensors(idx, shards, indexFileName);
}

/**
 * Loads a sharded checkpoint from a base URL: fetches `index.json`, then every shard, reporting
 * progress summed across shards (total known once every shard has sent its length).
 */
export async function readShardedSafetensorsFromUrl(
  indexUrl: string | URL,
  opts: ReadOptions = {},
): Promise<ShardedSafetensors> {
  const href = indexUrl instanceof URL ? indexUrl.href : indexUrl;
  const indexBytes = await fetchBytes(href, { ...opts, onProgress: undefined });
  const idx = parseShardIndex(new TextDecoder().decode(indexBytes), href);
  const shardNames = [...new Set(Object.values(idx.weight_map))];
  const loaded = new Map<string, number>();
  const totals = new Map<string, number | null>();
  const report = () => {
    if (!opts.onProgress) return;
    const l = [...loaded.values()].reduce((a, b) => a + b, 0);
    const ts = [...totals.values()];
    const t =
      ts.length === shardNames.length && ts.every((x) => x !== null)
        ? (ts as number[]).reduce((a, b) => a + b, 0)
        : null;
    opts.onProgress(l, t);
  };
  return readShardedSafetensors(
    idx,
    async (shard) => {
      const url = new URL(shard, href).href;
      const bytes = await fetchBytes(url, {
        ...opts,
        onProgress: (l, t) => {
          loaded.set(shard, l);
          totals.set(shard, t);
          report();
        },
      });
      return new SafetensorsFile(bytes, url);
    },
    href,
  );
}

// ---------------------------------------------------------------------------------------------
// Writer

export interface TensorToWrite {
  dtype: SafetensorsDtype;
  shape: number[];
  /**
   * Values: for F32/F16/BF16 any numbers (F16/BF16 are rounded to nearest even), or a Uint16Array
   * of raw bit patterns for F16/BF16; for I8/U8/I32 integers in range.
   */
  data: ArrayLike<number>;
}

/**
 * Serialises tensors (insertion order) into a safetensors file. The header is padded with spaces
 * to a multiple of 8 bytes so every tensor starts 8-byte aligned, as the reference writer does.
 */
export function writeSafetensors(
  tensors: Record<string, TensorToWrite> | Map<string, TensorToWrite>,
  metadata?: Record<string, string>,
): Uint8Array {
  const entries = tensors instanceof Map ? [...tensors.entries()] : Object.entries(tensors);
  const header: Record<string, unknown> = {};
  if (metadata && Object.keys(metadata).length > 0) {
    for (const [k, v] of Object.entries(metadata)) {
      if (typeof v !== 'string') throw new SafetensorsError(`writeSafetensors: __metadata__.${k} must be a string`);
    }
    header.__metadata__ = metadata;
  }
  const blobs: Uint8Array[] = [];
  let offset = 0;
  for (const [name, t] of entries) {
    if (name === '__metadata__') throw new SafetensorsError('writeSafetensors: "__metadata__" is not a tensor name');
    if (!WRITABLE_DTYPES.includes(t.dtype)) {
      throw new SafetensorsError(
        `writeSafetensors: tensor "${name}": dtype ${t.dtype} cannot be written (writable: ${WRITABLE_DTYPES.join(', ')})`,
      );
    }
    if (!t.shape.every(isNonNegInt)) {
      throw new SafetensorsError(
        `writeSafetensors: tensor "${name}": shape must be non-negative integers, got ${JSON.stringify(t.shape)}`,
      );
    }
    const n = numel(t.shape);
    if (t.data.length !== n) {
      throw new SafetensorsError(
        `writeSafetensors: tensor "${name}": shape [${t.shape.join(', ')}] has ${n} elements but data has ${t.data.length}`,
      );
    }
    const bytes = encodeData(name, t);
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + bytes.byteLength] };
    blobs.push(bytes);
    offset += bytes.byteLength;
  }
  let json = JSON.stringify(header);
  let hb = new TextEncoder().encode(json);
  const pad = (8 - (hb.byteLength % 8)) % 8;
  if (pad) {
    json += ' '.repeat(pad);
    hb = new TextEncoder().encode(json);
  }
  const out = new Uint8Array(8 + hb.byteLength + offset);
  new DataView(out.buffer).setBigUint64(0, BigInt(hb.byteLength), true);
  out.set(hb, 8);
  let pos = 8 + hb.byteLength;
  for (const b of blobs) {
    out.set(b, pos);
    pos += b.byteLength;
  }
  return out;
}

function encodeData(name: string, t: TensorToWrite): Uint8Array {
  const checkInts = (lo: number, hi: number) => {
    for (let i = 0; i < t.data.length; i++) {
      const v = t.data[i];
      if (!Number.isInteger(v) || v < lo || v > hi) {
        throw new SafetensorsError(
          `writeSafetensors: tensor "${name}": ${t.dtype} value ${v} at index ${i} out of range [${lo}, ${hi}]`,
        );
      }
    }
  };
  switch (t.dtype) {
    case 'F32':
      return new Uint8Array(Float32Array.from(t.data).buffer);
    case 'F16':
      return new Uint8Array((t.data instanceof Uint16Array ? t.data.slice() : encodeF16(t.data)).buffer);
    case 'BF16':
      return new Uint8Array((t.data instanceof Uint16Array ? t.data.slice() : encodeBF16(t.data)).buffer);
    case 'I8':
      checkInts(-128, 127);
      return new Uint8Array(Int8Array.from(t.data).buffer);
    case 'U8':
      checkInts(0, 255);
      return Uint8Array.from(t.data);
    case 'I32':
      checkInts(-2147483648, 2147483647);
      return new Uint8Array(Int32Array.from(t.data).buffer);
    default:
      throw new SafetensorsError(`writeSafetensors: tensor "${name}": dtype ${t.dtype} cannot be written`);
  }
}
