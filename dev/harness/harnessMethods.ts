// The harness's own worker methods: kernel checks against the CPU references, learning-step
// checks, benchmarks and the A/B switches. Each switch is one line over the engine's setting.
import * as Comlink from 'comlink';
import * as tf from '@tensorflow/tfjs';
import {
  customKernelsActive,
  subgroupStatus,
  tokenStats,
  tokenStatsReduceKey,
  sampleTokens,
  decodeAttention,
  decodeAttentionFused,
  attentionCaseData,
  rmsNorm,
  rope,
  NORM_EPS,
  normCaseData,
  swiglu,
  kvWrite,
  blockCaseData,
  setEngineOptions,
  setWasmKernels,
  wasmKernelStatus,
} from '../../src/engine/index';
import { measureRoofline } from '../bench/roofline';
import { requireInit } from '../../src/worker/engineApi';
import { seededLogits, seededUpstream } from '../test/seededLogits';
import { quantCaseData } from '../test/quantCase';
import { quantCaseWeight } from '../test/quantReference';
import { benchDecodePaths, benchRollouts } from '../bench/decodeBench';
import { benchGrpoStepPaths, benchLearnPaths, learnCheck } from '../bench/learnBench';
import { benchKernels, benchWholeSteps, rlSmokeStep } from '../bench/kernelBench';
import { learnGradCheck, learnRunCheck } from './learnGradCheck';
import { learnCheckpointCheck } from './learnCheckpointCheck';
import {
  benchNamedModel,
  namedModel,
  profileDecodeStep,
  loadNamedModel,
  loadSyntheticNamedModel,
  modelGenerate,
  modelLogits,
  unloadNamedModel,
} from './models';
import type { HarnessApi, KernelCheck, KernelGradCheck } from './harnessApi';
import type { EngineApi } from '../../src/contract/workerApi';

