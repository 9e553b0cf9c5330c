// A read-only static file server on localhost for a model folder tree, serving files the way a
// hub or CDN would (with CORS), for the browser tests and the benchmark.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { resolve, sep } from 'node:path';

/** The file under `root` a request path names, or null when it escapes root or is no file. */
export function fileUnder(root: string, rel: string): string | null {
  const base = resolve(root);
  const path = resolve(base, rel.replace(/^\/+/, ''));
  return path.startsWith(base + sep) && existsSync(path) && statSync(path).isFile() ? path : null;
}

/**
 * Serves files with CORS on a free localhost port: `locate` maps a request's decoded path to a
 * file (null: 404 with `notFound`); HEAD gets the headers only.
 */
export function serveFiles(
  locate: (pathname: string) => string | null,
  notFound = 'not found',
  onRequest?: (line: string) => void,
): Promise<{ server: Server; port: number; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    onRequest?.(`${req.method} ${req.url}`);
    res.setHeader('Access-Control-Allow-Origin', '*');
    const path = locate(new URL(req.url ?? '/', 'http://x').pathname);
    if (!path) {
      res.writeHead(404).end(notFound);
      return;
    }
    const body = readFileSync(path);
    res.writeHead(200, { 'Content-Length': body.length, 'Content-Type': 'application/octet-stream' });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  return new Promise((ok) =>
    server.listen(0, '127.0.0.1', () => {
      const addr = server.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      ok({ server, port, close: () => new Promise<void>((done) => server.close(() => done())) });
    }),
  );
}

export async function serveFolder(dir: string): Promise<{ server: Server; url: string; close(): Promise<void> }> {
  const s = await serveFiles((p) => fileUnder(dir, decodeURIComponent(p)));
  return { server: s.server, url: `http://localhost:${s.port}/`, close: s.close };
}

const MIME: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
  '.wasm': 'application/wasm',
};

/**
 * A plain static host, the way GitHub Pages or `python3 -m http.server` serves a folder: `dir` at
 * the sub-path `prefix` ('/a/b/c/'), index.html for a folder, a content type by extension, and
 * no other header (no COOP/COEP, no CORS). `port` 0 picks a free one; pass the old port to bring a
 * site back at the same origin. `onRequest` sees each request line.
 */
export function serveSite(
  dir: string,
  prefix: string,
  port = 0,
  onRequest?: (line: string) => void,
): Promise<{ port: number; url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    onRequest?.(`${req.method} ${req.url}`);
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    const file = path.startsWith(prefix)
      ? fileUnder(dir, path.slice(prefix.length).replace(/(^|\/)$/, '$1index.html'))
      : null;
    if (!file) {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found');
      return;
    }
    const body = readFileSync(file);
    const ext = file.slice(file.lastIndexOf('.'));
    res.writeHead(200, { 'Content-Length': body.length, 'Content-Type': MIME[ext] ?? 'application/octet-stream' });
    res.end(req.method === 'HEAD' ? undefined : body);
  });
  return new Promise((ok, fail) => {
    server.once('error', fail);
    server.listen(port, '127.0.0.1', () => {
      const addr = server.address();
      const p = typeof addr === 'object' && addr ? addr.port : 0;
      ok({
        port: p,
        url: `http://localhost:${p}${prefix}`,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}
