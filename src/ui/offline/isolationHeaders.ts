// The cross-origin isolation headers the service worker adds (vite.config.ts sends the same from
// the dev and preview servers). Kept apart from sw.ts so a unit test can read what it adds.
export const ISOLATION_HEADERS: Readonly<Record<string, string>> = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'credentialless',
};

/** `response` with COOP/COEP set; an opaque response (status 0) cannot be rebuilt and passes as is. */
export function withIsolationHeaders(response: Response | undefined | null): Response {
  if (!response) return Response.error();
  if (response.status === 0) return response;
  const headers = new Headers(response.headers);
  for (const [k, v] of Object.entries(ISOLATION_HEADERS)) headers.set(k, v);
  return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
}
