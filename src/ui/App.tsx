import { useEffect } from 'react';
import { useSettings } from '../store/settingsStore';
import { DeviceBadge } from './DeviceBadge';
import { FallbackBanner } from './FallbackBanner';
import { Panel } from './Panel';
import { connectEngine } from './engineConnection';

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
          <p className="empty">Attacker prompts, defender answers and the judge's verdicts will stream here, token by token, coloured by entropy.</p>
        </Panel>
        <Panel id="charts" title="Charts">
          <p className="empty">Reward, attack success rate, KL, entropy and losses against step.</p>
        </Panel>
        <Panel id="checkpoints" title="Checkpoints">
          <p className="empty">Saved runs and adapters (IndexedDB) will be listed here.</p>
        </Panel>
      </main>
    </div>
  );
}
