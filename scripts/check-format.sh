#!/usr/bin/env bash
# Checks that every C++ file of the project is formatted as .clang-format says (clang-format 14).
#   scripts/check-format.sh          list the files that differ; exit 1 if any
#   scripts/check-format.sh --fix    reformat them in place
set -euo pipefail
cd "$(dirname "$0")/.."
CF=${CLANG_FORMAT:-clang-format-14}
command -v "$CF" >/dev/null || { echo "check-format: $CF not found (scripts/setup.sh installs clang-format-14)" >&2; exit 2; }
mapfile -t files < <(git ls-files 'src/*.cpp' 'src/*.h' 'apps/*.cpp' 'apps/*.h' 'tests/*.cpp' 'tests/*.h' 2>/dev/null ||
                     find src apps tests -name '*.cpp' -o -name '*.h')
if [ "${1:-}" = "--fix" ]; then
  "$CF" -i "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  "$CF" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "check-format: ${#bad[@]} file(s) not formatted as .clang-format says (fix: scripts/check-format.sh --fix):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check-format: ${#files[@]} files formatted"
