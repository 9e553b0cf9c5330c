// A Vite plugin that writes `_headers` into the build: the file Netlify and Cloudflare Pages read for
// response headers (a path pattern, then `Name: value` lines indented by two spaces). It sets the
// cross-origin isolation headers on every file, from the same record the dev and preview servers and
// the service worker use, so a host that reads it needs neither the service worker's extra reload
// nor anything from the person deploying (docs/guides/deploy.md).
import type { Plugin } from 'vite';

export const HEADERS_FILE = '_headers';

/** The `_headers` text that sets `headers` on every path of the site. */
export function headersFileText(headers: Readonly<Record<string, string>>): string {
  return ['/*', ...Object.entries(headers).map(([k, v]) => `  ${k}: ${v}`), ''].join('\n');
}

export function headersFile(headers: Readonly<Record<string, string>>): Plugin {
  return {
    name: 'sparring:headers-file',
    apply: 'build',
    generateBundle() {
      this.emitFile({ type: 'asset', fileName: HEADERS_FILE, source: headersFileText(headers) });
    },
  };
}
