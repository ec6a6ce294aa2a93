#!/usr/bin/env bash
# The first result: install what is missing (the base packages only), build the libraries and
# the fem executable (nothing else: ./test.sh builds the tests, benchmarks, the distributed path
# and the Python module), and run the main job on a bundled mesh. Results go to out/.
set -euo pipefail
cd "$(dirname "$0")"
./scripts/install-deps.sh
# The CUDA kernels (minutes of nvcc) only where a GPU can run them; a tree already configured
# keeps its choice (./test.sh builds them wherever nvcc is).
cuda=()
if [ ! -f build/CMakeCache.txt ] && ! { command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; }; then
  cuda=(-DFEM_ENABLE_CUDA=OFF)
fi
./scripts/build.sh --target fem "${cuda[@]}"
mkdir -p out
# A plate with a hole, at 0 to begin with: the hole is held at 1, the left and right edges at 0
# (top and bottom insulated). One factorization of M + dt K, 50 cached solves, 11 frames.
./build/apps/fem heat meshes/plate_hole_v41.msh --dt 0.01 --steps 50 --initial 0 \
  --dirichlet hole=1 --dirichlet left=0 --dirichlet right=0 \
  --output out/heat.pvd --json out/heat.json "$@"
echo
echo "results: out/heat.pvd (open in ParaView; frames out/heat_NNNNNN.vtu), summary out/heat.json"
