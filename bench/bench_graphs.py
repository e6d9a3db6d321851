#!/usr/bin/env python3
"""Graph-job benchmark, side by side in one run (not a test: it asserts nothing).

For a captured transformer block and a small CNN forward pass on a batch it times, on this machine:
  torch      PyTorch eager, the module called directly (all cores)
  network    goblin.capture's graph through a real lab node and 2 headless volunteers (1 thread
             each): upload, split along the batch, every task computed by both volunteers and
             compared, the node's audits at the rate trust asks for (at the default floor 1, every
             task before its outputs are used), merge and download
and prints torch ÷ network (best run), the node's verification time (comparisons + sampled
recomputation, summed over all runs) as a share of the network time and of the volunteers'
compute, and the capture time. It then prints, per program, what a cheap node audit costs (Freivalds
on the matmuls' witnesses, the other nodes recomputed; the seconds each passed audit records in its
verdict) ÷ the compute of the task it audited (one replica's compute_seconds), and how many audits
were full recomputations (--full-audit-share). A matmul-heavy MLP and a CNN with convolutions of a
real network's size (32–64 channels, 3×3; witnessed and checked like matmuls) are the cases the
target (≤ 20 %) is about; the small CNN's convolutions (8 and 16 channels) are mostly recomputed.

    .venv/bin/python bench/bench_graphs.py [--repeats 3] [--chunks 4] [--node-arg=--audit-floor=0.1]
"""

import argparse
import re
import sqlite3
import sys
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "python" / "tests"))

import goblin  # noqa: E402
from bench_matmul import Network, best_of, run_numpy_on_volunteers_kernel  # noqa: E402
from torch_programs import SmallCNN, TransformerBlock  # noqa: E402


class CNNLayers(torch.nn.Module):
    """Conv layers of a real CNN's size: 3→32→64 (pool) →64 (pool) 3×3 convs on 32×32, then Linear."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 32, kernel_size=3, padding=1)
        self.conv2 = torch.nn.Conv2d(32, 64, kernel_size=3, padding=1)
        self.conv3 = torch.nn.Conv2d(64, 64, kernel_size=3, padding=1)
        self.pool = torch.nn.MaxPool2d(2)
        self.fc = torch.nn.Linear(64 * 8 * 8, 10)

    def forward(self, x):
        x = torch.relu(self.conv1(x))
        x = self.pool(torch.relu(self.conv2(x)))
        x = self.pool(torch.relu(self.conv3(x)))
        return self.fc(torch.flatten(x, 1))


def input_gradient(model):
    """x → ∂(logsumexp of the model's logits, summed)/∂x: a per-sample backward pass (it splits
    along the batch), with the convolutions' input gradients."""

    def program(x):
        with torch.enable_grad():
            x = x.detach().requires_grad_(True)
            return torch.autograd.grad(model(x).logsumexp(-1).sum(), [x])[0]

    return program


def programs():
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    block = TransformerBlock(dim=64, heads=4, hidden=256).eval()
    cnn = SmallCNN(channels=3, size=32, classes=10).eval()
    layers = CNNLayers().eval()
    mlp = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 1024)).eval()
    # (name, program, input, chunks: None = --chunks). The backward graph's batch dims are baked
    # into it (the node cannot split it), so it runs as one task per run, first, while every task
    # is still audited (probation).
    return [
        ("CNN layers, input gradient (forward + backward convs, batch 8, 1 chunk)",
         input_gradient(layers), np.random.default_rng(1).standard_normal((8, 3, 32, 32)).astype(np.float32), 1),
        ("MLP 1024→4096→1024 (batch 256, matmul-heavy)", mlp,
         rng.standard_normal((256, 1024)).astype(np.float32), None),
        ("transformer block (dim 64, 4 heads, len 64, batch 32)", block,
         rng.standard_normal((32, 64, 64)).astype(np.float32), None),
        ("small CNN (3×32×32, batch 64)", cnn, rng.standard_normal((64, 3, 32, 32)).astype(np.float32),
         None),
        ("CNN layers 3→32→64→64 (3×3, 32×32, batch 32, conv-heavy)", layers,
         rng.standard_normal((32, 3, 32, 32)).astype(np.float32), None),
    ]


def replica_seconds(db, job_rows_before):
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        rows = con.execute("SELECT compute_seconds FROM graph_results").fetchall()
    return sum(r[0] or 0 for r in rows[job_rows_before:]), len(rows)


