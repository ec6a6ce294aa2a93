#!/usr/bin/env bash
# Build everything and run the whole test suite (the README's second command).
#   ./test.sh                 all tests
#   ./test.sh -R Store        only tests matching a regex (passed to ctest)
#   FEM_SANITIZE=thread ./test.sh   the same under a sanitizer, in build-thread/
set -euo pipefail
cd "$(dirname "$0")"
./scripts/install-deps.sh fuzz dist python torch format plot
if [ -n "${FEM_SANITIZE:-}" ]; then
  export FEM_BUILD_DIR="build-$FEM_SANITIZE"
  ./scripts/build.sh -DFEM_SANITIZE="$FEM_SANITIZE" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DFEM_BUILD_BENCHMARKS=OFF -DFEM_ENABLE_CUDA=OFF
else
  # CUDA back on wherever nvcc is (./run.sh leaves it off without a GPU); everything else too.
  ./scripts/build.sh -DFEM_ENABLE_CUDA=AUTO
fi
ctest --test-dir "${FEM_BUILD_DIR:-build}" --output-on-failure --parallel "$(nproc)" "$@"
