#!/usr/bin/env bash
# Every tracked C and C++ file is formatted by the checked-in .clang-format with Debian's
# clang-format 14 (another version formats differently): exit 1 naming the files that are not
# (fix them with `clang-format-14 -i FILE`), 77 (skipped) when clang-format-14 is missing
# (scripts/install-deps.sh format). Run by ctest as `format.clang_format`.
set -euo pipefail
cd "$(dirname "$0")/.."
cf=$(command -v clang-format-14 || true)
if [ -z "$cf" ]; then
  echo "clang-format-14 not found (scripts/install-deps.sh format): not checked"
  exit 77
fi
patterns=('*.cpp' '*.hpp' '*.h' '*.c' '*.cu' '*.cuh')
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- "${patterns[@]}")
else  # a source tree without git: the project's own folders
  mapfile -t files < <(find apps bench examples fem gpu python shared tests \
    \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.c' -o -name '*.cu' -o -name '*.cuh' \) | sort)
fi
bad=()
for f in "${files[@]}"; do
  [ -f "$f" ] || continue
  "$cf" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "${#bad[@]} of ${#files[@]} files are not formatted (clang-format-14 -i FILE):"
  printf '  %s\n' "${bad[@]}"
  exit 1
fi
echo "${#files[@]} files formatted"
