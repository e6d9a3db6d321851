#!/usr/bin/env bash
# The C++ unit tests of the libraries and the lab node, and the fuzz corpus replays, built with the
# `asan` preset (AddressSanitizer + UndefinedBehaviorSanitizer, every report fatal) and run by
# ctest. Tests that link the compute backends (the volunteer's, OpenCL's, the matmul check
# campaign's sample, the cheap audit's test, which computes BLAS values, the graph kind's GEMM
# nodes' test and a lab node test that borrows the volunteer's engine) are left to the ci preset:
# PoCL's JIT is not built for ASan, and leaving them out keeps the OpenCL stack out of this build.
# -O0 (the preset): a quarter less compile work than -O1 (about eight minutes on two cores) for
# about a minute and a half more of running; lib/verify and test_matmul_check, the longest test,
# stay at -O1 (alone: 78 s, against 168 to 305 s at -O0). The preset links the libraries as
# shared ones: each test program would otherwise carry its own instrumented lab node.
# Usage: scripts/test_sanitizers.sh [--discard] (after scripts/install_deps.sh). --discard removes
# the tree once its tests passed (scripts/test.sh: the disk it takes, mostly precompiled headers).
set -euo pipefail
discard=0
case "${1:-}" in
"") ;;
--discard) discard=1 ;;
*) echo "usage: scripts/test_sanitizers.sh [--discard]" >&2; exit 2 ;;
esac
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
build=build/asan
dirs=(core reference verify plan net labnode fuzz)
cmake --preset asan >/dev/null
# The tests of those folders; each runs the program of the same name.
mapfile -t tests < <(for dir in "${dirs[@]}"; do
    ctest --test-dir "$build/tests/$dir" --show-only=json-v1 |
        /usr/bin/python3 -c 'import json, sys; [print(t["name"]) for t in json.load(sys.stdin)["tests"]]'
done)
[ ${#tests[@]} -gt 0 ] || { echo "test_sanitizers: no tests found" >&2; exit 1; }
targets=(goblin-labnode)
run=()
for test in "${tests[@]}"; do
    case "$test" in
    matmul_check_campaign_sample | test_cheap_audit | test_sent_inputs | test_gemm_nodes) continue ;;
    *) targets+=("$test") ;;
    esac
    run+=("$test")
done
cmake --build --preset asan -j "$(nproc)" --target "${targets[@]}"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1"
export LSAN_OPTIONS="suppressions=$root/tests/support/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export QT_QPA_PLATFORM=offscreen
regex="^($(IFS='|'; echo "${run[*]}"))\$"
ctest --preset asan -j "$(nproc)" -R "$regex"
[ "$discard" = 0 ] || rm -rf "$build"
