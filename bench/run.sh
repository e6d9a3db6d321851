#!/usr/bin/env bash
# Builds and runs the benchmarks. OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE are unset together for
# this command only (they halve OpenBLAS on this CPU; STACK.md); tests and CI keep them.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/build.sh ci
bash scripts/install_deps.sh --bench
exec env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python bench/bench_matmul.py "$@"
