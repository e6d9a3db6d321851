#!/usr/bin/env bash
# The demo: installs what is missing, builds, starts a lab node on a SQLite file in state/demo,
# two headless volunteers, creates a researcher credential, and multiplies two random 2048×2048
# float32 matrices on the network from Python, printing the verified result.
# Usage: scripts/demo.sh [N]   (default N = 2048)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
n="${1:-2048}"
bash scripts/build.sh ci
bin="$root/build/ci/app"
state="$root/state/demo"
mkdir -p "$state"

pids=()
cleanup() { for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT

# The database persists between runs; init makes it the first time (serve refuses a missing one).
[ -f "$state/node.db" ] || "$bin/labnode/goblin-labnode" init --db "$state/node.db" > /dev/null
"$bin/labnode/goblin-labnode" serve --db "$state/node.db" --data-dir "$state/data" \
  --listen 127.0.0.1:0 > "$state/labnode.log" 2>&1 &
pids+=($!)
port=""
for _ in $(seq 1 100); do
  port="$(sed -n 's/^goblin-labnode listening on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$state/labnode.log")"
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "demo: the lab node did not start:"; cat "$state/labnode.log"; exit 1; }
node="ws://127.0.0.1:$port"
echo "demo: lab node on $node (database $state/node.db, log $state/labnode.log)"

# The second volunteer computes on the first OpenCL device when there is one (PoCL in CI).
second_devices=cpu
if "$bin/volunteer-gui/goblin-volunteer" --list-devices | grep -q '^gpu0 '; then
  second_devices=gpu0
fi
for i in 1 2; do
  devices=cpu
  [ "$i" = 2 ] && devices="$second_devices"
  "$bin/volunteer-gui/goblin-volunteer" --headless --node "$node" --threads 1 --devices "$devices" \
    --config-dir "$state/volunteer-$i" > "$state/volunteer-$i.log" 2>&1 &
  pids+=($!)
done
echo "demo: 2 headless volunteers started (devices: cpu and $second_devices; logs in $state/volunteer-*.log)"
# The jobs below are announced for two volunteers: wait until both are connected (an OpenCL
# device takes a few seconds to set up), at most two minutes.
connected=0
for _ in $(seq 1 1200); do
  connected="$( (grep -l ' connected to ' "$state"/volunteer-[12].log 2>/dev/null || true) | wc -l)"
  [ "$connected" -ge 2 ] && break
  sleep 0.1
done
[ "$connected" -ge 2 ] || { echo "demo: the volunteers did not connect:"; tail -n 5 "$state"/volunteer-*.log; exit 1; }
echo "demo: both volunteers are connected"

# --rotate: a rerun replaces the credential of an earlier run (without it, add refuses the e-mail).
"$bin/labnode/goblin-labnode" researcher add demo@lab.example --rotate --db "$state/node.db" > "$state/token"
chmod 600 "$state/token"
echo "demo: researcher credential for demo@lab.example written to $state/token"

.venv/bin/python python/examples/demo_matmul.py --node "$node" --token-file "$state/token" --n "$n"
echo "demo: an op graph (layer norm, GELU MLP, softmax), each task computed by both volunteers:"
.venv/bin/python python/examples/demo_graph.py --node "$node" --token-file "$state/token"
echo "demo: lab node log:"
sed 's/^/  /' "$state/labnode.log" | tail -n 12
