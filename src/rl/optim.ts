// Optimiser helpers: global gradient-norm clipping (torch clip_grad_norm_) and an AdamW over tfjs
// variables (tfjs ships Adam only, and keys its moments by position in the gradient list; this one
// keys them by variable name so a checkpoint restores exactly, whatever the order of variables).
import * as tf from '@tensorflow/tfjs';
import { variableFrom, wasmAdamW, wasmScale, wasmSumSquares } from '../engine';

/**
 * Global L2 norm over all gradients, and the gradients scaled by min(1, maxNorm / (norm + 1e-6))
 * (torch clip_grad_norm_). Stays on the device: no readback; read `norm` for `grad/norm`.
 * A non-finite norm propagates (NaN grads): callers should skip that update (veRL does).
 */
export function clipByGlobalNorm(
  grads: tf.NamedTensorMap,
  maxNorm: number,
  onHost = adamwOnHost(),
): { grads: tf.NamedTensorMap; norm: tf.Scalar } {
  const names = Object.keys(grads);
  if (onHost) {
    // The CPU backends (see adamwOnHost): 3 ops per gradient and 5 more op by op, none here. The
    // same roundings as tfjs-cpu's ops (squares in float32, each sum accumulated in float64 and
    // stored in float32), so the recipes' reports stay byte for byte what they were.
    const f = Math.fround;
    // tfjs-wasm: the sums read in place and the products one kernel each (no readback, no upload)
    const sums = names.map((n) => wasmSumSquares(grads[n]));
    const inPlace = sums.every((x) => x !== null);
    const data = inPlace ? [] : names.map((n) => grads[n].dataSync() as Float32Array); // cpu-backend readback
    let total = 0;
    for (let k = 0; k < names.length; k++) {
      let acc = inPlace ? (sums[k] as number) : 0;
      if (!inPlace) for (let i = 0, d = data[k]; i < d.length; i++) acc += f(d[i] * d[i]);
      total += f(acc);
    }
    const norm = f(Math.sqrt(f(total)));
    const coef = Math.min(f(f(maxNorm) / f(norm + f(1e-6))), 1);
    const out: tf.NamedTensorMap = {};
    if (inPlace) {
      for (const n of names) out[n] = wasmScale(grads[n], coef)!;
      return { grads: out, norm: tf.scalar(norm) };
    }
    names.forEach((n, k) => {
      // a plain loop: Float32Array.map's callback per value took ~3 ms of a learning step here
      const d = data[k];
      const scaled = new Float32Array(d.length);
      for (let i = 0; i < d.length; i++) scaled[i] = d[i] * coef;
      out[n] = tf.tensor(scaled, grads[n].shape, 'float32');
    });
    return { grads: out, norm: tf.scalar(norm) };
  }
  return tf.tidy(() => {
    const sq = names.map((n) => tf.sum(tf.square(grads[n])));
    // stack + sum, not addN: tfjs-webgpu's AddN binds every input at once and fails past the
    // 8-storage-buffer limit (28 LoRA tensors on a 2-layer model), while Concat chunks its inputs.
    const norm = (sq.length > 0 ? tf.sqrt(tf.sum(tf.stack(sq))) : tf.scalar(0)) as tf.Scalar;
    const coef = tf.minimum(tf.div(maxNorm, tf.add(norm, 1e-6)), 1);
    const out: tf.NamedTensorMap = {};
    for (const n of names) out[n] = tf.mul(grads[n], coef);
    return { grads: out, norm };
  });
}

export interface AdamWConfig {
  lr: number;
  beta1?: number;
  beta2?: number;
  eps?: number;
  /** Decoupled weight decay (torch AdamW default 0.01). */
  weightDecay?: number;
}

/** Serialisable optimiser state: step count and both moments per variable name. */
export interface AdamWState {
  step: number;
  moments: Record<string, { shape: number[]; m: Float32Array; v: Float32Array }>;
}

/**
 * Holds an AdamW's moments somewhere else while it is in use: the planned GPU optimiser
 * (src/rl/plannedOptim.ts) keeps them in flat device buffers. The AdamW still owns the step count,
 * exports and imports through the holder, and takes the moments back before a tfjs update.
 */
export interface MomentHolder {
  /** Both moments per variable name (read from the device). */
  exportMoments(): Promise<AdamWState['moments']>;
  /** The moments as new tfjs tensors by name; the holder is spent after this. */
  takeBack(): Record<string, { m: tf.Tensor; v: tf.Tensor }>;
  dispose(): void;
}

