// The Python the exporter ships is real Python: every file of python/ compiles (python3 is on the
// machine and in CI), and a generated file (data header + body) compiles too.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { pyFile } from './python';

// Compiled files go to a temporary folder, not __pycache__ beside the sources.
const PYCACHE = mkdtempSync(join(tmpdir(), 'pycache-'));

const PYTHON = fileURLToPath(new URL('./python/', import.meta.url));

/** python3 -m py_compile on files; throws with the compiler's message on a syntax error. */
function pyCompile(files: string[]): void {
  execFileSync('python3', ['-m', 'py_compile', ...files], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, PYTHONPYCACHEPREFIX: PYCACHE },
  });
}

describe('shipped Python', () => {
  const files = readdirSync(PYTHON).filter((f) => f.endsWith('.py'));

  it('python/ holds the dry run, the shared reward port, its batch form and the TRL script', () => {
    expect(files.sort()).toEqual(['dry_run.py', 'reward_batch.py', 'reward_common.py', 'trl_grpo.py']);
  });

  for (const f of files) {
    it(`${f} compiles (python3 -m py_compile)`, () => {
      expect(() => pyCompile([join(PYTHON, f)])).not.toThrow();
    });
  }

  it('a generated file (docstring, data header, body) compiles', () => {
    const dir = mkdtempSync(join(tmpdir(), 'verl-py-'));
    const out = join(dir, 'trl_grpo.py');
    writeFileSync(
      out,
      pyFile(
        'doc with "quotes" inside',
        { MODEL: 'm', GRPO_ARGS: { a: true, b: null, c: [1, 2.5] } },
        readFileSync(join(PYTHON, 'trl_grpo.py'), 'utf8'),
      ),
    );
    expect(() => pyCompile([out])).not.toThrow();
  });
});
