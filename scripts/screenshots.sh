#!/usr/bin/env bash
# Saves PNG screenshots into docs/screenshots/: the volunteer app's window pages (attached to a real
# lab node computing a real job), the tray icon in each state (under Xvfb with trayer as the tray
# host), and the lab node's live dashboard (headless Chromium, with a headless volunteer computing).
# Needs scripts/screenshots_deps.sh, Chromium (install_deps.sh --test) and a built build/ci.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build/ci}"
out="$root/docs/screenshots"
tool="$build/app/volunteer-gui/gui/goblin-volunteer-screenshots"
labnode="$build/app/labnode/goblin-labnode"
work="$(mktemp -d)"
pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
mkdir -p "$out" "$work/xdg" && chmod 700 "$work/xdg"
export XDG_RUNTIME_DIR="$work/xdg"

# Two lab nodes (the volunteer lends to both, 3:1), the first with a job to compute, so the
# status page shows a task in progress.
start_node() { # NAME: starts a lab node with its database and log in $work/NAME.*
  [ -f "$work/$1.db" ] || "$labnode" init --db "$work/$1.db" >/dev/null
  "$labnode" serve --db "$work/$1.db" --listen 127.0.0.1:0 --data-dir "$work/$1-data" >"$work/$1.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 50); do grep -q "listening on" "$work/$1.log" && break; sleep 0.2; done
}
"$labnode" init --db "$work/node.db" >/dev/null
token="$("$labnode" researcher add shots@example.org --db "$work/node.db")"
start_node node
start_node second
url="ws://$(sed -n 's/^goblin-labnode listening on //p' "$work/node.log" | head -1)"
url2="ws://$(sed -n 's/^goblin-labnode listening on //p' "$work/second.log" | head -1)"
if [ -x "$root/.venv/bin/python" ]; then
  PYTHONPATH="$root/python" "$root/.venv/bin/python" -c '
import sys, numpy as np, goblin
A = np.random.rand(8192, 4096).astype(np.float32); B = np.random.rand(4096, 4096).astype(np.float32)
with goblin.connect(sys.argv[1], token=sys.argv[2], timeout=600) as c: c.matmul(A, B, tile=[1024, 1024])
' "$url" "$token" >"$work/researcher.log" 2>&1 &
  pids+=($!)
fi

# Window pages: offscreen is enough for QWidget::grab.
# The first OpenCL device (PoCL's CPU device where there is no GPU) computes at 60 % of its time.
QT_QPA_PLATFORM=offscreen "$tool" "$out" "$url" "$url2" --gpu

# The live dashboard while a headless volunteer computes the job: Chromium runs the page's polls
# for ten seconds of virtual time, then saves it.
if command -v chromium >/dev/null; then
  "$build/app/volunteer-gui/goblin-volunteer" --headless --node "$url" --config-dir "$work/headless" \
    --threads 1 --slots 2 >"$work/headless.log" 2>&1 &
  pids+=($!)
  sleep 6
  chromium --headless=new --no-sandbox --disable-gpu --hide-scrollbars --window-size=1280,1900 \
    --virtual-time-budget=10000 --screenshot="$out/dashboard.png" "http://${url#ws://}/" \
    >"$work/chromium.log" 2>&1
fi

# Tray states: Xvfb + trayer (top right), then grabs of that strip.
display=":$((90 + RANDOM % 9))"
Xvfb "$display" -screen 0 1024x300x24 -nolisten tcp >"$work/xvfb.log" 2>&1 &
pids+=($!)
sleep 1
DISPLAY="$display" trayer --edge top --align right --widthtype pixel --width 160 --height 40 \
  --transparent false --tint 0x404040 --SetDockType true >"$work/trayer.log" 2>&1 &
pids+=($!)
sleep 1
DISPLAY="$display" QT_QPA_PLATFORM=xcb "$tool" "$work/tray-run" --tray
cp "$work"/tray-run/tray-*.png "$out/"
ls -1 "$out"
