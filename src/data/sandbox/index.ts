// The built-in synthetic safety world: seeded generators of harmful goals (Llama Guard 3
// categories, redacted payloads), verifiable benign tasks, attack tactics, QA stories, and the
// dataset builders the recipes train on. See README.md in this folder for the design.
export * from './rng';
export * from './markers';
export * from './hazards';
export * from './benign';
export * from './responses';
export * from './tactics';
export * from './qa';
export * from './datasets';
export * from './vulnerability';
export * from './split';
