#!/usr/bin/env python3
"""Graph kernels that use the hardware, side by side in one run (not a test: it asserts nothing).
For a transformer block (d = 512, 8 heads, sequence 256, batch 64) and a CNN whose forward pass
takes about a second in PyTorch, on this machine:
  torch      PyTorch eager, the module called directly (all cores)
  freivalds  the captured graph through a real lab node and 2 headless volunteers (1 thread each)
             with verification="freivalds": one volunteer per task, its heavy matmuls through
             OpenBLAS, every task checked by the node (Freivalds on those matmuls, the rest
             recomputed bit for bit)
  replicas   the same job with the default verification (two volunteers per task on canonical
             kernels, bit for bit, plus the node's audits), unless --no-replicas
and prints torch ÷ network (best run), the node's check time as a share of the network time and
of the volunteers' compute, and the worst error against PyTorch in float64.

    GOBLIN_BUILD_DIR=build/ci .venv/bin/python bench/bench_graph_kernels.py [--repeats 2]
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "python" / "tests"))

import goblin  # noqa: E402
from bench_graphs import CNNLayers, replica_seconds  # noqa: E402
from bench_matmul import Network, best_of, run_numpy_on_volunteers_kernel  # noqa: E402
from torch_programs import TransformerBlock  # noqa: E402


def programs(cnn_batch):
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    block = TransformerBlock(dim=512, heads=8, hidden=2048, length=256).eval()
    layers = CNNLayers().eval()
    return [
        ("transformer block (d 512, 8 heads, len 256, batch 64)", block,
         rng.standard_normal((64, 256, 512)).astype(np.float32), 8),
        ("CNN 3→32→64→64 (3×3, 32×32, batch %d)" % cnn_batch, layers,
         rng.standard_normal((cnn_batch, 3, 32, 32)).astype(np.float32), 8),
    ]


def float64_forward(module, x):
    with torch.no_grad():
        return module.double()(torch.from_numpy(x.astype(np.float64))).numpy()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--cnn-batch", type=int, default=1024)
    parser.add_argument("--no-replicas", action="store_true")
    args = parser.parse_args()
    run_numpy_on_volunteers_kernel()  # PyTorch's matmuls go through the same OpenBLAS
    network = Network(volunteers=2, threads=1, slots=1)  # default trust and audits
    modes = ["freivalds"] + ([] if args.no_replicas else ["replicas"])
    try:
        client = goblin.connect(network.url, token=network.token, timeout=600)
        print("| program | verification | torch s | network s | torch ÷ network | node check ÷ network "
              "| node check ÷ volunteer compute | opinions | worst error ÷ max abs |")
        print("|--|--|--:|--:|--:|--:|--:|--:|--:|")
        rows_seen = 0
        for name, module, x, chunks in programs(args.cnn_batch):
            captured = goblin.capture(module, torch.from_numpy(x))
            with torch.no_grad():
                torch_seconds = best_of(args.repeats, lambda: module(torch.from_numpy(x)))
            expected = float64_forward(module, x)
            module.float()
            for mode in modes:
                runs = []
                for _ in range(args.repeats):
                    started = time.perf_counter()
                    [out] = client.run(captured, [x], batch=0, chunks=chunks, verification=mode,
                                       timeout=3600)
                    seconds = time.perf_counter() - started
                    compute, rows_seen = replica_seconds(network.db, rows_seen)
                    runs.append((seconds, client.last_summary, compute))
                error = float(np.max(np.abs(out - expected)) / np.max(np.abs(expected)))
                seconds = min(r[0] for r in runs)
                check = sum(r[1]["verification_seconds"] for r in runs)
                wall = sum(r[0] for r in runs)
                compute = sum(r[2] for r in runs)
                print("| %s | %s | %.3f | %.2f | %.3f | %.1f %% | %.1f %% | %d | %.1e |" % (
                    name, mode, torch_seconds, seconds, torch_seconds / seconds,
                    100 * check / wall, 100 * check / max(compute, 1e-9),
                    runs[-1][1]["verdicts"]["accepted"], error), flush=True)
        client.close()
    finally:
        network.close()


if __name__ == "__main__":
    main()
