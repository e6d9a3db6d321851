#!/usr/bin/env python3
"""Colluders against graph verification at default settings, measured in one run (not a test: it
asserts nothing).

A real lab node with its default trust settings, 2 honest headless volunteers and the adversarial
volunteer of python/tests/adversary (written from docs/protocol.md alone) running 2 colluding
identities that return the same wrong outputs for every task from their first one. One graph job of
--tasks chunks (default 1000) goes through the Python client; every delivered row is compared with
the numpy reference. Prints the wrong chunks that reached the researcher (target 0), how the
colluders ended (quarantined), and the node's audits: tasks audited, and node seconds spent
auditing and deciding ÷ the volunteers' compute of those tasks.

    .venv/bin/python bench/bench_adversaries.py [--tasks 1000] [--strategy collude|sleeper]
"""

import argparse
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "python" / "tests"))

import goblin  # noqa: E402
from goblin import graph as gg  # noqa: E402
from goblin import reference  # noqa: E402
from bench_matmul import Network  # noqa: E402


def mlp(batch, features=32, hidden=16, seed=3):
    rng = np.random.default_rng(seed)
    g = gg.Graph()
    x = g.input("f32", [batch, features])
    w = g.constant(rng.standard_normal((features, hidden)).astype(np.float32))
    b = g.constant(rng.standard_normal((hidden,)).astype(np.float32))
    # Only ops the adversary's own evaluator (written from docs/ops.md) knows, so it can lie cheaply.
    g.output(g.relu(g.add(g.matmul(x, w), b)))
    return g


def start_adversary(network, strategy, identities, extra=()):
    log = open(network.dir / "adversary.log", "w")
    env = dict(os.environ, PYTHONPATH=str(REPO / "python" / "tests"), PYTHONNOUSERSITE="1")
    process = subprocess.Popen(
        [sys.executable, "-m", "adversary", "--node", network.url, "--strategy", strategy,
         "--identities", str(identities), *extra], stdout=log, stderr=subprocess.STDOUT, env=env)
    deadline = time.time() + 30
    while time.time() < deadline:
        ids = re.findall(r"^adversary identity (v-\S+)$", (network.dir / "adversary.log").read_text(),
                         re.M)
        if len(ids) >= identities:
            return process, ids
        time.sleep(0.05)
    raise RuntimeError("the adversary did not register:\n" + (network.dir / "adversary.log").read_text())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--strategy", default="collude", choices=["collude", "sleeper"])
    parser.add_argument("--honest-tasks", type=int, default=50, help="sleeper: honest tasks first")
    args = parser.parse_args()
    network = Network(volunteers=2, threads=1, slots=2)  # default settings: nothing passed
    adversary = None
    try:
        extra = ["--honest-tasks", str(args.honest_tasks)] if args.strategy == "sleeper" else []
        adversary, ids = start_adversary(network, args.strategy, 2, extra)
        client = goblin.connect(network.url, token=network.token, timeout=600)
        g = mlp(args.tasks)
        x = np.random.default_rng(5).standard_normal((args.tasks, 32)).astype(np.float32)
        started = time.perf_counter()
        [out] = client.run(g, [x], batch=0, chunks=args.tasks, timeout=1800)
        seconds = time.perf_counter() - started
        summary = client.last_summary
        expected = reference.run(g, [x])[0]
        wrong = int(sum(not np.allclose(out[i], expected[i], rtol=2e-5, atol=1e-6)
                        for i in range(args.tasks)))
        with sqlite3.connect(f"file:{network.db}?mode=ro", uri=True) as con:
            quarantined = [con.execute("SELECT quarantined_at IS NOT NULL FROM volunteer_trust "
                                       "WHERE volunteer_id = ?", (v,)).fetchone() for v in ids]
            liar_replicas = con.execute(
                "SELECT count(*) FROM graph_results WHERE volunteer_id IN (?, ?)", ids).fetchone()[0]
            audited_compute = con.execute(
                "SELECT coalesce(sum(compute_seconds), 0) / 2 FROM graph_results WHERE task_id IN "
                "(SELECT task_id FROM graph_results WHERE method IN ('node-audit', 'node-tiebreak'))"
            ).fetchone()[0]
        print("| strategy | tasks | colluder replicas | wrong chunks delivered | colluders quarantined "
              "| node audits | audit + tie-break tasks | node verify s ÷ their compute s | job s |")
        print("|--|--:|--:|--:|--:|--:|--:|--:|--:|")
        print("| %s | %d | %d | **%d** | %d of 2 | %d | %d | %.2f | %.1f |" % (
            args.strategy, args.tasks, liar_replicas, wrong,
            sum(1 for q in quarantined if q and q[0]), summary["node_recomputed"],
            summary["node_recomputed"] + summary["node_tiebreaks"],
            summary["verification_seconds"] / max(audited_compute, 1e-9), seconds))
        client.close()
    finally:
        if adversary:
            adversary.terminate()
        network.close()


if __name__ == "__main__":
    main()
