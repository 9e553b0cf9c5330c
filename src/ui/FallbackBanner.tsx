import { useEngine } from '../store/engineStore';

/** Says, in one line, when the lab runs on something slower than WebGPU on a GPU, why, and what that costs. */
export function FallbackBanner() {
  const { phase, status, error, notice } = useEngine();
  return (
    <>
      {phase === 'error' && (
        <div className="banner banner-bad" role="alert">
          The engine could not start: {error}
        </div>
      )}
      {status?.backend.banner && (
        <div className="banner banner-warn" role="status" data-testid="fallback-banner">
          {status.backend.banner}
        </div>
      )}
      {notice && (
        <div className="banner banner-bad" role="alert" data-testid="engine-notice">
          {notice}
        </div>
      )}
    </>
  );
}
