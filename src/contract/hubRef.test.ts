import { describe, expect, it } from 'vitest';
import { DEFAULT_REVISION, hubFileUrl, InvalidModelIdError, parseHubRef, validateModelId } from './hubRef';

describe('model ids', () => {
  it('accepts owner/name and rejects anything else, saying why', () => {
    expect(validateModelId('HuggingFaceTB/SmolLM2-135M-Instruct')).toBe('HuggingFaceTB/SmolLM2-135M-Instruct');
    expect(validateModelId('Qwen/Qwen2.5-0.5B-Instruct')).toBe('Qwen/Qwen2.5-0.5B-Instruct');
    const bad: [string, RegExp][] = [
      ['', /is empty/],
      ['SmolLM2-135M', /the owner is missing/],
      ['a/b/c', /more than one "\/"/],
      ['owner/', /the name ""/],
      ['own er/model', /the owner "own er"/],
      ['owner/-model', /the name "-model"/],
      ['owner/mo--del', /without "--"/],
      ['owner/../x', /more than one/],
      ['owner/model.', /the name "model\."/],
      [' owner/model', /leading or trailing spaces/],
    ];
    for (const [id, why] of bad) {
      expect(() => validateModelId(id), id).toThrow(InvalidModelIdError);
      expect(() => validateModelId(id), id).toThrow(why);
    }
    expect(() => validateModelId('x')).toThrow(/expected "owner\/name"/);
  });

  it('parses pasted references and builds resolve URLs', () => {
    expect(parseHubRef('a/b')).toEqual({ id: 'a/b', revision: 'main' });
    expect(parseHubRef(' a/b@v1.0 ')).toEqual({ id: 'a/b', revision: 'v1.0' });
    expect(parseHubRef('https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct')).toEqual({
      id: 'HuggingFaceTB/SmolLM2-135M-Instruct',
      revision: DEFAULT_REVISION,
    });
    expect(parseHubRef('https://huggingface.co/a/b/tree/dev')).toEqual({ id: 'a/b', revision: 'dev' });
    expect(parseHubRef('https://huggingface.co/a/b/resolve/abc123/config.json')).toEqual({
      id: 'a/b',
      revision: 'abc123',
    });
    expect(() => parseHubRef('https://huggingface.co/a')).toThrow(/names no model/);
    expect(() => parseHubRef('a/b@')).toThrow(/invalid revision ""/);
    expect(hubFileUrl('a/b', 'config.json')).toBe('https://huggingface.co/a/b/resolve/main/config.json');
    expect(hubFileUrl('a/b', 'sub dir/x.json', { revision: 'refs/pr/1', endpoint: 'http://h:1/' })).toBe(
      'http://h:1/a/b/resolve/refs%2Fpr%2F1/sub%20dir/x.json',
    );
  });
});
