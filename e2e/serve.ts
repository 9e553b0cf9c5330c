// Global setup: serve the built app (dist/) on a free localhost port for the whole run.
import { existsSync } from 'node:fs';
import { preview } from 'vite';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    baseURL: string;
  }
}

export default async function setup(project: TestProject) {
  if (!existsSync('dist/index.html')) throw new Error('dist/index.html is missing: run `vite build` before the e2e tests');
  const server = await preview({ preview: { host: '127.0.0.1', port: 4173, strictPort: false }, logLevel: 'warn' });
  const url = server.resolvedUrls?.local[0];
  if (!url) throw new Error('vite preview did not report a local URL');
  project.provide('baseURL', url.replace('127.0.0.1', 'localhost'));
  return async () => {
    await server.close();
  };
}
