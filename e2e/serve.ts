// Global setup: serve the built app (dist/) on a free localhost port for the whole run, and the
// golden model fixtures of ../shared/fixtures on another, the way a hub or a CDN would serve a
// model folder (the app loads them through its ordinary URL model source).
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { resolve, sep } from 'node:path';
import { preview } from 'vite';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    baseURL: string;
    fixturesURL: string;
  }
}

export const FIXTURES_DIR = resolve('..', 'shared', 'fixtures');

function serveFolder(root: string): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const path = resolve(root, decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname).replace(/^\/+/, ''));
    // CORS: the app on another port fetches these, as it fetches from the hub.
    res.setHeader('Access-Control-Allow-Origin', '*');
    if (!path.startsWith(root + sep) || !existsSync(path) || !statSync(path).isFile()) {
      res.writeHead(404).end('not found');
      return;
    }
    const body = readFileSync(path);
    res.writeHead(200, { 'Content-Length': body.length, 'Content-Type': 'application/octet-stream' });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  return new Promise((ok) => server.listen(0, '127.0.0.1', () => {
    const addr = server.address();
    ok({ server, url: `http://localhost:${typeof addr === 'object' && addr ? addr.port : 0}/` });
  }));
}

export default async function setup(project: TestProject) {
  if (!existsSync('dist/index.html')) throw new Error('dist/index.html is missing: run `vite build` before the e2e tests');
  if (!existsSync(FIXTURES_DIR)) throw new Error(`${FIXTURES_DIR} is missing: the shared fixtures sit beside the repository`);
  const app = await preview({ preview: { host: '127.0.0.1', port: 4173, strictPort: false }, logLevel: 'warn' });
  const url = app.resolvedUrls?.local[0];
  if (!url) throw new Error('vite preview did not report a local URL');
  const fixtures = await serveFolder(FIXTURES_DIR);
  project.provide('baseURL', url.replace('127.0.0.1', 'localhost'));
  project.provide('fixturesURL', fixtures.url);
  return async () => {
    await app.close();
    await new Promise((ok) => fixtures.server.close(ok));
  };
}