/**
 * AdamW (torch.optim.AdamW semantics):
 * p <- p (1 - lr wd); m <- b1 m + (1 - b1) g; v <- b2 v + (1 - b2) g^2;
 * p <- p - lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps).
 * Variables and gradients are passed as records keyed by name; moments are kept under the same
 * keys, so adding, removing or reordering variables never mixes up their state.
 */
export class AdamW {
  readonly config: Required<AdamWConfig>;
  private t = 0;
  private readonly m = new Map<string, tf.Variable>();
  private readonly v = new Map<string, tf.Variable>();
  private holder: MomentHolder | null = null;

  constructor(config: AdamWConfig) {
    this.config = { beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.01, ...config };
  }

  get step(): number {
    return this.t;
  }

  /** The holder of the moments while another implementation runs the updates (null: this object). */
  get momentHolder(): MomentHolder | null {
    return this.holder;
  }

  /**
   * Hands the moments of `names` over to `holder`: returns the ones held here (the caller copies
   * them and disposes them) and forgets them; moments of other variables stay here. Step count and
   * config stay here too.
   */
  handOver(holder: MomentHolder, names: ReadonlySet<string>): Map<string, { m: tf.Variable; v: tf.Variable }> {
    this.reclaim();
    const out = new Map<string, { m: tf.Variable; v: tf.Variable }>();
    for (const [name, m] of this.m) {
      if (!names.has(name)) continue;
      out.set(name, { m, v: this.v.get(name)! });
      this.m.delete(name);
      this.v.delete(name);
    }
    this.holder = holder;
    return out;
  }

  /** Counts an update the holder took (bias correction is by taken steps). */
  countStep(): void {
    if (!this.holder) throw new Error("AdamW: countStep() is for a moment holder's updates");
    this.t += 1;
  }

  /** Takes the moments back from the holder (before a tfjs update, an export, a dispose). */
  private reclaim(): void {
    const h = this.holder;
    if (!h) return;
    this.holder = null;
    for (const [name, { m, v }] of Object.entries(h.takeBack())) {
      this.m.set(name, variableFrom(m, false));
      this.v.set(name, variableFrom(v, false));
    }
    h.dispose();
  }

  /**
   * One update of every variable that has a gradient. lr overrides config.lr (for schedules);
   * onHost: run it on the host (adamwOnHost, the default on the CPU backends) or op by op.
   */
  applyGradients(
    vars: Record<string, tf.Variable>,
    grads: tf.NamedTensorMap,
    lr = this.config.lr,
    onHost = adamwOnHost(),
  ): void {
    this.reclaim();
    const { beta1: b1, beta2: b2, eps, weightDecay: wd } = this.config;
    this.t += 1;
    const bc1 = 1 - b1 ** this.t;
    const bc2 = 1 - b2 ** this.t;
    for (const name of Object.keys(grads)) {
      const p = vars[name];
      if (!p) throw new Error(`AdamW: gradient for "${name}" has no variable`);
      const g = grads[name];
      const m = this.moment(this.m, name, p);
      const v = this.moment(this.v, name, p);
      if (onHost) {
        adamwHost(p, m, v, g, { b1, b2, eps, wd, lr, bc1, bc2 });
        continue;
      }
      tf.tidy(() => {
        m.assign(tf.add(tf.mul(b1, m), tf.mul(1 - b1, g)));
        v.assign(tf.add(tf.mul(b2, v), tf.mul(1 - b2, tf.square(g))));
        const decayed = tf.mul(p, 1 - lr * wd);
        const denom = tf.add(tf.sqrt(tf.div(v, bc2)), eps);
        p.assign(tf.sub(decayed, tf.mul(lr / bc1, tf.div(m, denom))));
      });
    }
  }

  /** Copy the state out (awaits the device; moments as Float32Array per name). */
  async exportState(): Promise<AdamWState> {
    const moments: AdamWState['moments'] = this.holder ? await this.holder.exportMoments() : {};
    for (const [name, m] of this.m) {
      const v = this.v.get(name)!;
      moments[name] = {
        shape: m.shape.slice(),
        m: Float32Array.from(await m.data()),
        v: Float32Array.from(await v.data()),
      };
    }
    return { step: this.t, moments };
  }

