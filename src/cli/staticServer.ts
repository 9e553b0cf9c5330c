// A read-only static file server on localhost for a model folder tree, serving files the way a
// hub or CDN would (with CORS), for the browser tests and the benchmark.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { resolve, sep } from 'node:path';

export function serveFolder(dir: string): Promise<{ server: Server; url: string; close(): Promise<void> }> {
  const root = resolve(dir);
  const server = createServer((req, res) => {
    const path = resolve(root, decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname).replace(/^\/+/, ''));
    res.setHeader('Access-Control-Allow-Origin', '*');
    if (!path.startsWith(root + sep) || !existsSync(path) || !statSync(path).isFile()) {
      res.writeHead(404).end('not found');
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
      ok({ server, url: `http://localhost:${port}/`, close: () => new Promise<void>((done) => server.close(() => done())) });
    }),
  );
}
