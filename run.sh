#!/usr/bin/env bash
# Install what is missing, build Release, and run the main job on a bundled mesh
# (a heat-equation time series). Results go to out/.
set -euo pipefail
cd "$(dirname "$0")"
./scripts/install-deps.sh dist python
./scripts/build.sh
mkdir -p out
# A plate with a hole, at 0 to begin with: the hole is held at 1, the left and right edges at 0
# (top and bottom insulated). One factorization of M + dt K, 50 cached solves, 11 frames.
./build/apps/fem heat meshes/plate_hole_v41.msh --dt 0.01 --steps 50 --initial 0 \
  --dirichlet hole=1 --dirichlet left=0 --dirichlet right=0 \
  --output out/heat.pvd --json out/heat.json "$@"
echo
echo "results: out/heat.pvd (open in ParaView; frames out/heat_NNNNNN.vtu), summary out/heat.json"
