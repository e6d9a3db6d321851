#!/usr/bin/env bash
# Installs what is missing (Debian packages, the Python venv) and builds with a CMake preset
# (default: ci, warnings as errors). Usage: scripts/build.sh [preset]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
preset="${1:-ci}"
cd "$root"
bash scripts/install_deps.sh
bash scripts/python_env.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"
