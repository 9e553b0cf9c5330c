// Registers the service worker (src/ui/offline/sw.ts) of a deployed build, with workbox-window.
// - A new deployment's worker waits; `onUpdate` gets the function that swaps it in and reloads
//   (the page's "a new version is ready: reload" prompt), so a page never mixes two builds.
// - On a host that sends no COOP/COEP, the first visit is not cross-origin isolated: once the worker
//   controls the page (it claims it at once), one reload serves the page again through it, with
//   the headers. A session flag keeps a browser that ignores them from reloading in a loop.
import { Workbox } from 'workbox-window';
import { siteRoot } from '../../contract/siteRoot';

const RELOADED_KEY = 'sparring-isolation-reload';
let registered = false;

export function registerOffline(onUpdate: (apply: () => void) => void): void {
  // The dev server and the harness build (browser tests) run without it (vite.config.ts).
  if (!import.meta.env.PROD || import.meta.env.MODE === 'harness' || !('serviceWorker' in navigator) || registered)
    return;
  registered = true;
  const root = siteRoot();
  const wb = new Workbox(new URL('sw.js', root).href, { scope: root });
  let applying = false;
  const apply = () => {
    applying = true;
    wb.messageSkipWaiting();
  };
  wb.addEventListener('waiting', () => onUpdate(apply));
  wb.addEventListener('controlling', (e) => {
    // This tab asked for the new version: load it. Another tab's update took this one over: ask.
    if (applying) window.location.reload();
    else if (e.isUpdate || e.isExternal) onUpdate(() => window.location.reload());
    else if (!window.crossOriginIsolated && !sessionStorage.getItem(RELOADED_KEY)) {
      sessionStorage.setItem(RELOADED_KEY, '1');
      window.location.reload();
    }
  });
  void wb.register().catch((e: unknown) => console.warn(`service worker not registered: ${String(e)}`));
}