export const harnessMethods: Omit<HarnessApi, keyof EngineApi> = {
  async ping(nonce) {
    return { nonce, at: performance.now(), inWorker: typeof WorkerGlobalScope !== 'undefined' };
  },

  async hangFor(ms, holdRunStore = false) {
    if (holdRunStore) {
      // The request's success event can only be delivered to this thread, so the transaction (and
      // the store's write lock) stays open for as long as the thread is blocked.
      const db = await new Promise<IDBDatabase>((res, rej) => {
        const open = indexedDB.open('sparring-runs');
        open.onsuccess = () => res(open.result);
        open.onerror = () => rej(open.error);
      });
      db.transaction('kv', 'readwrite').objectStore('kv').put(Date.now(), 'hang-probe');
    }
    const end = performance.now() + ms;
    while (performance.now() < end) {
      // busy: nothing else runs on this thread meanwhile
    }
  },

  async tokenStatsCheck(rows, vocab, seed, withRef = false): Promise<KernelCheck> {
    requireInit();
    const c = seededLogits(rows, vocab, seed);
    const logits = tf.tensor2d(c.logits, [rows, vocab]);
    const ids = tf.tensor1d(c.ids, 'int32');
    const ref = withRef ? tf.tensor2d(seededLogits(rows, vocab, seed + 1).logits, [rows, vocab]) : undefined;
    const t0 = performance.now();
    const out = tokenStats(logits, ids, ref);
    const values = await out.data();
    const ms = performance.now() - t0;
    tf.dispose([logits, ids, out, ...(ref ? [ref] : [])]);
    const cols = withRef ? 3 : 2;
    const logp: number[] = [];
    const entropy: number[] = [];
    const refLogp: number[] = [];
    for (let r = 0; r < rows; r++) {
      logp.push(values[r * cols]);
      entropy.push(values[r * cols + 1]);
      if (withRef) refLogp.push(values[r * cols + 2]);
    }
    const wgsl = customKernelsActive();
    return {
      backend: tf.getBackend(),
      path: wgsl ? 'wgsl' : 'stock',
      reduce: wgsl ? tokenStatsReduceKey(vocab) : null,
      rows,
      vocab,
      seed,
      logp,
      entropy,
      ...(withRef ? { refLogp } : {}),
      ms,
    };
  },

  async attentionCheck(c) {
    requireInit();
    const d = attentionCaseData(c);
    const t = tf.tidy(() => {
      const q = tf.tensor3d(d.q, [c.batch, c.heads, c.headDim]);
      const k = tf.tensor4d(d.k, [c.batch, c.kvHeads, c.capacity, c.headDim]);
      const v = tf.tensor4d(d.v, [c.batch, c.kvHeads, c.capacity, c.headDim]);
      return decodeAttention(q, k, v, tf.tensor2d(d.bias, [c.batch, c.capacity]), c.len);
    });
    const out = Array.from(await t.data());
    t.dispose();
    return { backend: tf.getBackend(), path: decodeAttentionFused(c.len) ? 'wgsl' : 'stock', out };
  },

  async fusedBlockCheck(c) {
    requireInit();
    const d = blockCaseData(c);
    const g = tf.tensor1d(d.g);
    const u = tf.tensor1d(d.u);
    const dy = tf.tensor1d(d.dy);
    const cache = tf.tensor4d(d.cache, [c.batch, c.heads, c.capacity, c.headDim]);
    const fresh = tf.tensor4d(d.fresh, [c.batch, c.heads, c.len, c.headDim]);
    const y = swiglu(g, u);
    const [dg, du] = tf.grads((a: tf.Tensor, b: tf.Tensor) => tf.sum(tf.mul(swiglu(a, b), dy)))([g, u]);
    const kv = kvWrite(cache, fresh, c.start);
    const read = async (t: tf.Tensor) => Array.from(await t.data());
    const out = {
      backend: tf.getBackend(),
      y: await read(y),
      dg: await read(dg),
      du: await read(du),
      kv: await read(kv),
    };
    tf.dispose([g, u, dy, cache, fresh, y, dg, du, kv]);
    return out;
  },

  async fusedNormCheck(c) {
    requireInit();
    const d = normCaseData(c);
    const read = async (t: tf.Tensor) => Array.from(await t.data());
    const x = tf.tensor2d(d.x, [c.rows, c.hidden]);
    const w = tf.tensor1d(d.w);
    const dy = tf.tensor2d(d.dy, [c.rows, c.hidden]);
    const shape: [number, number, number, number] = [c.batch, c.heads, c.len, c.headDim];
    const pos: [number, number, number, number] = [c.batch, 1, c.len, c.headDim];
    const q = tf.tensor4d(d.q, shape);
    const cos = tf.tensor4d(d.cos, pos);
    const sin = tf.tensor4d(d.sin, pos);
    const dq = tf.tensor4d(d.dq, shape);
    const y = rmsNorm(x, w, NORM_EPS);
    const [gx, gw] = tf.grads((a: tf.Tensor, b: tf.Tensor) =>
      tf.sum(tf.mul(rmsNorm(a, b as tf.Tensor1D, NORM_EPS), dy)),
    )([x, w]);
    const ry = rope(q, cos, sin);
    const rg = tf.grad((a: tf.Tensor) => tf.sum(tf.mul(rope(a as tf.Tensor4D, cos, sin), dq)))(q);
    const out = {
      backend: tf.getBackend(),
      rms: { y: await read(y), dx: await read(gx), dw: await read(gw) },
      rope: { y: await read(ry), dx: await read(rg) },
    };
    tf.dispose([x, w, dy, q, cos, sin, dq, y, gx, gw, ry, rg]);
    return out;
  },

  async setBindingLimit(bytes) {
    setEngineOptions({ bindingLimit: bytes });
  },

  async tokenStatsGradCheck(rows, vocab, seed, withRef = false): Promise<KernelGradCheck> {
    requireInit();
    const c = seededLogits(rows, vocab, seed);
    const ids = tf.tensor1d(c.ids, 'int32');
    const up = seededUpstream(rows, seed);
    // With a reference, the upstream of its column is nonzero: it must not change d/d logits.
    const dy = withRef
      ? tf.tensor2d(
          Array.from(up).flatMap((v, i) => (i % 2 === 1 ? [v, 0.9] : [v])),
          [rows, 3],
        )
      : tf.tensor2d(up, [rows, 2]);
    const ref = withRef ? tf.tensor2d(seededLogits(rows, vocab, seed + 1).logits, [rows, vocab]) : undefined;
    const logits = tf.tensor2d(c.logits, [rows, vocab]);
    const g = tf.grad((x: tf.Tensor) => tf.sum(tf.mul(tokenStats(x as tf.Tensor2D, ids, ref), dy)))(logits);
    const grad = (await g.data()) as Float32Array;
    tf.dispose([ids, dy, logits, g, ...(ref ? [ref] : [])]);
    return Comlink.transfer({ backend: tf.getBackend(), rows, vocab, seed, grad }, [grad.buffer]);
  },

  async loadModel(name, ref, options) {
    requireInit();
    return loadNamedModel(name, ref, options);
  },

  async quantMatmulCheck(c) {
    requireInit();
    const { w, x, dy } = quantCaseData(c);
    const weight = quantCaseWeight(c, w);
    const xt = tf.tensor2d(x, [c.rows, c.in]);
    const dyt = tf.tensor2d(dy, [c.rows, c.out]);
    setEngineOptions({ gemvVariant: c.gemv ?? null });
    const y = weight.matmul(xt);
    const dx = tf.grad((v: tf.Tensor) => tf.sum(tf.mul(weight.matmul(v as tf.Tensor2D), dyt)))(xt);
    const out = {
      backend: tf.getBackend(),
      y: Array.from(await y.data()),
      dx: Array.from(await dx.data()),
      blocks: weight.blocks.length,
    };
    setEngineOptions({ gemvVariant: null });
    tf.dispose([xt, dyt, y, dx]);
    weight.dispose();
    return out;
  },

  async unloadModel(name) {
    unloadNamedModel(name);
  },

  async logits(name, ids) {
    return modelLogits(name, ids);
  },

  async setTfjsFlag(name, value) {
    tf.env().set(name, value);
  },

  async profileDecodeStep(name, ids) {
    return profileDecodeStep(name, ids);
  },

  async generate(name, prompts, options) {
    return modelGenerate(name, prompts, options);
  },

  async loadSyntheticModel(name, shape) {
    requireInit();
    return loadSyntheticNamedModel(name, shape);
  },

  async benchKernels(reps) {
    requireInit();
    return benchKernels(reps);
  },

  async benchWholeSteps(name, reps) {
    return benchWholeSteps(namedModel(name), reps);
  },

  async rlSmokeStep(name) {
    return rlSmokeStep(namedModel(name));
  },

  async setWasmKernels(enabled) {
    setWasmKernels(enabled);
    return wasmKernelStatus();
  },

  async setCustomKernels(enabled) {
    setEngineOptions({ customKernels: enabled });
  },

  async setOptimizerPath(path) {
    setEngineOptions({ optimizerPath: path });
  },

  async setDecodePath(path) {
    if (path !== 'planned' && path !== 'tfjs')
      throw new Error(`decode path must be 'planned' or 'tfjs', got ${String(path).slice(0, 40)}`);
    setEngineOptions({ decodePath: path });
  },

  async benchDecode(name, c) {
    return benchDecodePaths(namedModel(name), c);
  },

  async benchRollout(name, c) {
    return benchRollouts(namedModel(name), c);
  },

  async benchLearn(name, c, reps) {
    return benchLearnPaths(namedModel(name), c, reps);
  },

  async learnCheck(name, path, c) {
    if (path !== 'planned' && path !== 'tfjs')
      throw new Error(`learn path must be 'planned' or 'tfjs', got ${String(path).slice(0, 40)}`);
    return learnCheck(namedModel(name), path, c);
  },

  async learnGradCheck(name, cases) {
    return learnGradCheck(namedModel(name), cases);
  },

  async learnRunCheck(name, c) {
    return learnRunCheck(namedModel(name), c);
  },

  async learnCheckpointCheck(name) {
    return learnCheckpointCheck(namedModel(name));
  },

  async benchGrpoStep(name, c, reps) {
    return benchGrpoStepPaths(namedModel(name), c, reps);
  },

  async benchRoofline(n, reps) {
    if (!Number.isInteger(n) || n < 64 || n > 8192)
      throw new Error(`benchRoofline: n must be an integer in [64, 8192], got ${String(n).slice(0, 40)}`);
    if (tf.getBackend() !== 'webgpu')
      throw new Error(`benchRoofline: needs the webgpu backend, the active one is ${tf.getBackend()}`);
    return measureRoofline(n, reps);
  },

  async setSubgroups(enabled) {
    requireInit();
    setEngineOptions({ subgroups: enabled });
    return subgroupStatus();
  },

  async benchModel(name, c) {
    return benchNamedModel(name, c);
  },

  async sampleCheck(rows, vocab, logitsSeed, options) {
    requireInit();
    const c = seededLogits(rows, vocab, logitsSeed);
    const logits = tf.tensor2d(c.logits, [rows, vocab]);
    const ids = await sampleTokens(logits, options);
    const values = Array.from(await ids.data());
    tf.dispose([logits, ids]);
    return { backend: tf.getBackend(), ids: values };
  },
};
