// The folder the site is served from (the one holding index.html, models/ and the service worker),
// as an absolute URL, from the page or from a worker.
// A build uses a relative base ('./', vite.config.ts) so one folder works at any path of any host;
// every chunk it emits, workers included, sits in <root>/assets/, so the root is the parent of this
// module's folder. Resolving against the page instead breaks in a worker (its URL is under assets/)
// and on the harness page (dev/harness/); resolving against the origin breaks under a sub-path.
// The dev server serves the tree from its root (BASE_URL '/').
export function siteRoot(): string {
  const base = import.meta.env.BASE_URL;
  return base.startsWith('/')
    ? new URL(base, self.location.href).href
    : new URL(/* @vite-ignore */ '../', import.meta.url).href;
}

/** The folder of the sandbox model `name` (public/models/<name>/). */
export function sandboxModelUrl(name: string): string {
  return new URL(`models/${name}/`, siteRoot()).href;
}
