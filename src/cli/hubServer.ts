// A local stand-in for the Hugging Face hub: serves model folders on disk under the hub's URL
// layout, `/{owner}/{name}/resolve/{revision}/{file}` (GET and HEAD, 404 "Entry not found" for
// anything else), so the real hub loading code (model/hub.ts) runs against it in tests and from
// the CLI (HF_ENDPOINT=<url>).
import { existsSync, readFileSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { resolve, sep } from 'node:path';

export interface HubServer {
  server: Server;
  /** The endpoint to pass as hubSource's `endpoint` (no trailing slash). */
  endpoint: string;
  /** Every request seen: "METHOD path". */
  requests: string[];
  close(): Promise<void>;
}

/** `repos`: "owner/name" -> folder. Only revision "main" exists. */
export function serveHubRepos(repos: Record<string, string>): Promise<HubServer> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    res.setHeader('Access-Control-Allow-Origin', '*');
    const m = /^\/([^/]+)\/([^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(new URL(req.url ?? '/', 'http://x').pathname);
    const dir = m && m[3] === 'main' ? repos[`${decodeURIComponent(m[1])}/${decodeURIComponent(m[2])}`] : undefined;
    const root = dir ? resolve(dir) : '';
    const path = dir && m ? resolve(root, decodeURIComponent(m[4])) : '';
    if (!dir || !path.startsWith(root + sep) || !existsSync(path) || !statSync(path).isFile()) {
      res.writeHead(404).end('Entry not found');
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
      ok({ server, endpoint: `http://127.0.0.1:${port}`, requests, close: () => new Promise<void>((done) => server.close(() => done())) });
    }),
  );
}
