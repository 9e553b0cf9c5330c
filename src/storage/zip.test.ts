import { strToU8, unzipSync, zipSync } from 'fflate';
import { describe, expect, it } from 'vitest';
import { zip64Claiming } from '../../dev/test/testZips';
import { crc32, DEFAULT_ZIP_LIMITS, extractEntry, readCentralDirectory, runSync, runYielding, ZipError } from './zip';

const errorOf = (fn: () => unknown): Error => {
  try {
    fn();
  } catch (e) {
    return e as Error;
  }
  throw new Error('expected a throw');
};

/** Offset of the end-of-central-directory record (no comment in fflate's zips). */
const eocdAt = (z: Uint8Array) => z.length - 22;

describe('zip reading with bounded work (issue 24)', () => {
  it('CRC-32 matches the standard check value', () => {
    // "123456789" -> 0xCBF43926 (the CRC-32/ISO-HDLC check value).
    expect(crc32(strToU8('123456789'))).toBe(0xcbf43926);
    expect(crc32(strToU8('6789'), crc32(strToU8('12345')))).toBe(0xcbf43926);
    expect(crc32(new Uint8Array(0))).toBe(0);
  });

  it('a 56 KB zip whose end record claims about 4 billion entries fails at once with a clear error', () => {
    // Measured on the old code (fflate's unzipSync): no answer within 30 s.
    const z = zip64Claiming(0xffffffffn);
    expect(z.length).toBeGreaterThan(56 * 1024);
    expect(z.length).toBeLessThan(57 * 1024);
    const t0 = performance.now();
    const e = errorOf(() => readCentralDirectory(z, 'bomb.zip'));
    expect(performance.now() - t0).toBeLessThan(100);
    expect(e).toBeInstanceOf(ZipError);
    expect(e.message).toBe(
      `bomb.zip: the zip's end record claims 4294967295 entries; at most ${DEFAULT_ZIP_LIMITS.maxEntries} are read (corrupt, or not an adapter folder)`,
    );
    // The same construction with an honest count reads (the ZIP64 path itself works).
    expect(readCentralDirectory(zip64Claiming(1n), 'ok.zip').map((x) => x.name)).toEqual(['a']);
  });

  it('per-entry and total sizes are checked from the directory before inflating', () => {
    const z = zipSync({ a: [new Uint8Array(5000), { level: 0 }], b: [new Uint8Array(5000), { level: 0 }] });
    expect(
      errorOf(() => readCentralDirectory(z, 'big.zip', { ...DEFAULT_ZIP_LIMITS, maxEntryBytes: 4999 })).message,
    ).toBe('big.zip: entry "a" inflates to 5000 bytes, over the 4999-byte limit per entry');
    expect(
      errorOf(() => readCentralDirectory(z, 'big.zip', { ...DEFAULT_ZIP_LIMITS, maxTotalBytes: 9999 })).message,
    ).toMatch(/more than the 9999-byte limit/);
    // A deflated entry that claims more than deflate's 1032:1 can give.
    const d = zipSync({ a: strToU8('hello hello hello') });
    const c = d.slice();
    const cd = new DataView(c.buffer).getUint32(eocdAt(c) + 16, true);
    new DataView(c.buffer).setUint32(cd + 24, 500_000_000, true);
    expect(errorOf(() => readCentralDirectory(c, 'lie.zip')).message).toMatch(
      /declares 500000000 bytes from \d+ deflated ones/,
    );
  });

  it('a flipped stored byte fails the CRC-32, and a deflated entry longer than declared is refused', () => {
    const payload = Uint8Array.from({ length: 300 }, (_, i) => i & 0xff);
    const z = zipSync({ 'w.bin': [payload, { level: 0 }] });
    const [e] = readCentralDirectory(z, 'w.zip');
    expect(runSync(extractEntry(z, e, 'w.zip'))).toEqual(payload);
    const bad = z.slice();
    bad[30 + 'w.bin'.length + 100] ^= 0x01; // inside the stored data
    expect(() => unzipSync(bad)).not.toThrow(); // fflate alone accepts it
    expect(errorOf(() => runSync(extractEntry(bad, e, 'w.zip'))).message).toMatch(
      /^w\.zip\/w\.bin: CRC-32 is 0x[0-9a-f]{8} but the zip records 0x[0-9a-f]{8}; the archive is corrupt$/,
    );
    const dz = zipSync({ 'd.txt': strToU8('x'.repeat(1000)) });
    const [de] = readCentralDirectory(dz, 'd.zip');
    expect(errorOf(() => runSync(extractEntry(dz, { ...de, size: 999 }, 'd.zip'))).message).toMatch(
      /inflates past its declared 999 bytes/,
    );
  });

  it('inflating yields to the event loop, so a busy worker still answers (Stop within a second)', async () => {
    const big = new Uint8Array(48 << 20);
    for (let i = 0; i < big.length; i += 4096) big[i] = i & 0xff;
    const z = zipSync({ 'big.bin': [big, { level: 1 }] });
    const [e] = readCentralDirectory(z, 'big.zip');
    let ticks = 0;
    let maxGap = 0;
    let last = performance.now();
    const timer = setInterval(() => {
      const now = performance.now();
      maxGap = Math.max(maxGap, now - last);
      last = now;
      ticks++;
    }, 5);
    const out = await runYielding(extractEntry(z, e, 'big.zip'));
    clearInterval(timer);
    expect(out.length).toBe(big.length);
    expect(ticks).toBeGreaterThan(2);
    expect(maxGap).toBeLessThan(500);
  });

  it('encrypted entries, unknown methods and data past the end are named', () => {
    const z = zipSync({ 'a.bin': [new Uint8Array(10), { level: 0 }] });
    const cd = new DataView(z.buffer).getUint32(eocdAt(z) + 16, true);
    const enc = z.slice();
    new DataView(enc.buffer).setUint16(cd + 8, 1, true);
    expect(errorOf(() => readCentralDirectory(enc, 'e.zip')).message).toBe(
      'e.zip: entry "a.bin" is encrypted; zip the adapter folder without a password',
    );
    const [e] = readCentralDirectory(z, 'm.zip');
    expect(errorOf(() => runSync(extractEntry(z, { ...e, method: 12 }, 'm.zip'))).message).toBe(
      'm.zip/a.bin: compression method 12 is not supported (stored or deflate)',
    );
    expect(errorOf(() => runSync(extractEntry(z, { ...e, compressedSize: 1e6, size: 1e6 }, 'm.zip'))).message).toBe(
      'm.zip/a.bin: data runs past the end of the file (truncated zip)',
    );
    expect(errorOf(() => readCentralDirectory(z.slice(0, cd + 10), 'cut.zip')).message).toMatch(
      /^cut\.zip: not a readable zip archive/,
    );
  });
});
