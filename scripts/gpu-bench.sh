#!/usr/bin/env bash
# The GPU benchmarks of issues 20 and 21 in one call on a bare GPU machine (no registry, maybe no
# Node): every table BENCHMARKS.md needs (roofline, decode, learn step, whole GRPO step, split-K
# attention, rollouts) written as markdown and JSON into one directory.
#
#   scripts/gpu-bench.sh pack
#       Here, where node_modules is installed: bundles dev/bench/gpuBench.ts (.gpu-bench/app) and
#       gathers what a bare machine lacks into .gpu-bench/carry (ignored by git): this Node binary,
#       the `webgpu` package's Dawn for linux-x64 and a Vulkan loader, xz-compressed.
#   scripts/gpu-bench.sh run OUT [bench:gpu flags...]
#       There: unpacks what it needs, points Dawn at the NVIDIA Vulkan driver when no ICD is
#       registered, and runs `bench:gpu --all --out OUT --budget-s $BUDGET_S` (default 420: no
#       table starts after 7 minutes, so the run ends inside a 10-minute command), logging to
#       OUT/log.txt. Where node_modules exists it rebuilds the bundle first.
#
# With the device tool: `scripts/gpu-bench.sh pack` in the checkout the session sends, then
#   run(command="bash scripts/gpu-bench.sh run $OUT", carry=[".gpu-bench"], timeout_s=600)
# and paste OUT/bench.md into BENCHMARKS.md. Flags after OUT go to bench:gpu (`--help` lists them):
# where the budget skipped tables (bench.md says which), a second call with `--skip` naming the
# tables already measured (e.g. `--skip decode,learn`) measures the rest.
set -euo pipefail
cd "$(dirname "$0")/.."
G=.gpu-bench
C=$G/carry

unxz_to() { # unxz_to SRC.xz DEST: xz where installed, else Python's lzma
  if command -v xz >/dev/null; then xz -dc "$1" >"$2"; else python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$1" "$2"; fi
}

case "${1:-}" in
pack)
  [ -d node_modules/webgpu ] || { echo "gpu-bench pack: node_modules/webgpu is missing (npm ci first)" >&2; exit 1; }
  npx tsx dev/bench/build-gpu-bench.ts
  rm -rf "$C" && mkdir -p "$C/webgpu/dist/linux-x64" "$C/lib"
  xz -T2 -6 -c "$(command -v node)" >"$C/node.xz"
  cp node_modules/webgpu/index.js node_modules/webgpu/package.json "$C/webgpu/"
  xz -T2 -6 -c node_modules/webgpu/dist/linux-x64/dawn.node >"$C/webgpu/dist/linux-x64/dawn.node.xz"
  for l in /usr/lib/chromium/libvulkan.so.1 /usr/lib/x86_64-linux-gnu/libvulkan.so.1; do
    if [ -f "$l" ]; then cp -L "$l" "$C/lib/libvulkan.so.1"; break; fi
  done
  echo "gpu-bench pack: $(du -sh $G | cut -f1) in $G (carry it; the device tool takes 64 MiB with the working tree)"
  ;;
run)
  out=${2:?usage: scripts/gpu-bench.sh run OUT [bench:gpu flags...]}
  shift 2
  mkdir -p "$out"
  log="$out/log.txt"
  : >"$log"
  say() { echo "gpu-bench: $*" | tee -a "$log"; }
  if [ -d node_modules/webgpu ] && [ -d node_modules/vite ]; then
    npx tsx dev/bench/build-gpu-bench.ts 2>&1 | tee -a "$log"
  fi
  [ -f $G/app/gpuBench.mjs ] || { say "no bundle at $G/app/gpuBench.mjs: run 'scripts/gpu-bench.sh pack' where node_modules is, and carry $G"; exit 1; }
  NODE=$(command -v node || true)
  if [ -z "$NODE" ]; then
    [ -f $C/node.xz ] || { say "no node on PATH and none carried ($C/node.xz)"; exit 1; }
    mkdir -p /tmp/sparring-node && unxz_to $C/node.xz /tmp/sparring-node/node && chmod +x /tmp/sparring-node/node
    NODE=/tmp/sparring-node/node
  fi
  if [ ! -d node_modules/webgpu ]; then
    dn=$C/webgpu/dist/linux-x64/dawn.node
    [ -f "$dn" ] || unxz_to "$dn.xz" "$dn"
    export SPARRING_WEBGPU_MODULE="$PWD/$C/webgpu/index.js"
  fi
  if ! ldconfig -p 2>/dev/null | grep -q 'libvulkan.so.1' && [ -f $C/lib/libvulkan.so.1 ]; then
    export LD_LIBRARY_PATH="$PWD/$C/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
  if [ -z "${VK_DRIVER_FILES:-}" ] && ! ls /usr/share/vulkan/icd.d/*.json /etc/vulkan/icd.d/*.json >/dev/null 2>&1; then
    for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/nvidia/nvidia_icd.json; do
      if [ -f "$icd" ]; then export VK_DRIVER_FILES=$icd; break; fi
    done
  fi
  say "node $("$NODE" --version), VK_DRIVER_FILES=${VK_DRIVER_FILES:-default}, LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
  { nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"; } | sed 's/^/gpu-bench: GPU /' | tee -a "$log"
  set +e
  timeout --signal=INT "${TIMEOUT_S:-585}" "$NODE" $G/app/gpuBench.mjs --all --out "$out" --budget-s "${BUDGET_S:-420}" "$@" 2>&1 | tee -a "$log"
  rc=${PIPESTATUS[0]}
  say "exit $rc; tables in $out/bench.md and $out/bench.json"
  exit "$rc"
  ;;
*)
  sed -n '2,20p' "$0"
  exit 2
  ;;
esac
