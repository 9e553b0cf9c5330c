// "Did you mean": the few valid names nearest a mistyped one, for messages that name a bad value
// without listing every valid one (a setup link's unknown field listed all 66 field names).

/** Edit distance (insert, delete, substitute one character), case-insensitive. */
export function editDistance(a: string, b: string): number {
  const s = a.toLowerCase();
  const t = b.toLowerCase();
  let prev = Array.from({ length: t.length + 1 }, (_, j) => j);
  for (let i = 1; i <= s.length; i++) {
    const cur = [i];
    for (let j = 1; j <= t.length; j++)
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (s[i - 1] === t[j - 1] ? 0 : 1));
    prev = cur;
  }
  return prev[t.length];
}

/**
 * At most `max` of `candidates` close to `name`, nearest first: within a third of the longer
 * name's length in edits (so `groupSzie` finds `groupSize`, `blorp` finds nothing), or sharing a
 * prefix or containing one another (`kl` finds `klLossCoef`, `klLossEstimator`).
 */
export function closestNames(name: string, candidates: readonly string[], max = 3): string[] {
  // A name past 100 characters is no typo of a field name (and edit distance costs length squared).
  if (name.length > 100) return [];
  const n = name.toLowerCase();
  const scored: [string, number][] = [];
  for (const c of candidates) {
    const l = c.toLowerCase();
    const d = editDistance(n, l);
    const near = d <= Math.max(1, Math.floor(Math.max(n.length, l.length) / 3));
    const contains = n.length >= 2 && (l.includes(n) || (l.length >= 3 && n.includes(l)));
    if (near || contains) scored.push([c, near ? d : d + 100]);
  }
  return scored
    .sort((a, b) => a[1] - b[1] || a[0].localeCompare(b[0]))
    .slice(0, max)
    .map(([c]) => c);
}
