#!/usr/bin/env python3
"""Stages benchmark, side by side in one run (not a test: it asserts nothing).

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
        [--train-layers 4] [--train-width 512] [--train-batch 64] [--train-small-mb 3] [--rounds 3]
        [--tile-width 1024] [--resnet-batch 8] [--resnet-small-mb 16]

Then training (torch needed): a model of --train-layers tanh layers whose parameters exceed what
the small volunteers lend, trained --rounds rounds whole on big volunteers and in stages on small
ones (the node slices the parameters per stage and joins the gradient): seconds per round, tasks
per round and the largest, node socket bytes per round ÷ the parameters' bytes, the volunteers'
busy share (their compute seconds ÷ the case's wall seconds × volunteers, the planning included),
the node's peak resident memory, torch for scale. The same table for a model whose widest layer
alone (--tile-width², 4 MiB at 1024) exceeds what the small volunteers lend: its products run as
matmul tiles. And the same for torchvision's ResNet-18 (with GroupNorm; 43 MiB of parameters)
on 32×32 images, --resnet-batch per round, on volunteers lending --resnet-small-mb (when
torchvision is installed: bash scripts/real_models_env.sh).
"""

import argparse
import sqlite3
import sys
import time
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
    parser.add_argument("--train-layers", type=int, default=4)
    parser.add_argument("--train-width", type=int, default=512)
    parser.add_argument("--train-batch", type=int, default=64)
    parser.add_argument("--train-small-mb", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tile-width", type=int, default=1024)
    parser.add_argument("--resnet-batch", type=int, default=8)
    parser.add_argument("--resnet-small-mb", type=int, default=16)
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
    try:
        import torch
        from torch.nn import functional as F
    except ImportError:
        print("training: torch is not installed; skipped")
        return
    train_table(options, torch, F, "stages: %d layers of %d" % (options.train_layers,
                                                               options.train_width),
                lambda: big_mlp(torch, options.train_layers, options.train_width),
                random_data(torch, options, options.train_batch, (options.train_width,)))
    train_table(options, torch, F, "tiles: 64 → %d → %d → 8" % (options.tile_width,
                                                               options.tile_width),
                lambda: widest_layer_mlp(torch, options.tile_width),
                random_data(torch, options, options.train_batch, (64,)))
    try:
        import torchvision
    except ImportError:
        print("\nResNet-18: torchvision is not installed (bash scripts/real_models_env.sh); "
              "skipped")
        return
    train_table(options, torch, F, "torchvision ResNet-18 with GroupNorm, 32×32 images",
                lambda: resnet18(torch, torchvision),
                random_data(torch, options, options.resnet_batch, (3, 32, 32)),
                batch=options.resnet_batch, small_mb=options.resnet_small_mb)


def big_mlp(torch, layers, width):
    torch.manual_seed(1)
    parts = []
    for _ in range(layers):
        parts += [torch.nn.Linear(width, width), torch.nn.Tanh()]
    return torch.nn.Sequential(*parts, torch.nn.Linear(width, 8))


def widest_layer_mlp(torch, width):
    """A middle layer of width × width: its weight alone exceeds the small volunteers."""
    torch.manual_seed(2)
    return torch.nn.Sequential(torch.nn.Linear(64, width), torch.nn.Tanh(),
                               torch.nn.Linear(width, width), torch.nn.Tanh(),
                               torch.nn.Linear(width, 8))


def resnet18(torch, torchvision):
    """torchvision's ResNet-18 (43 MiB of parameters), GroupNorm for BatchNorm (whose batch
    statistics differ per micro-batch), 8 classes."""
    torch.manual_seed(3)
    return torchvision.models.resnet18(num_classes=8,
                                       norm_layer=lambda c: torch.nn.GroupNorm(8, c)).eval()


def volunteer_seconds(network):
    """The compute seconds of every volunteer result the node recorded."""
    with sqlite3.connect(f"file:{network.db}?mode=ro", uri=True) as con:
        row = con.execute("SELECT sum(compute_seconds) FROM graph_results "
                          "WHERE backend NOT LIKE 'node%'").fetchone()
    return row[0] or 0.0


def peak_rss_bytes(pid):
    """A running process's peak resident memory (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def train_case(name, options, batch, data, volunteer_args, F, make_model):
    network = Network(volunteers=2, volunteer_args=volunteer_args)
    try:
        client = goblin.connect(network.url, token=network.token, timeout=120)
        model = make_model()
        plan = client.plan_train(model, F.cross_entropy, data, batch_size=batch,
                                 micro_batch=batch // 2)
        before = network.socket_bytes()
        result = {}
        started = time.perf_counter()

        def once():
            result["trained"] = client.train(
                make_model(), F.cross_entropy, data,
                optimizer=goblin.optim.AdamW(lr=1e-3), rounds=options.rounds,
                batch_size=batch, micro_batch=batch // 2, progress=False, timeout=600)

        seconds = best_of(1, once)
        wall = time.perf_counter() - started
        traffic = network.socket_bytes() - before
        client.close()
        return {"name": name, "seconds": seconds / options.rounds, "tasks": plan.tasks,
                "bytes": traffic / options.rounds, "largest": plan.largest_task_bytes,
                "busy": volunteer_seconds(network) / (wall * len(network.volunteers)),
                "node_rss": peak_rss_bytes(network.node.pid), "trained": result["trained"]}
    finally:
        network.close()


def random_data(torch, options, batch, shape):
    """--rounds batches of samples of `shape` and labels from 0 to 7."""
    rng = torch.Generator().manual_seed(5)
    samples = batch * options.rounds
    return (torch.randn(samples, *shape, generator=rng),
            torch.randint(0, 8, (samples,), generator=rng))


def train_table(options, torch, F, title, make_model, data, batch=None, small_mb=None):
    """Training a model too big for the small volunteers: whole on big volunteers (data-parallel
    micro-batches) vs split on small ones, per round, with torch for scale."""
    batch = batch or options.train_batch
    small_mb = small_mb or options.train_small_mb
    model = make_model()
    param_bytes = sum(p.numel() * 4 for p in model.parameters())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def torch_rounds():
        for r in range(options.rounds):
            rows = slice(r * batch, (r + 1) * batch)
            optimizer.zero_grad()
            F.cross_entropy(model(data[0][rows]), data[1][rows]).backward()
            optimizer.step()

    torch_seconds = best_of(1, torch_rounds) / options.rounds
    print("\ntraining, %s (%.1f MiB of parameters), batch %d in 2 micro-batches, %d "
          "rounds; volunteers lending %d MiB for the split case" % (
              title, param_bytes / 2 ** 20, batch, options.rounds, small_mb))
    whole = train_case("whole", options, batch, data, [], F, make_model)
    staged = train_case("split", options, batch, data, ["--memory-mb", str(small_mb)], F,
                        make_model)
    same = all(torch.equal(staged["trained"].state_dict[k], v)
               for k, v in whole["trained"].state_dict.items())
    print("%-8s %11s %6s %13s %16s %6s %14s" % ("case", "s / round", "tasks", "largest task",
                                                "bytes ÷ params", "busy", "node peak RSS"))
    for case in (whole, staged):
        print("%-8s %11.2f %6d %10.1f MiB %16.1f %5.0f%% %10.1f MiB" % (
            case["name"], case["seconds"], case["tasks"], case["largest"] / 2 ** 20,
            case["bytes"] / param_bytes, 100 * case["busy"], case["node_rss"] / 2 ** 20))
    print("torch    %11.3f   (this machine, all cores)" % torch_seconds)
    print("split / whole: %.2f× the round time (target ≤ 1.5); torch ÷ split %.3f; same bits: "
          "%s" % (staged["seconds"] / whole["seconds"], torch_seconds / staged["seconds"],
                  "yes" if same else "NO"))


if __name__ == "__main__":
    main()
