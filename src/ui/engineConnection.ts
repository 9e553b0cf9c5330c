// Owns the one engine worker of this tab: starts it, restarts it when the backend setting
// changes, and mirrors its status into the engine store (which holds the worker's handle).
import { parseBackendOverride, type BackendPreference } from '../contract/backends';
import { useEngine } from '../store/engineStore';

export function resolvePreference(setting: BackendPreference): {
  preference: BackendPreference;
  source: 'url' | 'setting';
  urlError: string | null;
} {
  try {
    const fromUrl = parseBackendOverride(window.location.search);
    if (fromUrl) return { preference: fromUrl, source: 'url', urlError: null };
  } catch (err) {
    return { preference: setting, source: 'setting', urlError: (err as Error).message };
  }
  return { preference: setting, source: 'setting', urlError: null };
}

/** The hub mirror the page was opened with (`?hub=<endpoint>`): the worker loads hub ids from it, and the fit check reads their config there. */
export function pageHubEndpoint(): string | undefined {
  return new URLSearchParams(window.location.search).get('hub') ?? undefined;
}

export async function connectEngine(setting: BackendPreference): Promise<void> {
  const store = useEngine.getState();
  const { preference, source, urlError } = resolvePreference(setting);
  store.client?.terminate();
  const client = store.startWorker();
  store.setClient(client);
  store.setStarting(preference, source);
  store.setNotice(urlError ? `${urlError}: running on the saved setting (${setting}) instead.` : null);
  try {
    // `?hub=<endpoint>`: hub ids load from a mirror of the hub (as HF_ENDPOINT does for the CLI).
    const hub = pageHubEndpoint();
    if (hub) await client.api.setHubEndpoint(hub);
    const status = await client.api.init(preference);
    useEngine.getState().setReady(status);
  } catch (err) {
    useEngine.getState().setError((err as Error).message);
  }
}

export async function refreshEngineStatus(): Promise<void> {
  const client = useEngine.getState().client;
  if (!client) return;
  useEngine.getState().setReady(await client.api.status());
}
