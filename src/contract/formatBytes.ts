// Byte counts in binary units (KiB, MiB, ...), as browsers report storage quota and GPU limits.

export interface FormatBytesOptions {
  /** Drop a zero fraction ("128 MiB", not "128.0 MiB"): for sizes that are powers of two, like GPU limits. */
  trimZero?: boolean;
}

/** 12345678 -> "11.8 MiB"; 1536 -> "1.5 KiB"; with trimZero, 2 ** 31 -> "2 GiB". */
export function formatBytes(n: number, { trimZero = false }: FormatBytesOptions = {}): string {
  if (!Number.isFinite(n)) return String(n);
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  if (u === 0) return `${n} B`;
  return `${v.toFixed(trimZero && Number.isInteger(v) ? 0 : 1)} ${units[u]}`;
}
