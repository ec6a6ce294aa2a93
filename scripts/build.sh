#!/usr/bin/env bash
# Configure and build the Release tree in build/ (shared by run.sh and test.sh, so the second
# command rebuilds nothing). Extra arguments go to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${FEM_BUILD_DIR:-build}"
if [ ! -f "$build_dir/CMakeCache.txt" ] || [ $# -gt 0 ]; then
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
fi
cmake --build "$build_dir" --parallel "$(nproc)"
