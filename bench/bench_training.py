#!/usr/bin/env python3
"""Training benchmark, side by side in one run (not a test: it asserts nothing).

For an MLP, a CNN and a character-level transformer LM, at sizes where one round (one optimizer
step on one batch) takes about a second or more in local PyTorch on this machine, it times:
  torch      a local PyTorch training round (forward, backward, AdamW step; all cores)
  network    a round of a training job on a real lab node and 2 headless volunteers (1 thread
             each), as its train_round record times it at the node: one task per micro-batch
             computed by both volunteers and compared bit for bit, the node's audits at the rate
             trust asks for (every task at the default floor 1), the float64 merge of loss and gradients, the AdamW step and the commit
and prints torch ÷ network (median round after the first), the verification share (the node's
comparison and audit seconds ÷ the round's seconds), the node's checking work ÷ the volunteers'
compute (the same seconds ÷ every volunteer replica's compute_seconds of the round's tasks: the
cost target of docs/verification.md), and the bytes that crossed the node's sockets per round ÷ the
parameter bytes (the data is uploaded once, with the job, before round 0).

    .venv/bin/python bench/bench_training.py [--rounds 4] [--families mlp,cnn,lm] \
        [--node-arg=--audit-floor=0.1 ...]
"""

import argparse
import sqlite3
import statistics
import sys
import time
from pathlib import Path

import torch
from torch.nn import functional as F

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "python"))

import goblin  # noqa: E402
from bench_matmul import Network  # noqa: E402


class CharTransformer(torch.nn.Module):
    def __init__(self, vocab=96, dim=128, heads=4, layers=2, length=64):
        super().__init__()
        self.tokens = torch.nn.Embedding(vocab, dim)
        self.positions = torch.nn.Parameter(torch.randn(length, dim) * 0.02)
        self.blocks = torch.nn.ModuleList(
            torch.nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, activation="gelu",
                                             batch_first=True) for _ in range(layers))
        self.head = torch.nn.Linear(dim, vocab)
        self.register_buffer("mask", torch.triu(torch.full((length, length), float("-inf")), 1))

    def forward(self, x):
        h = self.tokens(x) + self.positions
        for block in self.blocks:
            h = block(h, src_mask=self.mask)
        return self.head(h)


def lm_loss(logits, y):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def family(name, scale=1, lm_dim=128):
    """(model, loss, x, y, batch, micro_batch) sized for about a second per local round (batches
    divided by `scale` for a quick try; the LM's width `lm_dim`)."""
    torch.manual_seed(0)
    if name == "mlp":
        model = torch.nn.Sequential(torch.nn.Linear(784, 1024), torch.nn.ReLU(),
                                    torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
                                    torch.nn.Linear(1024, 10))
        batch = 4096 // scale
        return model, F.cross_entropy, torch.randn(batch * 2, 784), \
            torch.randint(0, 10, (batch * 2,)), batch, batch // 4
    if name == "cnn":
        model = torch.nn.Sequential(
            torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.ReLU(),
            torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Flatten(), torch.nn.Linear(64 * 8 * 8, 10))
        batch = 64 // scale  # 256/64 captures too, but its rounds take minutes on 2 cores
        return model, F.cross_entropy, torch.randn(batch * 2, 3, 32, 32), \
            torch.randint(0, 10, (batch * 2,)), batch, batch // 4
    model = CharTransformer(dim=lm_dim)
    batch = 160 // scale
    text = torch.randint(0, 96, (batch * 2, 65))
    return model, lm_loss, text[:, :-1].contiguous(), text[:, 1:].contiguous(), batch, batch // 4


def torch_round_seconds(model, loss_fn, x, y, batch, rounds):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    times = []
    for r in range(rounds):
        rows = torch.arange(r * batch, (r + 1) * batch) % x.shape[0]
        started = time.perf_counter()
        opt.zero_grad()
        loss_fn(model(x[rows]), y[rows]).backward()
        opt.step()
        times.append(time.perf_counter() - started)
    return statistics.median(times[1:] if len(times) > 1 else times)


def volunteer_compute_seconds(db, graph_job):
    """Every volunteer replica's compute seconds of a round's tasks (the node's own are not)."""
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        row = con.execute(
            "SELECT sum(r.compute_seconds) FROM graph_results r JOIN graph_tasks t "
            "ON t.id = r.task_id WHERE t.job_id = ? AND r.backend NOT LIKE 'node%'",
            (graph_job,)).fetchone()
    return row[0] or 0.0


def network_round(net, client, model, loss_fn, x, y, batch, micro, rounds, verification):
    rows = []
    last = {"bytes": net.socket_bytes()}

    def measure(record):
        now_bytes = net.socket_bytes()
        rows.append((record.seconds, record.verification_seconds, now_bytes - last["bytes"],
                     volunteer_compute_seconds(net.db, record.job)))
        last["bytes"] = now_bytes

    client.train(model, loss_fn, (x, y), optimizer=goblin.optim.AdamW(lr=1e-3), rounds=rounds,
                 batch_size=batch, micro_batch=micro, progress=False, callback=measure,
                 timeout=1800, verification=verification)
    steady = rows[1:] if len(rows) > 1 else rows
    seconds = statistics.median(r[0] for r in steady)
    share = sum(r[1] for r in steady) / sum(r[0] for r in steady)
    check = sum(r[1] for r in steady) / max(1e-9, sum(r[3] for r in steady))
    moved = statistics.median(r[2] for r in steady)
    return seconds, share, check, moved, rows[0][0]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--families", default="mlp,cnn,lm")
    parser.add_argument("--scale", type=int, default=1, help="divide the batches (a quick try)")
    parser.add_argument("--verification", default="replicas", choices=["replicas", "freivalds"],
                        help="how the micro-batch tasks are verified")
    parser.add_argument("--lm-dim", type=int, default=128,
                        help="the LM's width (its matmuls grow as dim², its elementwise ops as dim)")
    parser.add_argument("--node-arg", action="append", default=[],
                        help="an option for the lab node's serve, as --node-arg=--audit-floor=0.1")
    args = parser.parse_args()
    torch.set_num_threads(max(1, torch.get_num_threads()))
    net = Network(volunteers=2, threads=1, slots=1, node_args=args.node_arg)
    print("%-5s %9s %8s %9s %8s %11s %10s %12s %12s" % (
        "model", "params", "batch", "torch s", "net s", "torch÷net", "verify %",
        "check÷comp", "bytes÷params"))
    try:
        with goblin.connect(net.url, token=net.token, timeout=600) as client:
            for name in args.families.split(","):
                model, loss_fn, x, y, batch, micro = family(name, args.scale, args.lm_dim)
                param_bytes = sum(p.numel() * 4 for p in model.parameters())
                local = torch_round_seconds(model, loss_fn, x, y, batch, args.rounds)
                model, loss_fn, x, y, batch, micro = family(name, args.scale, args.lm_dim)  # fresh
                seconds, share, check, moved, first = network_round(net, client, model, loss_fn, x, y,
                                                             batch, micro, args.rounds,
                                                             args.verification)
                print("%-5s %9d %8s %9.3f %8.3f %11.3f %9.1f%% %11.1f%% %12.2f   (round 0: %.1f s)"
                      % (name, param_bytes // 4, "%d/%d" % (batch, micro), local, seconds,
                         local / seconds, 100 * share, 100 * check, moved / param_bytes, first),
                      flush=True)
    finally:
        net.close()


if __name__ == "__main__":
    main()
