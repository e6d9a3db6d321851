#!/usr/bin/env python3
"""Training beside the patient colluding pair (tests/adversary/patient.py), against the same
training without it, side by side in one run (not a test: it asserts nothing).

Two real lab nodes at their default verification settings (`--second-opinion-seconds 2` only, so
that a lone honest volunteer finishes once the pair is quarantined). The first has 2 honest
headless volunteers; the second 1 honest volunteer and the pair of python/tests/adversary
(strategy patient-pair, written from docs/protocol.md alone): two identities on 127.0.0.2 and .3
that answer with the project's own canonical bits (goblin-run-graph) until each answered
--honest-tasks tasks, then send the same poisoned gradient on every task both hold. The same
training job (bench_training's family, AdamW) runs on both. Prints per network: median and
slowest round seconds, the node's checking seconds ÷ the volunteers' compute seconds, rounds with
a rejected replica, the pair's lies and whether both identities ended quarantined, and whether
the trained parameters equal the honest network's bit for bit (the target: yes).

    GOBLIN_BUILD_DIR=build/ci PYTHONPATH=python .venv/bin/python bench/bench_patient_pair.py \\
        [--family mlp] [--rounds 12] [--scale 4] [--honest-tasks 12]
"""

import argparse
import os
import re
import sqlite3
import statistics
import sys
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import goblin  # noqa: E402
from bench_adversaries import start_adversary  # noqa: E402
from bench_matmul import Network  # noqa: E402
from bench_training import family, volunteer_compute_seconds  # noqa: E402

BUILD = Path(os.environ.get("GOBLIN_BUILD_DIR", REPO / "build" / "ci"))
RUNNER = BUILD / "app" / "graph-runner" / "goblin-run-graph"
LIVENESS = ["--second-opinion-seconds", "2"]


def train(network, args):
    """(params, [(round seconds, checking seconds, volunteers' compute seconds, rejected)])."""
    model, loss_fn, x, y, batch, micro = family(args.family, args.scale)
    rows = []

    def measure(record):
        rows.append((record.seconds, record.verification_seconds,
                     volunteer_compute_seconds(network.db, record.job), record.rejected))

    with goblin.connect(network.url, token=network.token, timeout=600) as client:
        result = client.train(model, loss_fn, (x, y), optimizer=goblin.optim.AdamW(lr=1e-3),
                              rounds=args.rounds, batch_size=batch, micro_batch=micro,
                              progress=False, callback=measure, timeout=3600)
    return result.params, rows


def pair_state(network, adversary_log, ids):
    lies = len(re.findall(r": lie identity", adversary_log.read_text()))
    with sqlite3.connect(f"file:{network.db}?mode=ro", uri=True) as con:
        quarantined = sum(1 for v in ids if (con.execute(
            "SELECT quarantined_at IS NOT NULL FROM volunteer_trust WHERE volunteer_id = ?",
            (v,)).fetchone() or (0,))[0])
    return lies, quarantined


def row(name, rows, lies, quarantined, same):
    seconds = [r[0] for r in rows]
    check = sum(r[1] for r in rows) / max(1e-9, sum(r[2] for r in rows))
    print("| %s | %.2f | %.2f | %.1f %% | %d | %s | %s | %s |" % (
        name, statistics.median(seconds), max(seconds), 100 * check,
        sum(1 for r in rows if r[3]), lies, quarantined, same))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--family", default="mlp", choices=["mlp", "cnn", "lm"])
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--scale", type=int, default=4, help="divide the batches (quicker)")
    parser.add_argument("--honest-tasks", type=int, default=12,
                        help="tasks each identity of the pair answers honestly first")
    args = parser.parse_args()
    torch.manual_seed(0)
    honest = Network(volunteers=2, threads=1, slots=1, node_args=LIVENESS)
    try:
        honest_params, honest_rows = train(honest, args)
    finally:
        honest.close()
    attacked = Network(volunteers=1, threads=1, slots=1, node_args=LIVENESS)
    adversary = None
    try:
        adversary, ids = start_adversary(
            attacked, "patient-pair", 2,
            ["--addresses", "127.0.0.2,127.0.0.3", "--slots", "4", "--honest-tasks",
             str(args.honest_tasks), "--runner", str(RUNNER), "--pair-wait", "3"])
        params, rows = train(attacked, args)
        lies, quarantined = pair_state(attacked, attacked.dir / "adversary.log", ids)
        same = all(np.asarray(params[name]).tobytes() == np.asarray(value).tobytes()
                   for name, value in honest_params.items())
        print("%s, %d rounds (batches ÷ %d)\n" % (args.family, args.rounds, args.scale))
        print("| network | median round s | slowest round s | checking ÷ volunteers' compute | "
              "rounds with a rejection | pair's lies | pair quarantined | parameters = honest "
              "run's bits |")
        print("|--|--:|--:|--:|--:|--:|--:|--|")
        row("2 honest volunteers", honest_rows, "—", "—", "(reference)")
        row("1 honest + the patient pair", rows, lies, "%d of 2" % quarantined,
            "**yes**" if same else "**no**")
    finally:
        if adversary:
            adversary.terminate()
        attacked.close()


if __name__ == "__main__":
    main()
