import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { METRIC_ALIASES } from '../../src/contract/aliases';

// docs/reference/metrics.md lists every metric alias the JSONL renamer knows, with both names.
describe('docs/reference/metrics.md', () => {
  const page = readFileSync('docs/reference/metrics.md', 'utf8');
  const rows = new Map(
    page
      .split('\n')
      .filter((l) => l.startsWith('| `'))
      .map((l) =>
        l
          .split('|')
          .slice(1, -1)
          .map((c) =>
            c
              .trim()
              .replace(/ \(seconds\)$/, '')
              .replace(/^`|`$/g, ''),
          ),
      )
      .map(([lab, verl, trl]) => [lab!, { verl: verl ?? '', trl: trl ?? '' }]),
  );
  for (const a of METRIC_ALIASES) {
    it(`${a.lab}: veRL ${a.verl ?? '-'}, TRL ${a.trl ?? '-'}`, () => {
      expect(rows.get(a.lab)).toEqual({ verl: a.verl ?? '', trl: a.trl ?? '' });
    });
  }
});
