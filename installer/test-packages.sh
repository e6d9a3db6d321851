#!/usr/bin/env bash
# The packages' end-to-end test: builds the three .deb files, installs them with apt,
# runs the installed goblin-labnode (init + serve on loopback with a temporary database, not
# through systemd) and the installed headless volunteer, and multiplies two matrices with the
# gpu-goblin wheel installed in a throwaway venv, checked against numpy. Then systemd-analyze
# (verify, security) on the installed units, lintian on the packages, and apt-get remove.
# Usage: installer/test-packages.sh [--reuse GUI_TREE NOGUI_TREE]   (arguments go to build-debs.sh)
# Needs root or sudo (apt-get); leaves no package installed, also when it fails.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
packages=(gpu-goblin-labnode gpu-goblin-volunteer gpu-goblin-volunteer-headless)
work="$(mktemp -d)"
pids=()
step() { echo "test-packages: $*"; }
fail() { echo "test-packages: FAILED: $*" >&2; exit 1; }

remove_packages() {
    local installed=()
    for package in "${packages[@]}"; do
        if dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed"; then
            installed+=("$package")
        fi
    done
    [ ${#installed[@]} -eq 0 ] && return 0
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get remove -y -qq "${installed[@]}" >/dev/null
}
cleanup() {
    local status=$?
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    remove_packages || true
    "${sudo[@]}" dpkg --purge "${packages[@]}" >/dev/null 2>&1 || true
    if [ $status -ne 0 ]; then
        for log in "$work"/*.log; do [ -f "$log" ] && { echo "--- $log"; tail -n 30 "$log"; }; done
    fi
    rm -rf "$work"
    exit $status
}
trap cleanup EXIT

step "building the packages"
bash installer/build-debs.sh "$@" >/dev/null
debs=("$root"/build/debs/*.deb)
[ ${#debs[@]} -eq 3 ] || fail "expected 3 packages in build/debs, found ${#debs[@]}"

step "lintian (errors and warnings fail; installer/README.md explains the info tags)"
lintian --fail-on error,warning "${debs[@]}" >"$work/lintian.log" 2>&1 ||
    { cat "$work/lintian.log"; fail "lintian"; }

step "apt-get install ./build/debs/*.deb"
remove_packages
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${debs[@]}" >"$work/apt.log" 2>&1 ||
    fail "apt-get install"
for program in goblin-labnode goblin-volunteer goblin-volunteer-headless; do
    [ "$(command -v "$program")" = "/usr/bin/$program" ] || fail "$program is not /usr/bin/$program"
    if ldd "/usr/bin/$program" | grep -q "not found"; then fail "$program: a library is missing"; fi
done
if ldd /usr/bin/goblin-volunteer-headless | grep -q libQt; then fail "the headless volunteer links Qt"; fi
dpkg-query -W -f='${Status}' libqt6svg6 | grep -q "ok installed" || fail "libqt6svg6 not installed"
[ -f /usr/share/applications/goblin-volunteer.desktop ] || fail "no desktop entry"
[ -f /usr/share/icons/hicolor/scalable/apps/goblin-volunteer.svg ] || fail "no hicolor icon"
# The app writes its start-at-login entry from this template: its command must be the installed one.
autostart="app/volunteer-gui/resources/goblin-volunteer-autostart.desktop"
exec_command="$(sed -n 's/^Exec=\([^ ]*\).*/\1/p' "$autostart")"
[ "$(command -v "$exec_command")" = /usr/bin/goblin-volunteer ] ||
    fail "the autostart entry runs '$exec_command', not the installed /usr/bin/goblin-volunteer"
getent passwd gpu-goblin >/dev/null || fail "postinst made no system user gpu-goblin"
# The SMTP relay (libcurl) is linked, not loaded at run time: dpkg-shlibdeps must have seen it.
dpkg-query -W -f='${Depends}' gpu-goblin-labnode | grep -q "libcurl" ||
    fail "gpu-goblin-labnode does not depend on libcurl"
# The dashboard's charts: Chart.js from libjs-chart.js, read by the node at start-up.
[ -f /usr/share/javascript/chart.js/chart.min.js ] ||
    fail "installing gpu-goblin-labnode brought no /usr/share/javascript/chart.js/chart.min.js"
# The config may hold the SMTP relay's password.
[ "$(stat -c '%a %U:%G' /etc/gpu-goblin/labnode.conf)" = "640 root:gpu-goblin" ] ||
    fail "/etc/gpu-goblin/labnode.conf is $(stat -c '%a %U:%G' /etc/gpu-goblin/labnode.conf), not 640 root:gpu-goblin"
# Every option of serve is a key of the packaged config (set or commented out), and the manual
# page documents the staff's newer commands and options.
for key in $(goblin-labnode serve --help | sed -nE 's/^  (-[a-z] \[ )?--([a-z-]+).*/\2/p'); do
    case "$key" in help | db | config) continue ;; esac
    grep -Eq "^(# )?$key = " /etc/gpu-goblin/labnode.conf ||
        fail "serve --$key is not in /etc/gpu-goblin/labnode.conf"
done
manual="$(LC_ALL=C MANWIDTH=200 man -l /usr/share/man/man1/goblin-labnode.1.gz 2>/dev/null | col -b)"
for item in "--retain-hours" "--access-requests" "--smtp-url" "--smtp-from" "jobs cancel ID" \
    "jobs purge ID" "requests list" "requests show ID" "requests approve ID" "requests refuse ID" \
    "--public-url" "--json" ".goblin-database" "--second-opinion-seconds"; do
    grep -qF -- "$item" <<<"$manual" || fail "goblin-labnode(1) does not document '$item'"
done
grep -q "^License: PolyForm-Noncommercial-1.0.0" /usr/share/doc/gpu-goblin-labnode/copyright ||
    fail "the copyright file does not name PolyForm-Noncommercial-1.0.0"

step "systemd-analyze verify and security on the installed units"
units=(/lib/systemd/system/gpu-goblin-labnode.service
    /lib/systemd/system/gpu-goblin-volunteer-headless.service)
systemd-analyze verify "${units[@]}" >"$work/verify.log" 2>&1 || fail "systemd-analyze verify"
[ ! -s "$work/verify.log" ] || { cat "$work/verify.log"; fail "systemd-analyze verify printed warnings"; }
for unit in "${units[@]}"; do
    # Exposure 0-10 (lower is safer); both units measure 1.1.
    systemd-analyze security --offline=yes --threshold=20 "$unit" >"$work/security.log" 2>&1 ||
        { cat "$work/security.log"; fail "$unit: exposure above 2.0"; }
    grep -o "Overall exposure level for .*" "$work/security.log"
done

step "the installed goblin-labnode: init, serve with the packaged config, researcher add"
db="$work/node.db"
goblin-labnode init --db "$db" >"$work/init.log" 2>&1 || fail "init"
# The unit's ExecStartPre relies on this: init refuses an existing database.
if goblin-labnode init --db "$db" >/dev/null 2>&1; then fail "a second init succeeded"; fi
goblin-labnode serve --config /etc/gpu-goblin/labnode.conf --db "$db" --listen 127.0.0.1:0 \
    >"$work/node.log" 2>&1 &
pids+=($!)
port=""
for _ in $(seq 300); do
    port="$(sed -n 's/^goblin-labnode listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$work/node.log")"
    [ -n "$port" ] && break
    kill -0 "${pids[0]}" 2>/dev/null || fail "goblin-labnode serve exited"
    sleep 0.1
done
[ -n "$port" ] || fail "goblin-labnode serve did not listen within 30 s"
token="$(goblin-labnode researcher add packages@lab.example --db "$db")"

step "the installed headless volunteer"
XDG_CACHE_HOME="$work/cache" goblin-volunteer-headless --headless --node "ws://127.0.0.1:$port" \
    --config-dir "$work/volunteer" --threads 1 >"$work/volunteer.log" 2>&1 &
pids+=($!)

step "the gpu-goblin wheel in a throwaway venv: a verified matmul"
/usr/bin/python3 -m build --no-isolation --outdir "$work/dist" python >"$work/wheel.log" 2>&1 ||
    fail "python -m build"
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check "$work"/dist/*.whl \
    >>"$work/wheel.log" 2>&1 || fail "pip install of the wheel"
(cd "$work" && GOBLIN_TOKEN="$token" GOBLIN_NODE="ws://127.0.0.1:$port" "$work/venv/bin/python" - <<'PY'
import importlib.metadata as metadata
import os
import pathlib
import numpy as np
import goblin

here = pathlib.Path(goblin.__file__).resolve().parent
assert "site-packages" in str(here), f"goblin imported from {here}, not the installed wheel"
assert (here / "py.typed").is_file(), "the wheel has no py.typed"
assert metadata.metadata("gpu-goblin")["License"] == "PolyForm-Noncommercial-1.0.0"
rng = np.random.default_rng(13)
A = rng.standard_normal((300, 200)).astype(np.float32)
B = rng.standard_normal((200, 250)).astype(np.float32)
with goblin.connect(os.environ["GOBLIN_NODE"], token=os.environ["GOBLIN_TOKEN"]) as client:
    C = client.matmul(A, B, timeout=120)
    verdicts = client.last_summary["verdicts"]
exact = A.astype(np.float64) @ B.astype(np.float64)
error = float(np.max(np.abs(C - exact)))
assert C.shape == (300, 250) and error < 1e-3, f"max error {error}"
print(f"test-packages: matmul 300x200x250 verified by the node ({verdicts}), max error {error:.2e}")
PY
) || fail "the wheel's matmul"

step "stopping the node and the volunteer"
kill -TERM "${pids[1]}" "${pids[0]}"
for pid in "${pids[@]}"; do wait "$pid" || fail "process $pid exited with $?"; done
pids=()
grep -q "stopped$" "$work/node.log" || fail "the node did not stop cleanly"
grep -Eq "stopped: [1-9][0-9]* task\(s\) computed" "$work/volunteer.log" ||
    fail "the installed headless volunteer computed no task"

step "apt-get remove"
remove_packages
for program in goblin-labnode goblin-volunteer goblin-volunteer-headless; do
    [ ! -e "/usr/bin/$program" ] || fail "/usr/bin/$program is still there after remove"
done
step "passed"
