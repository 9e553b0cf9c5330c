// The storage layer: IndexedDB checkpoints and run logs, PEFT adapter and merged-weight export.
// Imports only src/model (pure-TS parts and types) and the StepReport types; never tfjs at runtime.
export * from './kv';
export * from './checkpoints';
export * from './runs';
export * from './peft';
export * from './datasets';
