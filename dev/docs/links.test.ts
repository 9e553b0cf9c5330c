import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { brokenLinks, headingAnchors, linkTargets, markdownPages } from './links';

describe('Markdown links resolve inside the repository', () => {
  it('covers the README, BENCHMARKS, EXPERIMENTS and docs/', () => {
    const pages = markdownPages();
    expect(pages).toContain('README.md');
    expect(pages.some((p) => p.startsWith('docs/'))).toBe(true);
  });
  for (const page of markdownPages()) {
    it(page, () => {
      expect(brokenLinks(page, readFileSync(page, 'utf8'))).toEqual([]);
    });
  }
});

// The checker itself: it must see a broken link, or the test above proves nothing.
describe('the link checker', () => {
  it('finds links and images, and skips code and external links', () => {
    const text =
      '[a](docs/x.md) ![i](img.png "t") `[c](code.md)` [w](https://x.org)\n```\n[f](fenced.md)\n```\n[r]: ref.md\n';
    expect(linkTargets(text)).toEqual(['docs/x.md', 'img.png', 'https://x.org', 'ref.md']);
  });
  it('names GitHub heading anchors', () => {
    const a = headingAnchors('# Sparring\n## Scale out: veRL and TRL\n## Tests\n## Tests\n### `npm test` (all)\n');
    expect([...a]).toEqual(['sparring', 'scale-out-verl-and-trl', 'tests', 'tests-1', 'npm-test-all']);
  });
  it('reports a missing file, a missing anchor and a path out of the repository', () => {
    const text =
      '# Top\n[ok](README.md) [self](#top) [gone](docs/nowhere.md) [bad](#bottom) [up](../outside/notes.md) [h](README.md#no-such-heading)';
    expect(brokenLinks('x.md', text)).toEqual([
      'x.md: docs/nowhere.md (no such file or folder: docs/nowhere.md)',
      'x.md: #bottom (no heading #bottom in x.md)',
      'x.md: ../outside/notes.md (points outside the repository)',
      'x.md: README.md#no-such-heading (no heading #no-such-heading in README.md)',
    ]);
  });
});
