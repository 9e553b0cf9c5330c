// Header switch for teaching mode (remembered across reloads).
import { useSettings } from '../../store/settingsStore';

export function TeachingToggle() {
  const teaching = useSettings((s) => s.teaching);
  const setTeaching = useSettings((s) => s.setTeaching);
  return (
    <button
      type="button"
      className="badge teaching-toggle"
      data-testid="teaching-toggle"
      aria-pressed={teaching}
      title="Explanations of each recipe, its reward with live values, and a one-click guided demo"
      onClick={() => setTeaching(!teaching)}
    >
      Teaching mode{teaching ? ': on' : ''}
    </button>
  );
}
