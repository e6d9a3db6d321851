#!/usr/bin/env bash
# Fails, listing the files, when a tracked C++ source is not formatted as the repo's .clang-format
# says (Debian's clang-format-14, so every machine formats alike). Fix with: scripts/check_format.sh --fix
# Also fails when a file of app/, lib/ or python/goblin/ is over 400 lines.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
format=clang-format-14
command -v "$format" >/dev/null || { echo "check_format: $format is not installed (scripts/install_deps.sh --test)" >&2; exit 1; }
mapfile -t files < <(git ls-files -- '*.cpp' '*.hpp' '*.h')
if [ "${1:-}" = "--fix" ]; then
  "$format" -i "${files[@]}"
  exit 0
fi
bad=()
for file in "${files[@]}"; do
  if ! "$format" --dry-run --Werror "$file" >/dev/null 2>&1; then
    bad+=("$file")
  fi
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "check_format: ${#bad[@]} file(s) not formatted as .clang-format says (scripts/check_format.sh --fix):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
# STYLE: small files with one job. The code of the apps, the libraries and the Python package stays
# within 400 lines a file (tests may run longer: a unit's cases read best together). Kernel sources
# (lib/*/kernels/) are exempt: each is embedded whole into the OpenCL programs as one string.
limit=400
# One wc for every file (its "total" lines dropped), not one per file.
mapfile -t long < <(git ls-files -z -- 'app/*.cpp' 'app/*.hpp' 'app/*.h' 'lib/*.cpp' 'lib/*.hpp' \
    'lib/*.h' 'python/goblin/*.py' | grep -zv '^lib/[^/]*/kernels/' | xargs -0 wc -l |
  awk -v limit="$limit" '$2 != "total" && $1 > limit { print $2 " (" $1 " lines)" }')
if [ ${#long[@]} -gt 0 ]; then
  echo "check_format: ${#long[@]} file(s) over $limit lines (split each into files with one job):" >&2
  printf '  %s\n' "${long[@]}" >&2
  exit 1
fi
echo "check_format: ${#files[@]} files formatted, none over $limit lines"
