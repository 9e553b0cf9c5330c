// Counts what a piece of work asks of WebGPU, on any path (tfjs op by op or a plan): dispatches,
// submits, buffers created (and their bytes), readbacks and the time spent waiting for them. Host
// time is the wall time less those waits: the CPU time spent encoding and submitting.
export interface GpuCounts {
  ms: number;
  dispatches: number;
  submits: number;
  buffersCreated: number;
  bytesCreated: number;
  readbacks: number;
  readbackWaitMs: number;
  hostMs: number;
}

/** Runs fn with the WebGPU entry points instrumented (restored after, also on a throw). */
export async function countGpuWork<T>(fn: () => Promise<T>): Promise<{ result: T; counts: GpuCounts }> {
  const c = { dispatches: 0, submits: 0, buffersCreated: 0, bytesCreated: 0, readbacks: 0, readbackWaitMs: 0 };
  const pass = GPUComputePassEncoder.prototype;
  const buf = GPUBuffer.prototype;
  const dev = GPUDevice.prototype;
  const queue = GPUQueue.prototype;
  const dispatch = pass.dispatchWorkgroups;
  const map = buf.mapAsync;
  const create = dev.createBuffer;
  const submit = queue.submit;
  pass.dispatchWorkgroups = function (this: GPUComputePassEncoder, ...a: Parameters<typeof dispatch>) {
    c.dispatches++;
    return dispatch.apply(this, a);
  };
  // Waiting time is the time at least one readback is pending: overlapping waits count once.
  let pending = 0;
  let since = 0;
  buf.mapAsync = async function (this: GPUBuffer, ...a: Parameters<typeof map>) {
    c.readbacks++;
    if (pending++ === 0) since = performance.now();
    try {
      return await map.apply(this, a);
    } finally {
      if (--pending === 0) c.readbackWaitMs += performance.now() - since;
    }
  };
  dev.createBuffer = function (this: GPUDevice, d: GPUBufferDescriptor) {
    c.buffersCreated++;
    c.bytesCreated += d.size;
    return create.call(this, d);
  };
  queue.submit = function (this: GPUQueue, ...a: Parameters<typeof submit>) {
    c.submits++;
    return submit.apply(this, a);
  };
  const t0 = performance.now();
  try {
    const result = await fn();
    const ms = performance.now() - t0;
    return { result, counts: { ...c, ms, hostMs: ms - c.readbackWaitMs } };
  } finally {
    pass.dispatchWorkgroups = dispatch;
    buf.mapAsync = map;
    dev.createBuffer = create;
    queue.submit = submit;
  }
}
