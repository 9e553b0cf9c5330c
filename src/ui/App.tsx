import { useEffect } from 'react';
import { useRunStore } from '../store/runStore';
import { useSettings } from '../store/settingsStore';
import { ArenaPanel } from './arena/ArenaPanel';
import { ChartsPanel } from './charts/ChartsPanel';
import { CheckpointsPanel } from './checkpoints/CheckpointsPanel';
import { RunControls } from './controls/RunControls';
import { EXAMPLE_LABEL, sampleRun } from './demo/sampleRun';
import { ExportPanel } from './export/ExportPanel';
import { DeviceBadge } from './DeviceBadge';
import { FallbackBanner } from './FallbackBanner';
import { Panel } from './Panel';
import { connectEngine } from './engineConnection';
import { watchEngine } from './engineWatchdog';
import { TeachingPanel } from './teaching/TeachingPanel';
import { TeachingToggle } from './teaching/TeachingToggle';

export function App() {
  const backendPreference = useSettings((s) => s.backendPreference);
  const teaching = useSettings((s) => s.teaching);
  useEffect(() => {
    void connectEngine(backendPreference);
  }, [backendPreference]);
  // A worker that stops answering while a run is live is restarted and the run marked failed.
  useEffect(() => watchEngine(), []);
  // Show something the instant the lab opens: the recorded example run, clearly labelled as one.
  useEffect(() => {
    const s = useRunStore.getState();
    if (s.order.length === 0) s.importRun(sampleRun(), 'example', EXAMPLE_LABEL);
  }, []);

  return (
    <div className="app">
      <header className="app-head">
        <h1>Sparring</h1>
        <span className="tagline">adversarial safety RL, in your browser</span>
        <TeachingToggle />
        <DeviceBadge />
      </header>
      <FallbackBanner />
      {teaching && (
        <div className="teaching-section">
          <Panel id="teaching" title="Teaching mode">
            <TeachingPanel />
          </Panel>
        </div>
      )}
      <main className="grid">
        <Panel id="setup" title="Run setup">
          <RunControls />
        </Panel>
        <Panel id="arena" title="Arena">
          <ArenaPanel />
        </Panel>
        <Panel id="charts" title="Charts">
          <ChartsPanel />
        </Panel>
        <Panel id="checkpoints" title="Checkpoints">
          <CheckpointsPanel />
        </Panel>
        <Panel id="export" title="Export / import">
          <ExportPanel />
        </Panel>
      </main>
    </div>
  );
}
