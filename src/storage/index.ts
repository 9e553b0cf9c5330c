// The storage layer: IndexedDB checkpoints and run logs, PEFT adapter and merged-weight export.
// Imports only src/model (pure-TS parts and types) and the StepReport types; never tfjs at runtime.
export * from './kv.ts';
export * from './checkpoints.ts';
export * from './runs.ts';
export * from './peft.ts';
export * from './datasets.ts';
