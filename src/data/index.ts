// The data layer: the built-in sandbox world and loaders for uploaded datasets.
export * from '../contract/chat.ts';
export * from '../contract/datasetLoaders.ts';
export * from './sandbox/index';
