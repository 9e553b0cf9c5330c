import { useState } from 'react';
import { softwareAdapterName } from '../contract/backends';
import { useEngine } from '../store/engineStore';
import { DevicePanel } from './DevicePanel';

/** Header badge: the backend tfjs runs on and the adapter found; click for the full table. */
export function DeviceBadge() {
  const { phase, status, error } = useEngine();
  const [open, setOpen] = useState(false);
  let label = 'starting engine…';
  let tone = 'pending';
  if (phase === 'error') {
    label = 'engine failed';
    tone = 'bad';
  } else if (status) {
    const p = status.probe;
    const adapter = [p.vendor, p.architecture].filter(Boolean).join(' · ') || 'WebGPU adapter';
    const software = softwareAdapterName(p);
    const backend = status.backend.backend;
    // Never "webgpu · <adapter>" alone for a software adapter: that reads as a GPU.
    label =
      backend === 'webgpu'
        ? software
          ? `webgpu · ${software} (software, slow)`
          : `webgpu · ${adapter}`
        : software
          ? `${backend} · no hardware GPU`
          : `${backend} · fallback`;
    tone = status.backend.fellBack ? 'warn' : 'good';
  }
  return (
    <>
      <button
        type="button"
        className={`badge badge-${tone}`}
        data-testid="device-badge"
        data-backend={status?.backend.backend ?? ''}
        title={error ?? 'Device and backend details'}
        onClick={() => setOpen(true)}
      >
        {label}
      </button>
      {open && <DevicePanel onClose={() => setOpen(false)} />}
    </>
  );
}
