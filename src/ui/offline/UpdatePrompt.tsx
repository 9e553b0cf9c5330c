import { useEffect, useState } from 'react';
import { registerOffline } from './registerOffline';

/** The "a new version is ready: reload" bar, shown once a new deployment has been downloaded. */
export function UpdatePrompt() {
  const [apply, setApply] = useState<(() => void) | null>(null);
  useEffect(() => {
    registerOffline((fn) => setApply(() => fn));
  }, []);
  if (!apply) return null;
  return (
    <div className="banner banner-warn" role="status" data-testid="update-prompt">
      A new version is ready:{' '}
      <button type="button" onClick={apply} data-testid="update-reload">
        reload
      </button>
    </div>
  );
}
