// The RL layer: advantages, KL, policy/value losses, aggregation, reward shaping,
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
export * from './dynamicSampling';
export * from './optim';
// The learning step shared by recipes: policy/reference statistics on prompt + response, one
// optimiser update (learnStep) and a minimal generic RL iteration (rlStep).
export * from './policy';
export * from './trainer';
export * from './loop';
// The learning step's path on WebGPU: the planned pass (default) or tfjs op by op.
export { type LearnPath } from './plannedLearn';
