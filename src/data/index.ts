// The data layer: the built-in sandbox world and loaders for uploaded datasets.
export * from '../contract/chat';
export * from '../contract/datasetLoaders';
export * from './sandbox/index';
