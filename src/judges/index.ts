// Reward sources behind one interface (types.ts): the verifiable rules judge and the HTTP scorer
// here; the classifier and LLM-as-guard judges implement the same Judge.
export * from './types';
export * from './rules';
export * from './http';
export * from './metrics';
export * from './llmGuard';
