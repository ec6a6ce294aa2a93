#!/usr/bin/env bash
# Regenerate the sample meshes from their .geo sources with Debian's gmsh (4.8):
#   ./scripts/install-deps.sh gmsh && meshes/make.sh
# Each mesh is written in MSH 2.2 and 4.1, ASCII and binary: <name>_v22.msh, <name>_v22_bin.msh,
# <name>_v41.msh, <name>_v41_bin.msh. annulus_p2 is the annulus with second-order (tri6) elements.
set -euo pipefail
cd "$(dirname "$0")"
mesh() {  # mesh <name> <geo> <dim> [extra gmsh options]
  local name=$1 geo=$2 dim=$3; shift 3
  for v in 22 41; do
    gmsh "$geo" -"$dim" -format "msh$v" "$@" -o "${name}_v${v}.msh" -v 2
    gmsh "$geo" -"$dim" -format "msh$v" -bin "$@" -o "${name}_v${v}_bin.msh" -v 2
  done
}
mesh plate_hole plate_hole.geo 2
mesh annulus annulus.geo 2
mesh annulus_p2 annulus.geo 2 -order 2
mesh lshape lshape.geo 2
mesh cylinder cylinder.geo 3
# a slender cantilever (fem dynamics): only MSH 4.1
gmsh beam.geo -2 -format msh41 -o beam_v41.msh -v 2
# a partitioned file (2 partitions, METIS): its $PartitionedEntities must not change the mesh
gmsh plate_hole.geo -2 -part 2 -format msh41 -o plate_hole_part2_v41.msh -v 2
# physical groups as sets: cells and facets in two groups, an interior interface, an untagged side
for v in 22 41; do gmsh groups.geo -2 -format "msh$v" -o "groups_v${v}.msh" -v 2; done
