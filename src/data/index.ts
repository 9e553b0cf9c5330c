// The data layer: the built-in sandbox world and loaders for uploaded datasets.
export * from './types';
export * from './loaders';
export * from './sandbox/index';
