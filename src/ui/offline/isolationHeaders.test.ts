import { describe, expect, it } from 'vitest';
import { withIsolationHeaders } from './isolationHeaders';

describe('withIsolationHeaders (what the service worker adds on header-less hosts)', () => {
  it('adds COOP same-origin and COEP credentialless, keeping status, headers and body', async () => {
    const res = withIsolationHeaders(
      new Response('{"a":1}', {
        status: 404,
        statusText: 'Not Found',
        headers: { 'Content-Type': 'application/json' },
      }),
    );
    expect(res.status).toBe(404);
    expect(res.statusText).toBe('Not Found');
    expect(res.headers.get('Cross-Origin-Opener-Policy')).toBe('same-origin');
    expect(res.headers.get('Cross-Origin-Embedder-Policy')).toBe('credentialless');
    expect(res.headers.get('Content-Type')).toBe('application/json');
    expect(await res.text()).toBe('{"a":1}');
  });

  it('replaces a weaker policy the host sent', () => {
    const res = withIsolationHeaders(new Response('', { headers: { 'Cross-Origin-Embedder-Policy': 'unsafe-none' } }));
    expect(res.headers.get('Cross-Origin-Embedder-Policy')).toBe('credentialless');
  });

  it('passes an opaque response through and turns a missing one into a network error', () => {
    const opaque = { status: 0, type: 'opaque' } as unknown as Response;
    expect(withIsolationHeaders(opaque)).toBe(opaque);
    expect(withIsolationHeaders(undefined).type).toBe('error');
  });
});
