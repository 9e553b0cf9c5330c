// A model field of the setup form: the reference itself (a text box anyone can type into) and a
// picker that writes it: a sandbox model, a Hugging Face hub id, a URL folder, or a local folder.
// Below it, whether the model will fit this device (estimated from its config.json before loading).
import { useEffect, useState } from 'react';
import { engine, useEngine } from '../../store/engineStore';
import { useSetup } from '../../store/setupStore';
import { readModelRef, SANDBOX_MODELS, writeModelRef, type ModelChoice } from './fieldKinds';
import { checkModelFit, deviceBudget } from './fitCheck';
import { cacheLocalFolder } from './localFolders';
import { isWeightFormat } from '../../contract/weightFormat';
import { weightsFieldOf } from '../../contract/weightFields';
import { modelRefError } from '../../contract/modelRef';

type Mode = ModelChoice['mode'];
const MODES: [Mode, string][] = [
  ['sandbox', 'sandbox model'],
  ['hub', 'Hugging Face hub id'],
  ['url', 'URL of a model folder'],
  ['local', 'local folder'],
];

interface Props {
  name: string;
  value: string;
  invalid: boolean;
  disabled: boolean;
  /** The recipe's current form values (the rollout shape of the fit estimate). */
  config: Record<string, unknown>;
  onChange(v: string): void;
}

function useFitCheck(name: string, ref: string, config: Record<string, unknown>) {
  const status = useEngine((s) => s.status);
  const setFit = useSetup((s) => s.setFit);
  const key = JSON.stringify(config);
  // Re-check when what the verdict depends on changes, not on every status refresh.
  const budgetKey = status ? JSON.stringify(deviceBudget(status)) : '';
  useEffect(() => {
    const st = useEngine.getState().status;
    // An empty optional model (a guard left off) has nothing to size.
    if (!st || ref.trim() === '' || modelRefError(ref) !== null) {
      setFit(name, null);
      return;
    }
    let live = true;
    if (useSetup.getState().fits[name]?.ref !== ref)
      setFit(name, { ref, state: 'checking', summary: 'checking the size…', problems: [], notes: [] });
    const t = setTimeout(() => {
      const cfg = JSON.parse(key) as Record<string, unknown>;
      const w = cfg[weightsFieldOf(name)];
      void checkModelFit(ref, cfg, st, isWeightFormat(w) ? w : 'f32', (m, d) => engine().promptTokens(m, d)).then(
        (fit) => live && setFit(name, fit),
      );
    }, 250);
    return () => {
      live = false;
      clearTimeout(t);
    };
  }, [name, ref, key, budgetKey, setFit]);
  return useSetup((s) => s.fits[name]);
}

export function ModelPicker({ name, value, invalid, disabled, config, onChange }: Props) {
  const choice = readModelRef(value);
  const [modeOverride, setModeOverride] = useState<Mode | null>(null);
  const mode = modeOverride ?? choice.mode;
  const [hubDraft, setHubDraft] = useState(choice.mode === 'hub' ? choice.id : '');
  const [pickError, setPickError] = useState<string | null>(null);
  const fit = useFitCheck(name, value, config);

  const pickMode = (m: Mode) => {
    setPickError(null);
    if (m === 'sandbox') {
      setModeOverride(null);
      onChange(
        SANDBOX_MODELS.includes(value as never) ? value : (SANDBOX_MODELS.find((s) => s === name) ?? SANDBOX_MODELS[0]),
      );
    } else setModeOverride(m);
  };
  const typeHub = (id: string) => {
    setHubDraft(id);
    try {
      onChange(writeModelRef({ mode: 'hub', id: id.trim(), revision: 'main' }));
      setPickError(null);
      setModeOverride(null);
    } catch {
      // The field holds what was typed, so Start refuses it (marked as every invalid field is)
      // instead of running the last valid id, which the box no longer shows.
      onChange(id);
    }
  };
  const pickFolder = (files: FileList | null) => {
    if (!files || files.length === 0) return;
    setPickError(null);
    cacheLocalFolder(files).then(
      ({ url }) => {
        onChange(url);
        setModeOverride(null);
      },
      (e: Error) => setPickError(e.message),
    );
  };

  return (
    <div className="model-picker" data-testid={`model-picker-${name}`}>
      <div className="model-picker-row">
        <select
          data-testid={`model-mode-${name}`}
          value={mode}
          disabled={disabled}
          aria-label={`${name}: where the model comes from`}
          onChange={(e) => pickMode(e.target.value as Mode)}
        >
          {MODES.map(([m, label]) => (
            <option key={m} value={m}>
              {label}
            </option>
          ))}
        </select>
        {mode === 'sandbox' && (
          <select
            data-testid={`model-sandbox-${name}`}
            value={choice.mode === 'sandbox' ? choice.name : ''}
            disabled={disabled}
            aria-label={`${name}: sandbox model`}
            onChange={(e) => onChange(e.target.value)}
          >
            {choice.mode !== 'sandbox' && <option value="">—</option>}
            {SANDBOX_MODELS.map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        )}
        {mode === 'hub' && (
          <input
            data-testid={`model-hub-${name}`}
            type="text"
            value={hubDraft}
            disabled={disabled}
            placeholder="HuggingFaceTB/SmolLM2-135M-Instruct"
            aria-label={`${name}: hub model id`}
            onChange={(e) => typeHub(e.target.value)}
          />
        )}
        {mode === 'local' && choice.mode === 'local' && (
          <span className="small" data-testid={`model-local-name-${name}`}>
            {choice.folder}
          </span>
        )}
        {mode === 'local' && (
          <input
            data-testid={`model-local-${name}`}
            type="file"
            disabled={disabled}
            aria-label={`${name}: local model folder`}
            {...{ webkitdirectory: '', directory: '' }}
            onChange={(e) => pickFolder(e.target.files)}
          />
        )}
      </div>
      <input
        id={`field-${name}`}
        data-testid={`field-${name}`}
        aria-invalid={invalid}
        aria-describedby={`field-${name}-help`}
        type="text"
        value={value}
        disabled={disabled}
        onChange={(e) => {
          setModeOverride(null);
          onChange(e.target.value);
        }}
      />
      {pickError && (
        <div className="field-error error small" data-testid={`model-pick-error-${name}`}>
          {pickError}
        </div>
      )}
      {fit && (
        <div
          className={`model-fit model-fit-${fit.state}`}
          data-testid={`fit-${name}`}
          data-state={fit.state}
          role={fit.state === 'too-big' ? 'alert' : undefined}
        >
          {fit.state === 'too-big' ? '⚠ will not fit: ' : fit.state === 'fits' ? '✓ fits: ' : ''}
          {fit.summary}
          {fit.problems.map((p) => (
            <div key={p} className="small">
              {p}
            </div>
          ))}
          {fit.notes.map((n) => (
            <div key={n} className="small muted">
              {n}
            </div>
          ))}
        </div>
      )}
    </div>
  );
}
