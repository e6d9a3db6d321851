#!/usr/bin/env bash
# Fails when mypy finds a type error in the goblin package: python/pyproject.toml's [tool.mypy]
# (every def of the public modules annotated, bodies checked). Debian's mypy (install_deps --test),
# run with .venv's python so that it reads numpy's and websockets' types; the cache in
# build/mypy-cache makes a rerun take about 2 s (a cold run about 10 s).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v mypy >/dev/null || { echo "check_types: mypy is not installed (scripts/install_deps.sh --test)" >&2; exit 1; }
bash scripts/python_env.sh
cd python
mypy --python-executable ../.venv/bin/python --cache-dir ../build/mypy-cache goblin
