// A Vite plugin that keeps tfjs-wasm's threads alive in a minified build.
// tfjs-backend-wasm hands its threaded build's factory to every pthread worker as source text
// (`Function.prototype.toString` into a Blob). The factory reads its closure's `_scriptDir` behind
// a `typeof _scriptDir !== "undefined"` guard; the minifier, which sees the variable declared,
// shortens the guard to `e !== void 0`, a ReferenceError in the Blob where the closure is gone:
// every wasm thread died with "e is not defined" (tfjs 4.22, Vite 8's Oxc minifier). The guard only
// picks a script folder that tfjs's own locateFile never uses (it maps each .wasm and the worker
// script itself), so the plugin replaces it with `false`.
import type { Plugin } from 'vite';

export const THREADED_FACTORY = /tfjs-backend-wasm\/wasm-out\/tfjs-backend-wasm-threaded-simd\.js$/;
export const SCRIPT_DIR_GUARD = 'typeof _scriptDir !== "undefined" && _scriptDir';

/** The factory's source with the guard replaced; throws when a tfjs update moved it. */
export function unguardScriptDir(code: string): string {
  if (!code.includes(SCRIPT_DIR_GUARD))
    throw new Error(
      `tfjs-backend-wasm-threaded-simd.js: no \`${SCRIPT_DIR_GUARD}\`: check dev/build/wasmThreadGuard.ts against this tfjs`,
    );
  return code.replaceAll(SCRIPT_DIR_GUARD, 'false');
}

export function wasmThreadGuard(): Plugin {
  return {
    name: 'sparring:tfjs-wasm-thread-guard',
    transform(code, id) {
      return THREADED_FACTORY.test(id.split('?')[0]) ? { code: unguardScriptDir(code), map: null } : null;
    },
  };
}
