// Global setup: serve the built app (dist/) on a free localhost port for the whole run, and the
// golden model fixtures of dev/fixtures on another, the way a hub or a CDN would serve a
// model folder (the app loads them through its ordinary URL model source).
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { preview } from 'vite';
import { serveFolder } from '../dev/servers/staticServer';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    baseURL: string;
    fixturesURL: string;
  }
}

export const FIXTURES_DIR = resolve('dev', 'fixtures');

// SPARRING_DIST lets several builds coexist (`npm run build:harness -- --outDir dist-x` then SPARRING_DIST=dist-x).
const OUT_DIR = process.env.SPARRING_DIST ?? 'dist';

export default async function setup(project: TestProject) {
  // The tests load the lab and the harness page: the harness build has both (`npm run build` has the lab only).
  if (!existsSync(`${OUT_DIR}/index.html`) || !existsSync(`${OUT_DIR}/dev/harness/index.html`))
    throw new Error(`${OUT_DIR}/dev/harness/index.html is missing: run \`npm run build:harness\` before the e2e tests`);
  if (!existsSync(FIXTURES_DIR))
    throw new Error(`${FIXTURES_DIR} is missing: the golden fixtures ship in dev/fixtures`);
  const app = await preview({
    build: { outDir: OUT_DIR },
    preview: { host: '127.0.0.1', port: 4173, strictPort: false },
    logLevel: 'warn',
  });
  const url = app.resolvedUrls?.local[0];
  if (!url) throw new Error('vite preview did not report a local URL');
  const fixtures = await serveFolder(FIXTURES_DIR);
  project.provide('baseURL', url.replace('127.0.0.1', 'localhost'));
  project.provide('fixturesURL', fixtures.url);
  return async () => {
    await app.close();
    await fixtures.close();
  };
}