  /**
   * Replace the state with a saved one. The new moments are checked and built first and the old
   * ones disposed only then, so a bad state throws with the optimiser unchanged.
   */
  importState(state: AdamWState): void {
    if (!Number.isSafeInteger(state.step) || state.step < 0)
      throw new Error(`AdamW: step must be a non-negative integer, got ${state.step}`);
    for (const [name, { shape, m, v }] of Object.entries(state.moments)) {
      const n = shape.reduce((a, b) => a * b, 1);
      if (m.length !== n || v.length !== n)
        throw new Error(
          `AdamW: moments of "${name}" hold ${m.length} and ${v.length} values, shape [${shape}] needs ${n}`,
        );
    }
    const built: [string, tf.Variable, tf.Variable][] = [];
    for (const [name, { shape, m, v }] of Object.entries(state.moments)) {
      built.push([
        name,
        variableFrom(tf.tensor(m, shape, 'float32'), false),
        variableFrom(tf.tensor(v, shape, 'float32'), false),
      ]);
    }
    this.dispose();
    this.t = state.step;
    for (const [name, m, v] of built) {
      this.m.set(name, m);
      this.v.set(name, v);
    }
  }

  dispose(): void {
    this.holder?.dispose();
    this.holder = null;
    for (const x of [...this.m.values(), ...this.v.values()]) x.dispose();
    this.m.clear();
    this.v.clear();
  }

  private moment(store: Map<string, tf.Variable>, name: string, p: tf.Variable): tf.Variable {
    let x = store.get(name);
    if (x && !arraysEqual(x.shape, p.shape))
      throw new Error(`AdamW: variable "${name}" changed shape from [${x.shape}] to [${p.shape}]`);
    if (!x) {
      x = variableFrom(tf.zerosLike(p), false);
      store.set(name, x);
    }
    return x;
  }
}

/**
 * Whether updates run on the host: on the CPU backends the tensors live in host memory anyway,
 * and the op-by-op update costs ~14 tfjs ops per variable (588 of the ~2,430 of a learning step of
 * the sandbox defender with LoRA everywhere, 42 variables), where reading the four arrays and
 * writing three costs no kernel at all.
 */
export function adamwOnHost(backend: string = tf.getBackend()): boolean {
  return backend === 'wasm' || backend === 'cpu';
}

/**
 * applyGradients' update of one variable on the host, rounding to float32 after every operation
 * in the order the tfjs ops run (so it gives the op-by-op update's values on tfjs-cpu bit for bit).
 */
function adamwHost(
  p: tf.Variable,
  m: tf.Variable,
  v: tf.Variable,
  g: tf.Tensor,
  c: { b1: number; b2: number; eps: number; wd: number; lr: number; bc1: number; bc2: number },
): void {
  const f = Math.fround;
  const consts = [c.b1, 1 - c.b1, c.b2, 1 - c.b2, 1 - c.lr * c.wd, c.eps, c.bc2, c.lr / c.bc1].map(f);
  // tfjs-wasm: one kernel of ours per variable, the same operations (no readback, no upload)
  const ours = wasmAdamW(p, m, v, g, consts);
  if (ours) {
    const [np, nm, nv] = ours;
    p.assign(np);
    m.assign(nm);
    v.assign(nv);
    tf.dispose(ours);
    return;
  }
  const [pd, md, vd, gd] = [p, m, v, g].map((t) => t.dataSync() as Float32Array); // cpu-backend readback
  const [b1, a1, b2, a2, keep, eps, bc2, step] = consts;
  const n = pd.length;
  const [np, nm, nv] = [new Float32Array(n), new Float32Array(n), new Float32Array(n)];
  for (let i = 0; i < n; i++) {
    const gi = gd[i];
    const mi = f(f(b1 * md[i]) + f(a1 * gi));
    const vi = f(f(b2 * vd[i]) + f(a2 * f(gi * gi)));
    const denom = f(f(Math.sqrt(f(vi / bc2))) + eps);
    nm[i] = mi;
    nv[i] = vi;
    np[i] = f(f(pd[i] * keep) - f(step * f(mi / denom)));
  }
  for (const [x, d] of [
    [m, nm],
    [v, nv],
    [p, np],
  ] as const)
    tf.tidy(() => x.assign(tf.tensor(d, x.shape, 'float32')));
}

function arraysEqual(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
