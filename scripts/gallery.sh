#!/usr/bin/env bash
# The gallery: one fem run per driver (results in out/gallery/), each rendered by
# scripts/render_vtu.py to docs/gallery/DRIVER.png, and docs/gallery.md written from the same
# commands, so that the page shows exactly what this script runs.
#   scripts/gallery.sh            run, render, write docs/gallery/*.png and docs/gallery.md
#   scripts/gallery.sh --check    only check that docs/gallery.md is what this script writes (no runs)
# Needs the fem executable (./run.sh builds it) and matplotlib (scripts/install-deps.sh plot).
set -euo pipefail
cd "$(dirname "$0")/.."

drivers=() captions=() runs=() renders=()
# entry DRIVER CAPTION FEM_COMMAND RENDER_COMMAND
entry() { drivers+=("$1"); captions+=("$2"); runs+=("$3"); renders+=("$4"); }

entry poisson \
  "−Δu = 1 on an L-shaped domain with u = 0 on its boundary (\`meshes/lshape_v41.msh\`, P2): the solution and 14 filled contours; the re-entrant corner bends the level lines." \
  "./build/apps/fem poisson meshes/lshape_v41.msh --order 2 --source 1 --dirichlet all=0 --output out/gallery/poisson.vtu" \
  "scripts/render_vtu.py out/gallery/poisson.vtu docs/gallery/poisson.png --width 600 --levels 14 --title 'poisson: −Δu = 1, u = 0 on the boundary'"

entry heat \
  "Heat entering an annulus of two materials from its inner circle (u = 1; u = 0 on the outer one, 0 at t = 0), the right half a hundred times as conductive as the left (k = 10 and 0.1): at t = 0.04, the last of 10 backward-Euler steps (the \`.pvd\` series' last frame), it has crossed the right half and barely entered the left. The small undershoot below 0 at the front is the discretization's: a consistent mass matrix with a short time step has no discrete maximum principle." \
  "./build/apps/fem heat meshes/annulus_v41.msh --dt 0.004 --steps 10 --initial 0 --dirichlet inner=1 --dirichlet outer=0 --coefficient left_material=0.1 --coefficient right_material=10 --output out/gallery/heat.pvd" \
  "scripts/render_vtu.py out/gallery/heat.pvd docs/gallery/heat.png --width 600 --title 'heat: two materials (k = 0.1 | 10), t = 0.04'"

entry nonlinear \
  "Bratu's problem −Δu = λ eᵘ, u = 0 on the boundary, at λ = 6 (close to the fold near 6.8), reached by continuation in λ from 0; Newton's method at each step." \
  "./build/apps/fem nonlinear gen:square-tri3:48 --lambda 6 --continuation --output out/gallery/nonlinear.vtu" \
  "scripts/render_vtu.py out/gallery/nonlinear.vtu docs/gallery/nonlinear.png --width 600 --title 'nonlinear: Bratu, λ = 6'"

entry elasticity \
  "A plate with a hole (plane stress, P2, E = 1, ν = 0.3) clamped on the left and pulled to the right (traction 1): drawn deformed (the displacement magnified to 10% of the plate; dashed: undeformed) and coloured by the cell-averaged von Mises stress, highest beside the hole." \
  "./build/apps/fem elasticity meshes/plate_hole_v41.msh --order 2 --plane stress --fixed left --traction right=1,0 --output out/gallery/elasticity.vtu" \
  "scripts/render_vtu.py out/gallery/elasticity.vtu docs/gallery/elasticity.png --width 600 --field von_mises --title 'elasticity: von Mises stress, deformed'"

page() {
  cat <<'EOF'
# Gallery

One picture per `fem` driver, each with the two commands that make it: the run (results in
`out/gallery/`) and its rendering by `scripts/render_vtu.py` (matplotlib: the field on the cells
split into triangles, a colour bar named after the field, the mesh outline; a displacement draws
the deformed shape). `scripts/gallery.sh` runs these commands, in this order, from the repository
root and writes this page from them (do not edit it by hand: edit the script). It needs the `fem`
executable (`./run.sh` builds it) and matplotlib (`scripts/install-deps.sh plot`).
EOF
  for i in "${!drivers[@]}"; do
    printf '\n## %s\n\n![%s](gallery/%s.png)\n\n%s\n\n```sh\n%s\n%s\n```\n' "${drivers[i]}" "${drivers[i]}" \
      "${drivers[i]}" "${captions[i]}" "${runs[i]}" "${renders[i]}"
  done
}

if [ "${1:-}" = "--check" ]; then
  if ! diff -u docs/gallery.md <(page); then
    echo "gallery.sh: docs/gallery.md is not what scripts/gallery.sh writes: run scripts/gallery.sh" >&2
    exit 1
  fi
  echo "docs/gallery.md lists the commands scripts/gallery.sh runs"
  exit 0
fi
[ $# -eq 0 ] || { echo "usage: scripts/gallery.sh [--check]" >&2; exit 2; }
[ -x ./build/apps/fem ] || { echo "gallery.sh: ./build/apps/fem is not built (./run.sh builds it)" >&2; exit 1; }

mkdir -p out/gallery docs/gallery
for i in "${!drivers[@]}"; do
  echo "+ ${runs[i]}"
  eval "${runs[i]}"
  echo "+ ${renders[i]}"
  eval "${renders[i]}"
done
page >docs/gallery.md
echo "wrote docs/gallery.md and docs/gallery/{$(IFS=,; echo "${drivers[*]}")}.png"
