#!/usr/bin/env bash
# The test command: installs what is missing, builds (preset ci), then runs every test:
# the format check, the C++ unit tests through ctest, the Python client + integration tests
# through pytest and the Debian packages' install test.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/install_deps.sh --test
# Rules a machine checks: the format and the Python client's type hints here, the layers in every
# build (cmake/check_layers.cmake).
bash scripts/check_format.sh
bash scripts/check_types.sh
bash scripts/build.sh ci
# The headless volunteer (-DGOBLIN_GUI=OFF, no Qt): only goblin-volunteer, for
# python/tests/test_headless_build.py (which fails under CI=true when it is missing).
cmake --preset nogui >/dev/null
cmake --build --preset nogui -j "$(nproc)"
export GOBLIN_BUILD_DIR="$root/build/ci"
# Qt tests need a runtime dir that only we can read.
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
chmod 0700 "$XDG_RUNTIME_DIR"
ctest --preset ci -j 2
.venv/bin/python -m pytest -q python/tests
# The three .deb files from the trees above (nothing recompiled), installed, run and removed;
# the wheel in a throwaway venv (installer/test-packages.sh, about a minute).
bash installer/test-packages.sh --reuse build/ci build/nogui
