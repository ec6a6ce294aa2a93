#!/usr/bin/env bash
# Install the Debian packages the build needs, only those that are missing (a second run costs
# one dpkg query). Run as root, or with sudo available.
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config
  libeigen3-dev libspectra-dev libsuitesparse-dev libmetis-dev libopenblas-dev
  libfmt-dev libcli11-dev nlohmann-json3-dev libfast-float-dev zlib1g-dev libmuparser-dev
  libgtest-dev libgmock-dev libbenchmark-dev
)
# Extra groups: fuzz (clang for the libFuzzer targets), gmsh, dist (MPI + PETSc with MUMPS and
# hypre, SLEPc, for libfem_dist: 19 s here from Debian's archive), python (the module: pybind11, NumPy,
# SciPy, pytest, DLPack's header; jsonschema, what apps.json_schema validates fem's --json output with), torch
# (PyTorch 1.13 for fem.torch, optional), format (clang-format 14, what the format.clang_format
# test checks every tracked C++ file with), plot (matplotlib: scripts/render_vtu.py, the pictures
# of the README and docs/gallery.md, and the apps.render_vtu_png test)
for group in "$@"; do
  case "$group" in
    fuzz) packages+=(clang-14 libclang-rt-14-dev) ;;
    gmsh) packages+=(gmsh) ;;
    dist) packages+=(libpetsc-real-dev libslepc-real-dev libopenmpi-dev openmpi-bin) ;;
    python) packages+=(python3-dev python3-numpy python3-scipy pybind11-dev python3-pybind11 python3-pytest python3-jsonschema libdlpack-dev) ;;
    torch) packages+=(python3-torch) ;;
    format) packages+=(clang-format-14) ;;
    plot) packages+=(python3-matplotlib) ;;
    *) echo "install-deps.sh: unknown group '$group' (known: fuzz, gmsh, dist, python, torch, format, plot)" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "Installing missing packages: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps.sh: run as root or install sudo" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
