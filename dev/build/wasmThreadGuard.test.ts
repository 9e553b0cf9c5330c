import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { SCRIPT_DIR_GUARD, THREADED_FACTORY, unguardScriptDir } from './wasmThreadGuard';

const factory = createRequire(import.meta.url).resolve(
  '@tensorflow/tfjs-backend-wasm/wasm-out/tfjs-backend-wasm-threaded-simd.js',
);

describe('the tfjs-wasm thread guard', () => {
  it('finds the installed threaded factory and removes every closure read of _scriptDir from its body', () => {
    expect(THREADED_FACTORY.test(factory)).toBe(true);
    const out = unguardScriptDir(readFileSync(factory, 'utf8'));
    expect(out).not.toContain(SCRIPT_DIR_GUARD);
    // Inside the factory (what the Blob carries), the one read left is the `mainScriptUrlOrBlob ||
    // _scriptDir` fallback, never reached: tfjs sets mainScriptUrlOrBlob.
    const body = out.slice(out.indexOf('function(WasmBackendModuleThreadedSimd)'));
    const reads = body.split('_scriptDir').length - 1;
    expect(body).toContain('Module["mainScriptUrlOrBlob"]||_scriptDir');
    expect(reads).toBe(2); // the dead `if(false){scriptDirectory=_scriptDir}` and that fallback
    expect(body).toContain('if(false){scriptDirectory=_scriptDir}');
  });

  it('fails loudly when the guard is not there', () => {
    expect(() => unguardScriptDir('var x = 1;')).toThrow(/check dev\/build\/wasmThreadGuard\.ts/);
  });
});
