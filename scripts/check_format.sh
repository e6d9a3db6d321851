#!/usr/bin/env bash
# Fails, listing the files, when a tracked C++ source is not formatted as the repo's .clang-format
# says (Debian's clang-format-14, so every machine formats alike). Fix with: scripts/check_format.sh --fix
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
echo "check_format: ${#files[@]} files formatted"
