import { useEffect } from 'react';
import { useRunStore } from '../store/runStore';
import { useSettings } from '../store/settingsStore';
import { ArenaPanel } from './arena/ArenaPanel';
import { ChartsPanel } from './charts/ChartsPanel';
import { EXAMPLE_LABEL, sampleRun } from './demo/sampleRun';
import { DeviceBadge } from './DeviceBadge';
import { FallbackBanner } from './FallbackBanner';
import { Panel } from './Panel';
import { connectEngine } from './engineConnection';
import { installRunHandle } from './runHandle';

export const RECIPES = [
  ['arena', 'attacker and defender co-trained, live'],
  ['redteam', 'GRPO red-teaming of the defender (Tinker red-team trainer)'],
  ['attack', 'RL on the attacker against a frozen defender'],
  ['defend', 'defender RL against an attacker (MTSA-RLVR)'],
  ['attacker-sft', 'attacker supervised fine-tuning (MTSA phase 1)'],
  ['tokenbuncher', 'entropy-as-reward defence (Token Buncher)'],
  ['multiturn', 'multi-turn escalation (SaFeR-Steer)'],
  ['minmax', 'monitor vs policy min-max game'],
  ['rlhf', 'single-player RLHF baseline'],
] as const;

export function App() {
  const backendPreference = useSettings((s) => s.backendPreference);
  useEffect(() => {
    void connectEngine(backendPreference);
  }, [backendPreference]);
  // Show something the instant the lab opens: the recorded example run, clearly labelled as one.
  useEffect(() => {
    installRunHandle();
    const s = useRunStore.getState();
    if (s.order.length === 0) s.importRun(sampleRun(), 'example', EXAMPLE_LABEL);
  }, []);

  return (
    <div className="app">
      <header className="app-head">
        <h1>Sparring</h1>
        <span className="tagline">adversarial safety RL, in your browser</span>
        <DeviceBadge />
      </header>
      <FallbackBanner />
      <main className="grid">
        <Panel id="setup" title="Run setup">
          <p className="empty">Recipes arrive with the training engine. Planned:</p>
          <ul className="recipes">
            {RECIPES.map(([name, what]) => (
              <li key={name}><code>{name}</code> — {what}</li>
            ))}
          </ul>
        </Panel>
        <Panel id="arena" title="Arena">
          <ArenaPanel />
        </Panel>
        <Panel id="charts" title="Charts">
          <ChartsPanel />
        </Panel>
        <Panel id="checkpoints" title="Checkpoints">
          <p className="empty">Saved runs and adapters (IndexedDB) will be listed here.</p>
        </Panel>
      </main>
    </div>
  );
}
