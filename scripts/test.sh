#!/usr/bin/env bash
# The test command: installs what is missing, then runs every test: the format and type checks,
# the C++ unit tests under ASan + UBSan, then (preset ci) again through ctest,
# the Python client + integration tests through pytest and the Debian packages' install test.
# --quick, for the inner loop: the format and type checks and the unit tests only (C++ tests
# labelled unit but not integration or gpu, Python tests not marked integration).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
quick=0
case "${1:-}" in
"") ;;
--quick) quick=1 ;;
*) echo "usage: scripts/test.sh [--quick]" >&2; exit 2 ;;
esac
bash scripts/install_deps.sh --test
# A run writes up to about 4 GiB here (measured: the asan tree beside the compiler cache, then,
# that tree removed, the ci tree beside the cache and .venv): a disk with less free is named now,
# not by a link step 20 minutes on.
free_kib="$(df -Pk "$root" | awk 'NR == 2 {print $4}')"
if [ "$free_kib" -lt $((5 * 1024 * 1024)) ]; then
  echo "test.sh: warning: $((free_kib / 1024)) MiB free under $root; a run writes up to about" \
    "4 GiB (build/, .venv)" >&2
fi
# Rules a machine checks: the format and the Python client's type hints here, the layers in every
# build (cmake/check_layers.cmake).
bash scripts/check_format.sh
bash scripts/check_types.sh
# One compiler cache (in build/, this checkout's) for the builds below: the headless volunteer's
# tree compiles the libraries with the ci tree's flags, so it compiles only its own files.
# CCACHE_BASEDIR makes the two trees' paths alike; depend mode spares a preprocessor run per miss.
if command -v ccache >/dev/null; then
  export CMAKE_CXX_COMPILER_LAUNCHER="${CMAKE_CXX_COMPILER_LAUNCHER:-ccache}"
  export CCACHE_DIR="${CCACHE_DIR:-$root/build/ccache}" CCACHE_BASEDIR="$root" CCACHE_DEPEND=1
  export CCACHE_SLOPPINESS="pch_defines,time_macros,include_file_mtime,include_file_ctime"
fi
# Qt tests need a runtime dir that only we can read.
export XDG_RUNTIME_DIR="${XDG_RUNTIME_DIR:-$(mktemp -d)}"
chmod 0700 "$XDG_RUNTIME_DIR"
if [ "$quick" = 0 ]; then
  # The libraries' and the lab node's C++ tests and the fuzz corpus replays under ASan + UBSan,
  # first, in a tree removed once they passed: its precompiled headers (about 2 GB) and the ci
  # tree's (2.5 GB) never take the disk together.
  bash scripts/test_sanitizers.sh --discard
fi
bash scripts/build.sh ci
# Real model code (torchvision, transformers; pinned) for python/tests/test_real_models.py.
bash scripts/real_models_env.sh
export GOBLIN_BUILD_DIR="$root/build/ci"
if [ "$quick" = 1 ]; then
  ctest --preset ci -j 2 -L unit -LE 'integration|gpu'
  .venv/bin/python -m pytest -q -n 2 -m 'not integration' python/tests
  exit 0
fi
# The headless volunteer (-DGOBLIN_GUI=OFF, no Qt): only goblin-volunteer, for
# python/tests/test_headless_build.py (which fails under CI=true when it is missing).
cmake --preset nogui >/dev/null
cmake --build --preset nogui -j "$(nproc)"
ctest --preset ci -j 2
# Two workers (pytest-xdist): the system tests mostly wait on their processes (one worker kept
# the two cores under half busy), and each test or module starts its own node and folders.
.venv/bin/python -m pytest -q -n 2 --durations=15 python/tests
# The three .deb files from the trees above (nothing recompiled), installed, run and removed;
# the wheel in a throwaway venv (installer/test-packages.sh, about a minute).
bash installer/test-packages.sh --reuse build/ci build/nogui
