/// <reference lib="webworker" />
// The harness worker: the lab's own worker API plus the checks, benchmarks and A/B switches, for
// the browser tests and the benchmarks. Only the harness page (dev/harness/index.html) starts it.
import * as Comlink from 'comlink';
import { engineApi } from '../../src/worker/engineApi';
import type { HarnessApi } from './harnessApi';
import { harnessMethods } from './harnessMethods';

const api: HarnessApi = { ...engineApi, ...harnessMethods };

Comlink.expose(api);
