#!/usr/bin/env bash
# Builds the three Debian packages into build/debs/: gpu-goblin-labnode and gpu-goblin-volunteer
# from a Qt build tree, gpu-goblin-volunteer-headless from a GOBLIN_GUI=OFF tree (installer/README.md).
# Usage: installer/build-debs.sh                   Release trees of its own, build/deb-gui and
#                                                  build/deb-nogui (hardened, warnings as errors)
#        installer/build-debs.sh --reuse GUI NOGUI package two trees already built, e.g.
#                                                  build/ci build/nogui: nothing is compiled
# GOBLIN_BUILD_LOCK=FILE runs each compile step under `flock FILE` (a machine shared by builders).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
out="$root/build/debs"

if [ "${1:-}" = "--reuse" ]; then
    [ $# -eq 3 ] || { echo "usage: $0 --reuse GUI_TREE NOGUI_TREE" >&2; exit 2; }
    gui="$(cd "$2" && pwd)"
    nogui="$(cd "$3" && pwd)"
    # The manual pages, copyright and changelog are made at configure time: re-run configure when
    # one of them (or a CMakeLists) changed since the tree's last build, or they go out stale.
    # Ninja's own check (the build.ninja target) does nothing when nothing changed.
    for tree in "$gui" "$nogui"; do
        if [ -f "$tree/build.ninja" ] && [ -f "$tree/CPackConfig.cmake" ]; then
            cmake --build "$tree" --target build.ninja >/dev/null
        else
            cmake "$tree" >/dev/null
        fi
    done
else
    [ $# -eq 0 ] || { echo "usage: $0 [--reuse GUI_TREE NOGUI_TREE]" >&2; exit 2; }
    bash scripts/install_deps.sh
    gui="$root/build/deb-gui"
    nogui="$root/build/deb-nogui"
    # Debian's hardening (dpkg-buildflags): fortified libc calls, stack protector, full RELRO.
    common=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DGOBLIN_WARNINGS_AS_ERRORS=ON
        "-DCMAKE_CXX_FLAGS=-D_FORTIFY_SOURCE=2 -fstack-protector-strong"
        "-DCMAKE_EXE_LINKER_FLAGS=-Wl,-z,relro,-z,now")
    lock=()
    [ -z "${GOBLIN_BUILD_LOCK:-}" ] || lock=(flock "$GOBLIN_BUILD_LOCK")
    cmake -S . -B "$gui" "${common[@]}" -DGOBLIN_BUILD_TESTS=OFF >/dev/null
    "${lock[@]}" cmake --build "$gui" --target goblin-labnode -j "$(nproc)"
    "${lock[@]}" cmake --build "$gui" --target goblin-volunteer -j "$(nproc)"
    cmake -S . -B "$nogui" "${common[@]}" -DGOBLIN_GUI=OFF >/dev/null
    "${lock[@]}" cmake --build "$nogui" --target goblin-volunteer -j "$(nproc)"
fi
for binary in "$gui/app/labnode/goblin-labnode" "$gui/app/volunteer-gui/goblin-volunteer" \
    "$nogui/app/volunteer-gui/goblin-volunteer"; do
    [ -x "$binary" ] || { echo "build-debs: $binary is not built" >&2; exit 1; }
done
if grep -q '^GOBLIN_GUI:BOOL=OFF' "$gui/CMakeCache.txt" ||
    ! grep -q '^GOBLIN_GUI:BOOL=OFF' "$nogui/CMakeCache.txt"; then
    echo "build-debs: $gui must be a GOBLIN_GUI=ON tree and $nogui a GOBLIN_GUI=OFF one" >&2
    exit 1
fi

# One cpack run over both trees: each contributes its own components (installer/CMakeLists.txt).
rm -rf "$out" "$root/build/cpack"
mkdir -p "$out"
cpack --config "$gui/CPackConfig.cmake" -B "$root/build/cpack" \
    -D "CPACK_INSTALL_CMAKE_PROJECTS=$gui;goblin;gui;/;$nogui;goblin;nogui;/" \
    -D "CPACK_COMPONENTS_GUI=labnode;volunteer" -D "CPACK_COMPONENTS_NOGUI=headless" \
    -D "CPACK_OUTPUT_FILE_PREFIX=$out" >"$root/build/cpack.log" 2>&1 ||
    { cat "$root/build/cpack.log" >&2; exit 1; }
rm -rf "$root/build/cpack"
count=$(find "$out" -maxdepth 1 -name '*.deb' | wc -l)
[ "$count" -eq 3 ] || { cat "$root/build/cpack.log" >&2; echo "build-debs: $count packages, not 3" >&2; exit 1; }
ls -1 "$out"/*.deb
