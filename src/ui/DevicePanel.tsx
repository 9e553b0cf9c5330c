import { useEffect } from 'react';
import { BACKENDS, backendCost, softwareAdapterName, type BackendPreference } from '../contract/backends';
import { formatBytes as formatAnyBytes } from '../contract/formatBytes';

/** Device sizes are mostly powers of two: "128 MiB", not "128.0 MiB". */
const formatBytes = (n: number): string => formatAnyBytes(n, { trimZero: true });
import { useEngine } from '../store/engineStore';
import { useSettings } from '../store/settingsStore';
import { useSetup, type ModelFit } from '../store/setupStore';
import { deviceBudget } from './controls/fitCheck';
import { refreshEngineStatus } from './engineConnection';
import type { EngineStatus, WasmKernelStatus } from '../contract/workerApi';
import { describeWasmThreads, threadedBuildWanted, wasmThreadRequest, type WasmThreads } from '../contract/wasmThreads';

const BYTE_LIMITS = new Set(['maxStorageBufferBindingSize', 'maxBufferSize', 'maxComputeWorkgroupStorageSize']);

function subgroupsText(adapterHas: boolean, used: EngineStatus['subgroups'] | undefined): string {
  if (!adapterHas) return 'no (reductions use workgroup memory)';
  const l = used?.layout;
  if (!l) return 'yes (not requested by this backend)';
  const lanes = `${l.sizes.join('/')} lanes`;
  if (!l.contiguous) return `yes, ${lanes}, but not laid out contiguously: reductions use workgroup memory`;
  return used.active ? `yes, ${lanes}: row reductions use them` : `yes, ${lanes}: switched off`;
}

