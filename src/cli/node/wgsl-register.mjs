// Lets Node (tsx) import WGSL sources the way Vite does (`import src from './x.wgsl?raw'`), so the
// CLI and benchmarks run the same engine modules as the browser.
import { register } from 'node:module';

register('./wgsl-hooks.mjs', import.meta.url);
