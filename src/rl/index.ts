// The RL formula layer: advantages, KL, policy/value losses, aggregation, reward shaping,
// repetition, turn aggregation, min-max scheduling, LR schedules and optimiser helpers.
// Every formula and default is listed, with its source, in shared/RL-REFERENCE.md.
export * from './types';
export * from './stats';
export * from './placement';
export * from './advantages';
export * from './kl';
export * from './aggregate';
export * from './policyLoss';
export * from './tokenNoiser';
export * from './repetition';
export * from './rewards';
export * from './turns';
export * from './minmax';
export * from './schedule';
export * from './optim';
