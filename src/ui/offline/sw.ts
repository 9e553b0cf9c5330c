/// <reference lib="webworker" />
// The lab's service worker (built by vite-plugin-pwa's injectManifest from this file; Workbox does
// the caching). Two jobs:
// - offline: it precaches the build (app shell, wasm binaries, the four sandbox models) under one
//   manifest, so a page and every file it loads always come from the same build; a new
//   deployment installs beside the old one and waits until the page's prompt says "reload";
// - cross-origin isolation on hosts that cannot set headers (GitHub Pages): every same-origin
//   response it serves carries COOP/COEP (the coi-serviceworker technique), so the page gets
//   SharedArrayBuffer and tfjs-wasm its threads. Cross-origin requests (the hub) go straight out.
import { clientsClaim } from 'workbox-core';
import { addPlugins, matchPrecache, precacheAndRoute } from 'workbox-precaching';
import { registerRoute } from 'workbox-routing';
import { NetworkOnly } from 'workbox-strategies';
import type { WorkboxPlugin } from 'workbox-core/types';
import { withIsolationHeaders } from './isolationHeaders';

declare const self: ServiceWorkerGlobalScope & { __WB_MANIFEST: Array<{ url: string; revision: string | null }> };

const isolate: WorkboxPlugin = {
  handlerWillRespond: async ({ response }) => withIsolationHeaders(response),
};
addPlugins([isolate]);
// The page reads its setup from the query string (a shared demo link): any query still finds the
// precached index.html, and hashed asset names make the query irrelevant for the rest.
precacheAndRoute(self.__WB_MANIFEST, { ignoreURLParametersMatching: [/.*/] });

const sameOrigin = ({ url }: { url: URL }) => url.origin === self.location.origin;
// The model loader asks HEAD before it reads a file: answer it from the precache, offline too.
registerRoute(
  ({ url, request }) => sameOrigin({ url }) && request.method === 'HEAD',
  async ({ request, url }) => {
    const hit = await matchPrecache(url.origin + url.pathname);
    if (hit) return withIsolationHeaders(new Response(null, { status: hit.status, headers: hit.headers }));
    return withIsolationHeaders(await fetch(request));
  },
  'HEAD',
);
// Everything else of this origin (an optional file the loader probes for): the network, isolated.
registerRoute(sameOrigin, new NetworkOnly({ plugins: [isolate] }));

self.addEventListener('message', (event) => {
  if ((event.data as { type?: string } | null)?.type === 'SKIP_WAITING') void self.skipWaiting();
});
// The first install controls the open page at once (its isolation reload needs a controller); an
// update waits for the prompt (above) instead.
clientsClaim();
