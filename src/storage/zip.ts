// Reading user zips with bounded work. fflate's unzipSync trusts the end record (a 56 KB zip that
// claims 4 billion entries froze the worker), inflates every entry whether wanted or not, and
// never checks CRC-32. Here the central directory is read and checked against limits first
// (entry count, each entry's and the total uncompressed size), only the entries asked for are
// inflated (fflate's streaming Inflate, chunk by chunk, stopping at the declared size), and each
// inflated entry's CRC-32 is compared with the directory's.
//
// The work is written as generators that yield between chunks: runSync() drives one to the end,
// runYielding() gives the event loop a turn every few tens of milliseconds, so a worker busy with
// a large import still answers Stop and Pause.
//
// Format: PKWARE APPNOTE.TXT 4.3 (end of central directory record, ZIP64 end record and locator,
// central directory file header, local file header, ZIP64 extra field 0x0001).

import { Inflate } from 'fflate';
import { brief, briefName, briefText, clampMessage } from '../contract/brief';

export class ZipError extends Error {
  constructor(message: string) {
    super(clampMessage(message));
    this.name = 'ZipError';
  }
}

export interface ZipLimits {
  /** Most entries the central directory may list. */
  maxEntries: number;
  /** Most bytes any one entry may inflate to. */
  maxEntryBytes: number;
  /** Most bytes all entries together may inflate to. */
  maxTotalBytes: number;
}

const GiB = 1024 ** 3;
export const DEFAULT_ZIP_LIMITS: ZipLimits = { maxEntries: 1000, maxEntryBytes: 1 * GiB, maxTotalBytes: 4 * GiB };

export interface ZipEntry {
  name: string;
  /** 0 stored, 8 deflate. */
  method: number;
  compressedSize: number;
  size: number;
  crc: number;
  localOffset: number;
}

const SIG_EOCD = 0x06054b50;
const SIG_EOCD64 = 0x06064b50;
const SIG_LOCATOR64 = 0x07064b50;
const SIG_CENTRAL = 0x02014b50;
const SIG_LOCAL = 0x04034b50;

function u64(dv: DataView, at: number): number {
  // Sizes past 2^53 are nonsense for a browser; they fail the limits as Infinity.
  const v = dv.getBigUint64(at, true);
  return v > BigInt(Number.MAX_SAFE_INTEGER) ? Infinity : Number(v);
}

/** Reads and checks the central directory; nothing is inflated. */
export function readCentralDirectory(
  zip: Uint8Array,
  fileName: string,
  limits: ZipLimits = DEFAULT_ZIP_LIMITS,
): ZipEntry[] {
  const dv = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  const len = zip.byteLength;
  const bad = (why: string): never => {
    throw new ZipError(`${fileName}: not a readable zip archive (${why})`);
  };
  // The end record is the last 22 bytes plus a comment of at most 65,535.
  let e = -1;
  for (let p = len - 22; p >= Math.max(0, len - 22 - 0xffff); p--) {
    if (dv.getUint32(p, true) === SIG_EOCD) {
      e = p;
      break;
    }
  }
  if (e < 0) bad('no end-of-central-directory record');
  let count = dv.getUint16(e + 10, true);
  let cdSize = dv.getUint32(e + 12, true);
  let cdOffset = dv.getUint32(e + 16, true);
  let cdLimit = e;
  if (count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) {
    // ZIP64: the real numbers are in the ZIP64 end record that the locator (just before) points at.
    const loc = e - 20;
    if (loc >= 0 && dv.getUint32(loc, true) === SIG_LOCATOR64) {
      const r = u64(dv, loc + 8);
      if (!(r + 56 <= loc) || dv.getUint32(r, true) !== SIG_EOCD64) bad('the ZIP64 locator points outside the file');
      count = u64(dv, r + 32);
      cdSize = u64(dv, r + 40);
      cdOffset = u64(dv, r + 48);
      cdLimit = r;
    }
  }
  if (count > limits.maxEntries) {
    throw new ZipError(
      `${fileName}: the zip's end record claims ${count} entries; at most ${limits.maxEntries} are read (corrupt, or not an adapter folder)`,
    );
  }
  if (!(cdOffset + cdSize <= cdLimit))
    bad(`the central directory [${cdOffset}, +${cdSize}) lies outside the ${len}-byte file`);
  const entries: ZipEntry[] = [];
  let total = 0;
  let p = cdOffset;
  const end = cdOffset + cdSize;
  for (let i = 0; i < count; i++) {
    if (p + 46 > end || dv.getUint32(p, true) !== SIG_CENTRAL)
      bad(`central directory entry ${i} of ${count} is missing or corrupt`);
    const flags = dv.getUint16(p + 8, true);
    const method = dv.getUint16(p + 10, true);
    const crc = dv.getUint32(p + 16, true);
    let compressedSize = dv.getUint32(p + 20, true);
    let size = dv.getUint32(p + 24, true);
    const nameLen = dv.getUint16(p + 28, true);
    const extraLen = dv.getUint16(p + 30, true);
    const commentLen = dv.getUint16(p + 32, true);
    let localOffset = dv.getUint32(p + 42, true);
    if (p + 46 + nameLen + extraLen + commentLen > end) bad(`central directory entry ${i} runs past the directory`);
    const name = new TextDecoder().decode(zip.subarray(p + 46, p + 46 + nameLen));
    // ZIP64 extra field: the 64-bit values, in this order, of whichever fields read 0xFFFFFFFF.
    for (let x = p + 46 + nameLen; x + 4 <= p + 46 + nameLen + extraLen;) {
      const id = dv.getUint16(x, true);
      const n = dv.getUint16(x + 2, true);
      if (id === 0x0001) {
        let q = x + 4;
        const take = () => {
          const v = q + 8 <= x + 4 + n ? u64(dv, q) : Infinity;
          q += 8;
          return v;
        };
        if (size === 0xffffffff) size = take();
        if (compressedSize === 0xffffffff) compressedSize = take();
        if (localOffset === 0xffffffff) localOffset = take();
      }
      x += 4 + n;
    }
    const where = `${fileName}: entry ${briefName(name)}`;
    if (flags & 1) throw new ZipError(`${where} is encrypted; zip the adapter folder without a password`);
    if (size > limits.maxEntryBytes) {
      throw new ZipError(`${where} inflates to ${size} bytes, over the ${limits.maxEntryBytes}-byte limit per entry`);
    }
    // Deflate expands at most 1032:1; a larger claim is a lie that would cost a huge allocation.
    if (method === 8 && size > compressedSize * 1032 + 1024) {
      throw new ZipError(
        `${where} declares ${size} bytes from ${compressedSize} deflated ones, more than deflate can produce (corrupt)`,
      );
    }
    total += size;
    if (total > limits.maxTotalBytes) {
      throw new ZipError(
        `${fileName}: the entries inflate to more than the ${limits.maxTotalBytes}-byte limit for a whole archive`,
      );
    }
    entries.push({ name, method, compressedSize, size, crc, localOffset });
    p += 46 + nameLen + extraLen + commentLen;
  }
  return entries;
}

