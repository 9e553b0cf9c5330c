/// <reference lib="webworker" />
// The lab's engine worker: the product API (engineApi.ts) exposed to the page with comlink.
import * as Comlink from 'comlink';
import { engineApi } from './engineApi';

Comlink.expose(engineApi);
