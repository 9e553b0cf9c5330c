import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { withCoresShown } from './wasmCores';

// A worker's navigator: the count is a getter on the prototype (WorkerNavigator.prototype).
class FakeNavigator {
  get hardwareConcurrency() {
    return 2;
  }
}

describe('withCoresShown', () => {
  beforeAll(() => vi.stubGlobal('navigator', new FakeNavigator()));
  afterAll(() => vi.unstubAllGlobals());
  const real = () => globalThis.navigator.hardwareConcurrency;

  it('shows the count only while the build runs, and the real getter after, even when the build throws', async () => {
    const before = real();
    expect(before).toBeGreaterThan(0);
    const seen = await withCoresShown(before * 2 + 1, async () => {
      await Promise.resolve();
      return real();
    });
    expect(seen).toBe(before * 2 + 1);
    expect(real()).toBe(before);
    await expect(
      withCoresShown(99, async () => {
        throw new Error('no wasm');
      }),
    ).rejects.toThrow('no wasm');
    expect(real()).toBe(before);
    expect(Object.getOwnPropertyDescriptor(globalThis.navigator, 'hardwareConcurrency')).toBeUndefined();
  });
});
