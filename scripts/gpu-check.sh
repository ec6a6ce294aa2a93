#!/usr/bin/env bash
# Everything the GPU path needs checked on a machine with an NVIDIA GPU, in one command.
#
#   scripts/gpu-check.sh              build with CUDA, then run every check (a GPU machine that
#                                     has the project's packages)
#   scripts/gpu-check.sh bundle [DIR] here, without a GPU: build the GPU tests and benchmarks with
#                                     CUDA (sm_80, sm_90) and copy them with the libraries they
#                                     load into DIR (default gpu-bundle/, git-ignored)
#   scripts/gpu-check.sh run [DIR]    on a bare GPU machine (the device tool's: nvcc but none of
#                                     Debian's packages): run the checks from the bundle, e.g.
#                                     run(command="scripts/gpu-check.sh run", carry=["gpu-bundle"])
#                                     (the bundle is git-ignored: make it in the same session,
#                                     from the commit under test; about 8 minutes on 2 cores)
#
# The checks:
#  1. registers, stack frames and spills of every device kernel (scripts/ptxas-report.py; the
#     assembly kernels against no local memory and at most 128 registers: reported, not fatal,
#     docs/ARCHITECTURE.md lists the ones left);
#  2. the GPU tests; the CUDA cases under compute-sanitizer memcheck and initcheck; the CUDA
#     cases repeated GPU_CHECK_REPEAT times (default 100: a race shows as a rare failure);
#  3. the full-table test, a table of 2^31 slots (FEM_TEST_HUGE=1, 26 GB of device memory), two
#     assemblies of a 32³ cube compared bitwise and for symmetry;
#  4. bench/gpu's CUDA rows (pattern build, first assembly, re-assembly on the device and back
#     to the host, coloured and atomic scatter) and the device hash-table benchmarks, with the
#     figures issue 20 asks for: inserts/s and finds/s at load 0.5 and re-assembly GB/s
#     against the card's HBM peak; the table op's C ABI on device arrays (BM_DeviceOp*).
# Python's CUDA cases (python/tests/test_hash_table.py, CUDA tensors through DLPack) need the
# module and PyTorch with CUDA, which the bare machine has not: run them where both are.
# Output to the terminal and to gpu-check.log (in $OUT as well when that is set). Exit status 0
# when every test passed.
set -uo pipefail
cd "$(dirname "$0")/.."
mode=${1:-all}
dir=${2:-gpu-bundle}
targets=(test_gpu test_gpu_assembly bench_gpu bench_hashtable)

build() {
  ./scripts/install-deps.sh >/dev/null
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DFEM_ENABLE_CUDA=ON -DFEM_ENABLE_PETSC=OFF \
    -DCMAKE_CUDA_FLAGS="-Xptxas -v" >/dev/null || return 1
  # ptxas reports through the build's output, so every CUDA source is compiled again (an
  # up-to-date build would report nothing): keep the output for the register table.
  cmake --build build-gpu --clean-first --parallel "$(nproc)" --target "${targets[@]}" > build-gpu/build.log 2>&1 ||
    { tail -40 build-gpu/build.log; return 1; }
  /usr/bin/env python3 scripts/ptxas-report.py build-gpu/build.log > build-gpu/ptxas.txt 2>&1 || true
}

bundle() {
  build || exit 1
  rm -rf "$dir" && mkdir -p "$dir/bin" "$dir/lib"
  cp build-gpu/tests/gpu/test_gpu build-gpu/tests/gpu/test_gpu_assembly build-gpu/bench/gpu/bench_gpu \
    build-gpu/bench/hashtable/bench_hashtable scripts/ptxas-report.py build-gpu/build.log "$dir/bin/"
  # The libraries they load, but glibc's own (the machine's must be at least as new as this one's).
  for exe in "$dir"/bin/test_* "$dir"/bin/bench_*; do ldd "$exe"; done | awk '/=> \// {print $3}' | sort -u |
    grep -vE '/(libc|libm|libdl|libpthread|librt|libmvec|ld-linux[^/]*)\.so' | while read -r lib; do
      cp -L "$lib" "$dir/lib/"
    done
  du -sh "$dir"
  echo "bundle: $dir (carry it to the GPU machine and run: scripts/gpu-check.sh run $dir)"
}

