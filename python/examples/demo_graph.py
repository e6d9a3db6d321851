#!/usr/bin/env python3
"""Runs a small neural-network forward pass as an op graph on a GPU Goblin network and checks it.

    python demo_graph.py --node ws://127.0.0.1:7000 --token-file token.txt --batch 512

The graph (layer norm, two dense layers with GELU, softmax) is built with goblin.graph, split
along its batch into tasks, and every task is computed by two volunteers and compared by the lab
node. The outputs are checked against a float64 numpy recomputation; exits 1 when they disagree
beyond float32 rounding, 2 when the job could not run. (goblin.capture builds the same kind of
graph from a PyTorch module.)
"""

import argparse
import math
import sys
from pathlib import Path

import numpy as np

import goblin
from goblin import graph as gg


def build(rng, features, hidden, classes, batch):
    g = gg.Graph()
    x = g.input("f32", [batch, features])
    w1 = rng.standard_normal((features, hidden)).astype(np.float32) / math.sqrt(features)
    w2 = rng.standard_normal((hidden, classes)).astype(np.float32) / math.sqrt(hidden)
    ones, zeros = np.ones(features, np.float32), np.zeros(features, np.float32)
    h = g.layer_norm(x, g.constant(ones), g.constant(zeros), normalized_ndim=1, eps=1e-5)
    h = g.gelu(g.matmul(h, g.constant(w1)), approximate="none")
    g.output(g.softmax(g.matmul(h, g.constant(w2)), dim=-1))
    return g, (w1, w2)


def float64_reference(x, w1, w2):
    x = x.astype(np.float64)
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    h = (x - mean) / np.sqrt(var + 1e-5)
    h = h @ w1.astype(np.float64)
    erf = np.vectorize(math.erf)
    h = 0.5 * h * (1 + erf(h / math.sqrt(2)))
    logits = h @ w2.astype(np.float64)
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def main() -> int:
    parser = argparse.ArgumentParser(description="an MLP forward pass as a verified graph job")
    parser.add_argument("--node", required=True, help="lab node address, ws://HOST:PORT")
    parser.add_argument("--token-file", required=True, type=Path, help="file holding your access token")
    parser.add_argument("--batch", type=int, default=512, help="rows in the batch (default 512)")
    parser.add_argument("--chunks", type=int, default=4, help="tasks to split the batch into")
    args = parser.parse_args()
    rng = np.random.default_rng(7)
    g, (w1, w2) = build(rng, features=64, hidden=128, classes=10, batch=args.batch)
    x = rng.standard_normal((args.batch, 64)).astype(np.float32)
    try:
        with goblin.connect(args.node, token=args.token_file.read_text().strip(), timeout=60) as client:
            [probs] = client.run(g, [x], batch=0, chunks=args.chunks, timeout=600)
            summary, job = client.last_summary or {}, client.last_job
    except goblin.GoblinError as exc:
        print("the job did not run: %s: %s" % (type(exc).__name__, exc), file=sys.stderr)
        return 2
    error = float(np.max(np.abs(probs - float64_reference(x, w1, w2))))
    correct = error < 1e-5
    print("graph job      %s  (%d nodes, batch %d in %s tasks)"
          % (job, len(g.nodes), args.batch, summary.get("tasks", "?")))
    print("replicas       %s  (each task by two volunteers)" % summary.get("verdicts"))
    print("backends       %s" % summary.get("backends"))
    print("node           recomputed %s task(s) itself, %.3f s comparing and recomputing"
          % (summary.get("node_recomputed"), summary.get("verification_seconds", float("nan"))))
    print("max |p − p64|  %.2e" % error)
    print("result         %s" % ("CORRECT: matches the float64 recomputation" if correct
                                 else "WRONG: differs from the float64 recomputation"))
    return 0 if correct else 1


if __name__ == "__main__":
    sys.exit(main())
