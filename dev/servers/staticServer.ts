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
