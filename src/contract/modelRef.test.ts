import { describe, expect, it } from 'vitest';
import { modelRefError } from './modelRef';

describe('modelRefError', () => {
  it('accepts what the env loads: sandbox names, hub ids, URLs and site paths', () => {
    for (const ok of [
      'defender',
      'HuggingFaceTB/SmolLM2-135M-Instruct',
      'Qwen/Qwen2.5-0.5B-Instruct@main',
      'https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct/resolve/main/',
      'http://localhost:8000/models/x/',
      '/models/defender/',
      './models/defender/',
      '', // an optional model left empty (a guard): off
    ])
      expect(modelRefError(ok), ok).toBeNull();
  });

  it('names what is wrong with anything else', () => {
    expect(modelRefError('not a hub id!!')).toMatch(/^invalid model id "not a hub id!!": /);
    expect(modelRefError('owner/na me')).toMatch(/invalid model id/);
    expect(modelRefError('defendr')).toMatch(/no model named "defendr" \(did you mean defender\?\)/);
    expect(modelRefError('a/b/c')).toMatch(/more than one "\/"/);
  });
});
