#!/usr/bin/env bash
# The GPU benchmarks of issues 20 and 21 in one call on a bare GPU machine (no registry, maybe no
# Node): every table BENCHMARKS.md needs (roofline, decode, learn step, whole GRPO step, split-K
# attention, rollouts) written as markdown and JSON into one directory.
#
#   scripts/gpu-bench.sh pack
#       Here, where node_modules is installed: bundles dev/bench/gpuBench.ts (.gpu-bench/app) and
#       gathers what a bare machine lacks into .gpu-bench/carry (ignored by git): this Node binary,
#       the `webgpu` package's Dawn for linux-x64 and a Vulkan loader, xz-compressed.
#   scripts/gpu-bench.sh run OUT [--allow-software] [bench:gpu flags...]
#       There: the preflight below, then `bench:gpu --all --out OUT --budget-s $BUDGET_S` (default
#       420: no table starts after 7 minutes, so the run ends inside a 10-minute command), logging
#       to OUT/log.txt. Where node_modules exists it rebuilds the bundle first. The benchmark then
#       checks planned against tfjs on the adapter before it times anything (a mismatch: exit 1).
#   scripts/gpu-bench.sh preflight [--allow-software]
#       The preflight alone (seconds): picks the system Node when it is v20 or newer, else the
#       carried one; prints the Vulkan loader and driver (ICD) files found; names the NVIDIA driver
#       to Dawn (VK_DRIVER_FILES and VK_ICD_FILENAMES) where one is installed and the caller set
#       none; asks Dawn for its adapter (scripts/gpu-adapter.mjs) and, for a software one
#       (SwiftShader, llvmpipe / lavapipe), stops with one line and exit 3 unless --allow-software.
#
# With the device tool: `scripts/gpu-bench.sh pack` in the checkout the session sends, then
#   run(command="bash scripts/gpu-bench.sh run $OUT", carry=[".gpu-bench"], timeout_s=600)
# and paste OUT/bench.md into BENCHMARKS.md. Flags after OUT go to bench:gpu (`--help` lists them):
# where the budget skipped tables (bench.md says which), a second call with `--skip` naming the
# tables already measured (e.g. `--skip decode,learn`) measures the rest.
set -euo pipefail
cd "$(dirname "$0")/.."
G=${GPU_BENCH_DIR:-.gpu-bench}
C=$G/carry
# Oldest Node the bundle runs on (package.json engines; the bundle targets node20).
MIN_NODE=20

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
preflight | run)
  mode=$1
  if [ "$mode" = run ]; then
    out=${2:?usage: scripts/gpu-bench.sh run OUT [--allow-software] [bench:gpu flags...]}
    shift 2
    mkdir -p "$out"
    log="$out/log.txt"
  else
    shift
    log=/dev/null
  fi
  : >"$log"
  say() { echo "gpu-bench: $*" | tee -a "$log"; }
  allow=""
  for a in "$@"; do [ "$a" = --allow-software ] && allow=--allow-software; done

  # Node: the system one where it is new enough, else the carried one.
  node_major() { "$1" -e 'process.stdout.write(process.versions.node.split(".")[0])' 2>/dev/null || echo 0; }
  NODE=$(command -v node || true)
  if [ -n "$NODE" ] && [ "$(node_major "$NODE")" -ge "$MIN_NODE" ]; then
    say "node $("$NODE" --version) (system, $NODE)"
  else
    why=${NODE:+"system $NODE is $("$NODE" --version 2>/dev/null), older than v$MIN_NODE"}
    [ -f $C/node.xz ] || { say "no node >= v$MIN_NODE on PATH (${why:-none}) and none carried ($C/node.xz)"; exit 1; }
    mkdir -p /tmp/sparring-node && unxz_to $C/node.xz /tmp/sparring-node/node && chmod +x /tmp/sparring-node/node
    NODE=/tmp/sparring-node/node
    say "node $("$NODE" --version) (carried; ${why:-no node on PATH})"
  fi
  if [ ! -d node_modules/webgpu ]; then
    dn=$C/webgpu/dist/linux-x64/dawn.node
    [ -f "$dn" ] || unxz_to "$dn.xz" "$dn"
    export SPARRING_WEBGPU_MODULE="$PWD/$C/webgpu/index.js"
  fi

  # The Vulkan loader and driver (ICD) files, printed so a log shows what Dawn could load.
  # awk reads to the end (no early exit): ldconfig killed by SIGPIPE would end the script under pipefail (exit 141).
  loader=$(ldconfig -p 2>/dev/null | awk '/libvulkan\.so\.1 / && !f { print $NF; f = 1 }')
  if [ -z "$loader" ] && [ -f $C/lib/libvulkan.so.1 ]; then
    export LD_LIBRARY_PATH="$PWD/$C/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    loader="$PWD/$C/lib/libvulkan.so.1 (carried)"
  fi
  say "Vulkan loader: ${loader:-none found (ldconfig has no libvulkan.so.1 and none is carried)}"
  # GPU_BENCH_ICD_DIRS replaces the usual places (tests).
  dirs=${GPU_BENCH_ICD_DIRS:-/etc/vulkan/icd.d /usr/share/vulkan/icd.d /usr/local/share/vulkan/icd.d /usr/local/nvidia/share/vulkan/icd.d /usr/share/nvidia}
  icds=$(for d in $dirs; do ls "$d"/*.json 2>/dev/null; done || true)
  say "Vulkan drivers: $(echo ${icds:-none} | tr '\n' ' ')"
  nvidia=$(echo "$icds" | grep -m1 'nvidia_icd.*\.json$' || true)
  if [ -n "${VK_DRIVER_FILES:-}" ]; then
    say "VK_DRIVER_FILES=$VK_DRIVER_FILES (set by the caller, kept)"
  elif [ -n "$nvidia" ]; then
    # Named outright: with Mesa's drivers also registered, the loader would offer llvmpipe beside it.
    export VK_DRIVER_FILES=$nvidia VK_ICD_FILENAMES=$nvidia
    lib=$(sed -n 's/.*"library_path" *: *"\([^"]*\)".*/\1/p' "$nvidia")
    found=$(ldconfig -p 2>/dev/null | awk -v l="$(basename "${lib:-none}")" '$1 == l && !f { print $NF; f = 1 }')
    say "VK_DRIVER_FILES=VK_ICD_FILENAMES=$nvidia (its library ${lib:-?}: ${found:-not in ldconfig})"
  else
    say "no NVIDIA driver file: Dawn takes whatever the loader offers"
  fi
  export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
  { nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"; } | sed 's/^/gpu-bench: GPU /' | tee -a "$log"

  # The adapter Dawn gives: a software one ends the run here (one line, exit 3) unless --allow-software.
  set +e
  "$NODE" scripts/gpu-adapter.mjs $allow 2>&1 | grep -v '^Warning: max' | tee -a "$log"
  rc=${PIPESTATUS[0]}
  set -e
  [ "$rc" = 0 ] || exit "$rc"
  [ "$mode" = preflight ] && exit 0

  if [ -d node_modules/webgpu ] && [ -d node_modules/vite ]; then
    npx tsx dev/bench/build-gpu-bench.ts 2>&1 | tee -a "$log"
  fi
  [ -f $G/app/gpuBench.mjs ] || { say "no bundle at $G/app/gpuBench.mjs: run 'scripts/gpu-bench.sh pack' where node_modules is, and carry $G"; exit 1; }
  set +e
  timeout --signal=INT "${TIMEOUT_S:-585}" "$NODE" $G/app/gpuBench.mjs --all --out "$out" --budget-s "${BUDGET_S:-420}" "$@" 2>&1 | tee -a "$log"
  rc=${PIPESTATUS[0]}
  say "exit $rc; tables in $out/bench.md and $out/bench.json"
  exit "$rc"
  ;;
*)
  sed -n '2,28p' "$0"
  exit 2
  ;;
esac