/** Bytes CRC-summed between yields. */
const CHUNK = 1 << 20;
/**
 * Inflated bytes aimed at between yields. The deflated bytes fed per step follow the ratio seen
 * so far (1 KB at first, at most 1 MB), so a step stays near 1 MB out whether the data is
 * weights (about 1:1) or zeros (1032:1).
 */
const OUT_STEP = 1 << 20;

/** Inflates one entry in chunks, yielding between them; checks its size and CRC-32. */
export function* extractEntry(zip: Uint8Array, e: ZipEntry, fileName: string): Generator<void, Uint8Array> {
  const dv = new DataView(zip.buffer, zip.byteOffset, zip.byteLength);
  const where = `${fileName}/${briefText(e.name, 120)}`;
  const at = e.localOffset;
  if (!(at + 30 <= zip.byteLength) || dv.getUint32(at, true) !== SIG_LOCAL)
    throw new ZipError(`${where}: local header missing or corrupt`);
  const start = at + 30 + dv.getUint16(at + 26, true) + dv.getUint16(at + 28, true);
  if (!(start + e.compressedSize <= zip.byteLength))
    throw new ZipError(`${where}: data runs past the end of the file (truncated zip)`);
  const data = zip.subarray(start, start + e.compressedSize);
  let out: Uint8Array;
  if (e.method === 0) {
    if (e.compressedSize !== e.size)
      throw new ZipError(`${where}: stored entry has ${e.compressedSize} bytes but declares ${e.size}`);
    out = data;
  } else if (e.method === 8) {
    out = new Uint8Array(e.size);
    let n = 0;
    let done = false;
    const inf = new Inflate((chunk, final) => {
      if (n + chunk.length > e.size)
        throw new ZipError(`${where}: inflates past its declared ${e.size} bytes (corrupt, or a zip bomb)`);
      out.set(chunk, n);
      n += chunk.length;
      if (final) done = true;
    });
    try {
      let i = 0;
      do {
        const step = Math.max(
          1024,
          Math.min(OUT_STEP, Math.floor((OUT_STEP * Math.max(i, 1)) / Math.max(n, OUT_STEP))),
        );
        inf.push(data.subarray(i, i + step), i + step >= data.length);
        i += step;
        yield;
      } while (i < data.length);
    } catch (err) {
      if (err instanceof ZipError) throw err;
      throw new ZipError(`${where}: deflate data is corrupt (${brief((err as Error).message)})`);
    }
    if (!done || n !== e.size) throw new ZipError(`${where}: inflates to ${n} bytes, the directory says ${e.size}`);
  } else {
    throw new ZipError(`${where}: compression method ${e.method} is not supported (stored or deflate)`);
  }
  let crc = 0;
  for (let i = 0; i < out.length; i += CHUNK) {
    crc = crc32(out.subarray(i, i + CHUNK), crc);
    yield;
  }
  if (crc !== e.crc) {
    const hex = (x: number) => `0x${x.toString(16).padStart(8, '0')}`;
    throw new ZipError(`${where}: CRC-32 is ${hex(crc)} but the zip records ${hex(e.crc)}; the archive is corrupt`);
  }
  return out;
}

let crcTable: Uint32Array | null = null;

/** CRC-32 (IEEE 802.3, the zip polynomial 0xEDB88320), continuing from `crc`. */
export function crc32(bytes: Uint8Array, crc = 0): number {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  const t = crcTable;
  let c = ~crc;
  for (let i = 0; i < bytes.length; i++) c = t[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return ~c >>> 0;
}

/** Drives a stepwise job to its end without pausing. */
export function runSync<T>(job: Generator<void, T>): T {
  for (;;) {
    const r = job.next();
    if (r.done) return r.value;
  }
}

/** Drives a stepwise job, giving the event loop a turn at least every `sliceMs`. */
export async function runYielding<T>(job: Generator<void, T>, sliceMs = 30): Promise<T> {
  let t = performance.now();
  for (;;) {
    const r = job.next();
    if (r.done) return r.value;
    if (performance.now() - t > sliceMs) {
      await new Promise((res) => setTimeout(res, 0));
      t = performance.now();
    }
  }
}