checks() {  # $1: folder of the executables
  local bin=$1 status=0
  step() { echo; echo "=== $*"; }
  fail() { echo "FAILED: $*"; status=1; }
  step "device"
  nvidia-smi --query-gpu=name,memory.total,clocks.max.memory --format=csv || fail "nvidia-smi"

  step "registers, stack and spills"
  local ptxlog=$bin/build.log
  [ -f "$ptxlog" ] || ptxlog=build-gpu/build.log
  python3 "$bin/ptxas-report.py" "$ptxlog" --check 'CellAssembly' 2>&1 ||
    echo "(the assembly kernels above still use local memory or more than 128 registers)"

  local filter='*cuda*:*Cuda*'
  for t in test_gpu test_gpu_assembly; do
    step "$t"
    "$bin/$t" --gtest_brief=1 || fail "$t"
  done
  if command -v compute-sanitizer >/dev/null; then
    for tool in memcheck initcheck; do
      for t in test_gpu test_gpu_assembly; do
        step "compute-sanitizer --tool $tool $t (CUDA cases)"
        compute-sanitizer --tool "$tool" --error-exitcode 9 "$bin/$t" --gtest_filter="$filter" --gtest_brief=1 ||
          fail "$tool $t"
      done
    done
  else
    fail "compute-sanitizer not found (it ships with the CUDA toolkit)"
  fi
  step "CUDA cases repeated ${GPU_CHECK_REPEAT:-100} times"
  for t in test_gpu test_gpu_assembly; do
    "$bin/$t" --gtest_filter="$filter" --gtest_repeat="${GPU_CHECK_REPEAT:-100}" --gtest_brief=1 >/dev/null ||
      fail "repeat $t"
  done
  step "full table, 2^31 slots, a 32³ cube twice"
  "$bin/test_gpu" --gtest_filter='*FullTable*cuda*' || fail "full table"
  FEM_TEST_HUGE=1 "$bin/test_gpu" --gtest_filter='*TwoTo31*cuda*' || fail "2^31 slots"
  "$bin/test_gpu_assembly" --gtest_filter='*Cube32*cuda*' || fail "32³ cube"

  step "bench/gpu, CUDA rows"
  "$bin/bench_gpu" --benchmark_filter='/2/' --benchmark_counters_tabular=true || fail "bench_gpu"
  step "device hash table, loads 25/50/75%"
  "$bin/bench_hashtable" --benchmark_filter='BM_Device' --benchmark_counters_tabular=true || fail "bench_hashtable"

  step "summary"
  echo "goals on an H100: >= 2 G inserts/s and >= 4 G finds/s at load 0.5 (items_per_second of"
  echo "BM_DeviceInsert/50 and BM_DeviceFind/50; the op path on device arrays, BM_DeviceOpInsert/50 and"
  echo "BM_DeviceOpFind/50, within 5% of them); re-assembly of P1 tets >= 50% of HBM (of_peak of"
  echo "BM_Reassembly/2/*/0); results equal to the host's to 1e-12 and bitwise symmetric (the tests)."
  [ "$status" = 0 ] && echo "gpu-check: all passed" || echo "gpu-check: FAILURES above"
  return "$status"
}

log=${OUT:-.}/gpu-check.log
case "$mode" in
  bundle) bundle ;;
  run)
    [ -d "$dir/bin" ] || { echo "no bundle in $dir: make one with scripts/gpu-check.sh bundle"; exit 1; }
    export LD_LIBRARY_PATH="$(cd "$dir/lib" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    checks "$dir/bin" 2>&1 | tee "$log"
    exit "${PIPESTATUS[0]}" ;;
  all)
    { build || exit 1; mkdir -p build-gpu/check-bin;
      for p in tests/gpu/test_gpu tests/gpu/test_gpu_assembly bench/gpu/bench_gpu bench/hashtable/bench_hashtable; do
        ln -sf "$PWD/build-gpu/$p" build-gpu/check-bin/; done
      cp scripts/ptxas-report.py build-gpu/build.log build-gpu/check-bin/
      checks build-gpu/check-bin; } 2>&1 | tee "$log"
    exit "${PIPESTATUS[0]}" ;;
  *) echo "usage: scripts/gpu-check.sh [bundle [DIR] | run [DIR]]"; exit 2 ;;
esac
