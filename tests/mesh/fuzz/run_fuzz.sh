#!/bin/sh
# Run the mesh reader fuzzer for a while: run_fuzz.sh <fuzzer> <work dir> <seconds> <seed dirs...>
# New inputs go to <work dir>/corpus (never into the seed dirs); a crash leaves its input in
# <work dir> and fails the test. Exit 77 (ctest: skipped) when there is no fuzzer.
fuzzer=$1 work=$2 seconds=$3
shift 3
if [ -z "$fuzzer" ] || [ ! -x "$fuzzer" ]; then
  echo "mesh.fuzz_read skipped: clang++-14 with libFuzzer not available (./scripts/install-deps.sh fuzz)"
  exit 77
fi
mkdir -p "$work/corpus"
exec "$fuzzer" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
  -artifact_prefix="$work/" "$work/corpus" "$@"
