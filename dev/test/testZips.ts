// Hostile zips for tests (issue 24), built byte by byte.
import { zipSync } from 'fflate';

/**
 * A 56 KB zip whose ZIP64 end record claims `count` entries: one empty stored entry, then 56 KB
 * of zeros after its central directory. fflate's unzipSync walks the claimed count through the
 * zeros (each reads as an empty entry at offset 0), so 4 billion entries froze it.
 */
export function zip64Claiming(count: bigint, pad = 56 * 1024): Uint8Array {
  const base = zipSync({ a: [new Uint8Array(0), { level: 0 }] });
  const e = base.length - 22;
  const bv = new DataView(base.buffer);
  const cdSize = bv.getUint32(e + 12, true);
  const cdOff = bv.getUint32(e + 16, true);
  const body = new Uint8Array(e + pad);
  body.set(base.subarray(0, e));
  const rec = new Uint8Array(56);
  const rv = new DataView(rec.buffer);
  rv.setUint32(0, 0x06064b50, true);
  rv.setBigUint64(4, 44n, true);
  rv.setBigUint64(24, count, true);
  rv.setBigUint64(32, count, true);
  rv.setBigUint64(40, BigInt(cdSize), true);
  rv.setBigUint64(48, BigInt(cdOff), true);
  const loc = new Uint8Array(20);
  const lv = new DataView(loc.buffer);
  lv.setUint32(0, 0x07064b50, true);
  lv.setBigUint64(8, BigInt(body.length), true);
  lv.setUint32(16, 1, true);
  const eocd = base.slice(e);
  const ev = new DataView(eocd.buffer);
  ev.setUint16(8, 0xffff, true);
  ev.setUint16(10, 0xffff, true);
  ev.setUint32(12, 0xffffffff, true);
  ev.setUint32(16, 0xffffffff, true);
  const out = new Uint8Array(body.length + 56 + 20 + 22);
  out.set(body);
  out.set(rec, body.length);
  out.set(loc, body.length + 56);
  out.set(eocd, body.length + 76);
  return out;
}
