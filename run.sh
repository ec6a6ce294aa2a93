#!/usr/bin/env bash
# Install what is missing, build Release, and run the main job on a bundled mesh
# (the README's first command). Results go to out/.
set -euo pipefail
cd "$(dirname "$0")"
./scripts/install-deps.sh
./scripts/build.sh
mkdir -p out
./build/apps/fem store-demo "$@"
