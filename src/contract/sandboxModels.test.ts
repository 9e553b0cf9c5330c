import { readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SANDBOX_MODELS, unknownModelError } from './sandboxModels';

describe('a mistyped sandbox model name', () => {
  it('lists exactly the folders the site serves under public/models/', () => {
    expect([...SANDBOX_MODELS].sort()).toEqual(readdirSync(resolve('public/models')).sort());
  });

  it('reads "there is no model named blorp" with the available names', () => {
    expect(unknownModelError('blorp')).toBe(
      'there is no model named "blorp": the sandbox models are attacker, defender, judge, qa; ' +
        'other models are a hub id (owner/name), a URL or a picked folder',
    );
    expect(unknownModelError('defendr')).toMatch(/^there is no model named "defendr" \(did you mean defender\?\)/);
  });

  it('leaves the sandbox models, hub ids, URLs and paths alone', () => {
    for (const ok of [
      'defender',
      'qa',
      'Qwen/Qwen2.5-0.5B-Instruct',
      'https://example.org/m/',
      './models/x',
      'My-Model',
    ])
      expect(unknownModelError(ok)).toBeNull();
  });
});