def audit_costs(db, after_task):
    """Cheap audits of tasks after `after_task`: (audit seconds, audited compute seconds, cheap
    audits, full audits, median per-task ratio, last task id)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        rows = con.execute(
            "SELECT task_id, method, verdict, reason, compute_seconds FROM graph_results "
            "WHERE task_id > ? ORDER BY task_id", (after_task,)).fetchall()
    tasks = {}
    for task, method, verdict, reason, compute in rows:
        entry = tasks.setdefault(task, {"compute": [], "cheap": None, "full": False})
        entry["compute"].append(compute or 0)
        if method == "node-audit" and verdict == "accepted":
            match = re.search(r"^cheap audit:.* in ([0-9.eE+-]+) s$", reason or "")
            if match:
                entry["cheap"] = float(match.group(1))
            else:
                entry["full"] = True
    cheap = [t for t in tasks.values() if t["cheap"] is not None]
    audit = sum(t["cheap"] for t in cheap)
    compute = sum(sum(t["compute"]) / len(t["compute"]) for t in cheap)
    full = sum(1 for t in tasks.values() if t["full"])
    ratios = sorted(t["cheap"] / max(1e-9, sum(t["compute"]) / len(t["compute"])) for t in cheap)
    median = ratios[len(ratios) // 2] if ratios else float("nan")
    return audit, compute, len(cheap), full, median, max(tasks, default=after_task)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--chunks", type=int, default=4)
    parser.add_argument("--node-arg", action="append", default=[],
                        help="an option for the lab node's serve, as --node-arg=--audit-floor=0.1")
    args = parser.parse_args()
    run_numpy_on_volunteers_kernel()  # PyTorch's matmuls go through the same OpenBLAS
    network = Network(volunteers=2, threads=1, slots=1, node_args=args.node_arg)
    try:
        client = goblin.connect(network.url, token=network.token, timeout=300)
        print("| program | torch s | network s | torch÷network | verify÷network | verify÷volunteer compute | replicas | capture s |")
        print("|--|--:|--:|--:|--:|--:|--:|--:|")
        rows_seen = 0
        last_task = 0
        audits = []
        for name, module, x, chunks in programs():
            started = time.perf_counter()
            captured = goblin.capture(module, torch.from_numpy(x))
            capture_seconds = time.perf_counter() - started
            with torch.no_grad():
                torch_seconds = best_of(args.repeats, lambda: module(torch.from_numpy(x)))
                expected = module(torch.from_numpy(x)).numpy()
            runs = []
            for _ in range(args.repeats):
                started = time.perf_counter()
                [out] = client.run(captured, [x], batch=0, chunks=chunks or args.chunks, timeout=600)
                seconds = time.perf_counter() - started
                compute, rows = replica_seconds(network.db, rows_seen)
                rows_seen = rows
                runs.append((seconds, client.last_summary, compute))
            error = float(np.max(np.abs(out - expected)) / max(1e-30, float(np.max(np.abs(expected)))))
            seconds = min(r[0] for r in runs)
            # Verification averaged over every run (sampled recomputations included).
            verify = sum(r[1]["verification_seconds"] for r in runs)
            wall = sum(r[0] for r in runs)
            compute = sum(r[2] for r in runs)
            recomputed = sum(r[1]["node_recomputed"] for r in runs)
            tasks = sum(r[1]["tasks"] for r in runs)
            print("| %s | %.4f | %.3f | %.3f | %.1f %% | %.1f %% | %d | %.1f |" % (
                name, torch_seconds, seconds, torch_seconds / seconds, 100 * verify / wall,
                100 * verify / max(compute, 1e-9), runs[-1][1]["verdicts"]["accepted"], capture_seconds))
            print("   max |network − torch| ÷ max|torch| = %.2e; node recomputed %d of %d tasks "
                  "over %d runs" % (error, recomputed, tasks, len(runs)), file=sys.stderr)
            audit, audited, cheap, full, median, last_task = audit_costs(network.db, last_task)
            audits.append((name, audit, audited, cheap, full, median))
        print()
        print("| program | cheap audits | full audits | cheap audit s | audited compute s "
              "| cheap audit ÷ audited compute | median per task |")
        print("|--|--:|--:|--:|--:|--:|--:|")
        for name, audit, audited, cheap, full, median in audits:
            print("| %s | %d | %d | %.4f | %.4f | %.1f %% | %.1f %% |" % (
                name, cheap, full, audit, audited, 100 * audit / max(audited, 1e-9), 100 * median))
        client.close()
    finally:
        network.close()


if __name__ == "__main__":
    main()
