#!/usr/bin/env bash
# Configure and build the Release tree in build/ (shared by run.sh and test.sh: the second
# command builds only what the first did not).
#   scripts/build.sh [--target NAME]... [-DVAR=VALUE]...
# Configuring runs every time (seconds): an AUTO feature (PETSc, Python, CUDA) follows what is
# installed now, so a package installed since the last build is picked up.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${FEM_BUILD_DIR:-build}"
targets=()
configure=()
while [ $# -gt 0 ]; do
  case "$1" in
    --target) targets+=(--target "$2"); shift 2 ;;
    *) configure+=("$1"); shift ;;
  esac
done
mkdir -p "$build_dir"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${configure[@]}" > "$build_dir/configure.log" 2>&1 ||
  { cat "$build_dir/configure.log" >&2; exit 1; }
cmake --build "$build_dir" --parallel "$(nproc)" "${targets[@]}"
