// The engine worker's API for the checkpoint and export panels (one clear error when it is not up).
import type { EngineApi } from '../../contract/workerApi';

export function engineApi(): EngineApi {
  const e = window.sparring?.engine;
  if (!e) throw new Error('the engine worker is not running');
  return e as unknown as EngineApi;
}
