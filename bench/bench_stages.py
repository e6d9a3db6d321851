#!/usr/bin/env python3
"""Stages benchmark (issue 33), side by side in one run (not a test: it asserts nothing).

The same deep MLP forward pass (LAYERS of tanh(h·W + b), WIDTH wide, on BATCH rows split into 2
chunks) through a real lab node and 2 headless volunteers (1 thread each), twice:
  whole      volunteers lending their default memory: each chunk is one task
  staged     volunteers lending --small-mb: the node cuts each chunk into stages, each stage a
             task verified before the next reads its outputs
and numpy float32 on this machine for scale. It prints per case the best wall time, the tasks,
the bytes the node's sockets carried (uploads, frames to and from volunteers, the download), the
node's verification seconds, and staged ÷ whole. Both cases give the same bits (checked here and
in python/tests/test_graph_stages.py).

    .venv/bin/python bench/bench_stages.py [--repeats 2] [--layers 8] [--width 1024] [--small-mb 12]
"""

import argparse
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

import goblin  # noqa: E402
from goblin import graph as gg  # noqa: E402
from bench_matmul import Network, best_of  # noqa: E402


def deep_mlp(layers, width, batch, seed=1):
    rng = np.random.default_rng(seed)
    g = gg.Graph()
    h = g.input("f32", [batch, width])
    for _ in range(layers):
        w = g.constant((rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32))
        b = g.constant((rng.standard_normal((width,)) * 0.1).astype(np.float32))
        h = g.tanh(g.add(g.matmul(h, w), b))
    g.output(h)
    return g


def run_case(name, options, g, inputs, volunteer_args):
    network = Network(volunteers=2, volunteer_args=volunteer_args)
    try:
        client = goblin.connect(network.url, token=network.token, timeout=120)
        runs = []

        def once():
            before = network.socket_bytes()
            outputs = client.run(g, inputs, batch=0, chunks=2, timeout=600)
            runs.append((outputs, client.last_summary, network.socket_bytes() - before))

        seconds = best_of(options.repeats, once)
        outputs, summary, traffic = runs[-1]
        verify = sum(r[1]["verification_seconds"] for r in runs) / len(runs)
        client.close()
        return {"name": name, "seconds": seconds, "tasks": summary["tasks"], "bytes": traffic,
                "verify": verify, "outputs": outputs}
    finally:
        network.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--small-mb", type=int, default=12)
    options = parser.parse_args()
    g = deep_mlp(options.layers, options.width, options.batch)
    x = np.random.default_rng(2).standard_normal((options.batch, options.width)).astype(np.float32)
    rng = np.random.default_rng(1)  # deep_mlp's weights, drawn in the same order
    mats = []
    for _ in range(options.layers):
        mats.append(((rng.standard_normal((options.width, options.width)) /
                      np.sqrt(options.width)).astype(np.float32),
                     (rng.standard_normal((options.width,)) * 0.1).astype(np.float32)))

    def numpy_run():
        h = x
        for w, b in mats:
            h = np.tanh(h @ w + b)
        return h

    numpy_seconds = best_of(options.repeats, numpy_run)
    values_mb = (options.layers * (options.width * options.width + options.width) * 4 +
                 options.layers * 3 * options.batch * options.width * 4) / 2 ** 20
    print("deep MLP: %d layers of %d, batch %d in 2 chunks; about %.0f MiB of values in all, "
          "volunteers lending %d MiB for the staged case" % (options.layers, options.width,
                                                            options.batch, values_mb,
                                                            options.small_mb))
    whole = run_case("whole", options, g, [x], [])
    staged = run_case("staged", options, g, [x], ["--memory-mb", str(options.small_mb)])
    same = all(a.tobytes() == b.tobytes() for a, b in zip(whole["outputs"], staged["outputs"]))
    print("%-8s %9s %6s %12s %11s" % ("case", "seconds", "tasks", "node MiB", "verify s"))
    for case in (whole, staged):
        print("%-8s %9.2f %6d %12.1f %11.2f" % (case["name"], case["seconds"], case["tasks"],
                                              case["bytes"] / 2 ** 20, case["verify"]))
    print("numpy    %9.3f   (this machine, all cores)" % numpy_seconds)
    print("staged / whole: %.2f× the time, %.2f× the bytes; same bits: %s" % (
        staged["seconds"] / whole["seconds"], staged["bytes"] / max(1, whole["bytes"]),
        "yes" if same else "NO"))


if __name__ == "__main__":
    main()