/** The learn step's planned buffers, largest first: what the planned WebGPU step allocates (src/contract/learnMemory.ts), not a per-token guess. */
function LearnPlan({ learn }: { learn: NonNullable<ModelFit['learn']> }) {
  const rows = [...learn.buffers].sort((a, b) => b.bytes * b.count - a.bytes * a.count);
  return (
    <details data-testid="device-learn-plan">
      <summary>
        learn step as planned: peak {formatBytes(learn.peakBytes)}, {learn.accumulationSteps} × {learn.microBatchRows}{' '}
        rows, activations{' '}
        {learn.recompute ? 'recomputed per layer in the backward (each layer keeps its input)' : 'kept'} (the planned
        WebGPU learning step's buffers, to the byte; tfjs, elsewhere or as its fallback, learns the whole batch in one
        pass)
      </summary>
      <table className="kv">
        <tbody>
          {rows.map((b) => (
            <tr key={b.name}>
              <th>{b.name}</th>
              <td>{b.scope}</td>
              <td>
                {b.count > 1
                  ? `${b.count} × ${formatBytes(b.bytes)} = ${formatBytes(b.bytes * b.count)}`
                  : formatBytes(b.bytes)}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </details>
  );
}

/** What the wasm backend runs (its own report), or would run here if it were chosen. */
function wasmThreadsOf(status: EngineStatus | null | undefined): WasmThreads {
  if (status?.backend.wasmThreads) return status.backend.wasmThreads;
  const env = { node: false, isolated: window.crossOriginIsolated, cores: navigator.hardwareConcurrency || 1 };
  const planned = describeWasmThreads(env, wasmThreadRequest(env), threadedBuildWanted(env));
  return { ...planned, why: `${planned.why} (if wasm runs)` };
}

function wasmKernelsLine(k: WasmKernelStatus): string {
  if (!k.ours) return "tfjs-wasm's own kernels: Sparring's SIMD kernels did not load here";
  const build = k.memory === 'shared' ? "the threaded build's shared memory" : 'its memory';
  return `tfjs-wasm + Sparring's SIMD kernels (matmul, RMSNorm, RoPE, SwiGLU, LoRA, gather, Exp) on ${build}: ${k.products.toLocaleString('en')} matmuls so far`;
}

/** Full probe results: adapter, features, limits, backend attempts, tfjs memory, backend setting. */
export function DevicePanel({ onClose }: { onClose(): void }) {
  const { status, error, preference, preferenceSource } = useEngine();
  const { backendPreference, setBackendPreference } = useSettings();
  useEffect(() => {
    void refreshEngineStatus();
    const onKey = (e: KeyboardEvent) => e.key === 'Escape' && onClose();
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [onClose]);
  const probe = status?.probe;
  const fits = useSetup((s) => s.fits);
  return (
    <div className="modal-backdrop" onClick={onClose}>
      <div
        className="modal"
        role="dialog"
        aria-label="Device"
        data-testid="device-panel"
        onClick={(e) => e.stopPropagation()}
      >
        <header className="modal-head">
          <h2>Device</h2>
          <button type="button" onClick={onClose} aria-label="Close">
            ×
          </button>
        </header>
        {error && <p className="error">{error}</p>}
        <table className="kv">
          <tbody>
            <tr>
              <th>Backend</th>
              <td data-testid="device-backend">{status?.backend.backend ?? '—'}</td>
            </tr>
            <tr>
              <th>Requested</th>
              <td>
                {preference} (from {preferenceSource === 'url' ? 'the URL' : 'the setting'})
              </td>
            </tr>
            <tr>
              <th>Why</th>
              <td data-testid="device-why">{status ? status.backend.reason : '—'}</td>
            </tr>
            <tr>
              <th>What it costs</th>
              <td data-testid="device-cost">{status ? backendCost(status.backend.backend, probe ?? null) : '—'}</td>
            </tr>
            <tr>
              <th>wasm threads</th>
              <td
                data-testid="device-wasm-threads"
                data-threads={wasmThreadsOf(status).threads}
                data-threaded={String(wasmThreadsOf(status).threaded)}
              >
                {wasmThreadsOf(status).why}
              </td>
            </tr>
            {status?.wasmKernels && (
              <tr>
                <th>wasm kernels</th>
                <td
                  data-testid="device-wasm-kernels"
                  data-ours={String(status.wasmKernels.ours)}
                  data-memory={status.wasmKernels.memory ?? ''}
                  data-products={status.wasmKernels.products}
                >
                  {wasmKernelsLine(status.wasmKernels)}
                </td>
              </tr>
            )}
            <tr>
              <th>tfjs</th>
              <td>{status?.tfjsVersion ?? '—'}</td>
            </tr>
            <tr>
              <th>Site build</th>
              <td data-testid="device-build">{__SPARRING_BUILD__}</td>
            </tr>
            {status?.backend.tuning.map((t) => (
              <tr key={t.flag}>
                <th>Tuning</th>
                <td>
                  {t.flag} = {String(t.value)} ({t.why})
                </td>
              </tr>
            ))}
            <tr>
              <th>tfjs memory</th>
              <td>{status ? `${status.memory.numTensors} tensors, ${formatBytes(status.memory.numBytes)}` : '—'}</td>
            </tr>
            {status && (
              <tr>
                <th>Memory budget</th>
                <td data-testid="device-budget">
                  {(() => {
                    const b = deviceBudget(status);
                    return `${formatBytes(Math.round(b.budgetBytes))} (${b.budgetSource}), ${formatBytes(Math.max(0, Math.round(b.budgetBytes - b.inUseBytes)))} left for new models`;
                  })()}
                </td>
              </tr>
            )}
            <tr>
              <th>WebGPU</th>
              <td>{probe ? (probe.available ? 'available' : `unavailable: ${probe.reason}`) : '—'}</td>
            </tr>
            {probe?.available && (
              <>
                <tr>
                  <th>Adapter</th>
                  <td>
                    {[probe.vendor, probe.architecture, probe.device, probe.description].filter(Boolean).join(' · ') ||
                      'unnamed'}
                    {softwareAdapterName(probe) ? ` (software: ${softwareAdapterName(probe)}, runs on the CPU)` : ''}
                  </td>
                </tr>
                <tr>
                  <th>shader-f16</th>
                  <td>{probe.features.shaderF16 ? 'yes' : 'no (f32 kernels)'}</td>
                </tr>
                <tr>
                  <th>subgroups</th>
                  <td data-testid="device-subgroups">{subgroupsText(probe.features.subgroups, status?.subgroups)}</td>
                </tr>
                <tr>
                  <th>timestamp-query</th>
                  <td>{probe.features.timestampQuery ? 'yes' : 'no'}</td>
                </tr>
                {probe.limits &&
                  Object.entries(probe.limits).map(([k, v]) => (
                    <tr key={k}>
                      <th>{k}</th>
                      <td data-testid={`limit-${k}`}>{BYTE_LIMITS.has(k) ? `${formatBytes(v)} (${v})` : v}</td>
                    </tr>
                  ))}
                <tr>
                  <th>All features</th>
                  <td className="small">{probe.featureNames.join(', ')}</td>
                </tr>
              </>
            )}
          </tbody>
        </table>
        <h3>Will the chosen models fit?</h3>
        {Object.keys(fits).length === 0 ? (
          <p className="small">
            Pick a recipe in Run setup: each of its models is checked here before it is loaded (weights + KV cache + the
            learn step's planned buffers against this adapter's limits and the memory left).
          </p>
        ) : (
          <ul className="small" data-testid="device-fits">
            {Object.entries(fits).map(([field, f]) => (
              <li
                key={field}
                data-testid={`device-fit-${field}`}
                data-state={f.state}
                className={f.state === 'too-big' ? 'error' : undefined}
              >
                <code>{field}</code> ({f.ref}):{' '}
                {f.state === 'too-big' ? 'will not fit — ' : f.state === 'fits' ? 'fits — ' : ''}
                {f.summary}
                {f.problems.map((p) => (
                  <div key={p}>{p}</div>
                ))}
                {f.learn && <LearnPlan learn={f.learn} />}
              </li>
            ))}
          </ul>
        )}
        {status && status.backend.attempts.length > 1 && (
          <>
            <h3>Backends tried</h3>
            <ul className="small">
              {status.backend.attempts.map((a) => (
                <li key={a.backend}>
                  {a.backend}: {a.error ?? 'ok'}
                </li>
              ))}
            </ul>
          </>
        )}
        <label className="field">
          Backend setting{' '}
          <select
            data-testid="backend-setting"
            value={backendPreference}
            onChange={(e) => setBackendPreference(e.target.value as BackendPreference)}
          >
            <option value="auto">auto (the fastest here)</option>
            {BACKENDS.map((b) => (
              <option key={b} value={b}>
                {b}
              </option>
            ))}
          </select>
        </label>
        <p className="small">
          A <code>?backend=</code> URL parameter overrides the setting for this tab.
        </p>
      </div>
    </div>
  );
}
