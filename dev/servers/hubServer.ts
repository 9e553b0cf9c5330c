// A local stand-in for the Hugging Face hub: serves model folders on disk under the hub's URL
// layout, `/{owner}/{name}/resolve/{revision}/{file}` (GET and HEAD, 404 "Entry not found" for
// anything else), so the real hub loading code (model/hub.ts) runs against it in tests and from
// the CLI (HF_ENDPOINT=<url>).
import type { Server } from 'node:http';
import { fileUnder, serveFiles } from './staticServer';

export interface HubServer {
  server: Server;
  /** The endpoint to pass as hubSource's `endpoint` (no trailing slash). */
  endpoint: string;
  /** Every request seen: "METHOD path". */
  requests: string[];
  close(): Promise<void>;
}

/** `repos`: "owner/name" -> folder. Only revision "main" exists. */
export async function serveHubRepos(repos: Record<string, string>): Promise<HubServer> {
  const requests: string[] = [];
  const locate = (pathname: string): string | null => {
    const m = /^\/([^/]+)\/([^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(pathname);
    const dir = m && m[3] === 'main' ? repos[`${decodeURIComponent(m[1])}/${decodeURIComponent(m[2])}`] : undefined;
    return dir && m ? fileUnder(dir, decodeURIComponent(m[4])) : null;
  };
  const s = await serveFiles(locate, 'Entry not found', (line) => requests.push(line));
  return { server: s.server, endpoint: `http://127.0.0.1:${s.port}`, requests, close: s.close };
}
