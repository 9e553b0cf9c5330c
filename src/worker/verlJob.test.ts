import { readFileSync } from 'node:fs';
import { unzipSync } from 'fflate';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { verlJobZip } from './verlJob';

const DIR = 'sparring-redteam-verl/';

describe('verlJobZip (the worker side of "veRL job (zip)")', () => {
  afterEach(() => vi.unstubAllGlobals());

  it("zips the job folder with the sandbox model fetched from the lab's /models/", async () => {
    vi.stubGlobal('self', { location: { href: 'http://lab.test/assets/engine.worker.js' } });
    const asked: string[] = [];
    // The lab serves public/ at its root.
    vi.stubGlobal('fetch', async (u: URL) => {
      asked.push(String(u));
      return new Response(readFileSync(`public${u.pathname}`));
    });
    const z = await verlJobZip('redteam', {}, 5, 3);
    expect(z.fileName).toBe('sparring-redteam-verl.zip');
    expect(z.modelShipped).toBe(true);
    expect(asked).toContain('http://lab.test/models/defender/config.json');
    const files = unzipSync(z.bytes);
    expect(Object.keys(files)).toEqual(
      expect.arrayContaining([
        `${DIR}README.md`,
        `${DIR}reward.py`,
        `${DIR}verl_config.yaml`,
        `${DIR}data/train.parquet`,
        `${DIR}models/defender/model.safetensors`,
      ]),
    );
    expect(files[`${DIR}models/defender/model.safetensors`]).toEqual(
      new Uint8Array(readFileSync('public/models/defender/model.safetensors')),
    );
  });

  it('ships no model when the lab cannot serve it', async () => {
    vi.stubGlobal('self', { location: { href: 'http://lab.test/assets/engine.worker.js' } });
    vi.stubGlobal('fetch', async () => new Response('missing', { status: 404 }));
    const z = await verlJobZip('redteam', {}, 5, 3);
    expect(z.modelShipped).toBe(false);
    expect(Object.keys(unzipSync(z.bytes)).some((f) => f.startsWith(`${DIR}models/`))).toBe(false);
  });

  it('refuses an unknown recipe', async () => {
    await expect(verlJobZip('nope', {}, 1, undefined)).rejects.toThrow(/unknown recipe "nope"/);
  });
});
