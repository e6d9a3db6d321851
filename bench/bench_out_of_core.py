#!/usr/bin/env python3
"""Out-of-core matmul benchmark (not a test: it asserts nothing).

C = A·B with A, B and C numpy.memmap files of N×N float32 on disk, through a real lab node and 2
headless volunteers (1 thread each): A and B travel in row blocks into files at the node, the
product comes back in row blocks written into C's memmap. It prints the wall time, GFLOP/s, the
ratio to numpy's in-memory product of the same size on the same cores, and the peak RSS of the
node and of the client (a child process), each its VmHWM, with every tile verified.

Run: env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE .venv/bin/python bench/bench_out_of_core.py
     [--n 8192] [--node-tensor-mb 128]
"""

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_matmul import (Network, best_of, openblas_corename,  # noqa: E402
                          run_numpy_on_volunteers_kernel)

CLIENT = textwrap.dedent("""
    import resource, sys, time
    import numpy as np
    import goblin
    url, token, folder, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    A = np.load(folder + "/A.npy", mmap_mode="r")
    B = np.load(folder + "/B.npy", mmap_mode="r")
    C = np.lib.format.open_memmap(folder + "/C.npy", mode="w+", dtype=np.float32, shape=(n, n))
    with goblin.connect(url, token=token, timeout=600) as client:
        started = time.perf_counter()
        client.matmul(A, B, out=C)
        seconds = time.perf_counter() - started
        summary = client.last_summary
    C.flush()
    # This process's own peak (VmHWM of its memory map), not ru_maxrss: after fork and exec, Linux
    # folds the forked copy of the parent (the benchmark, which wrote A and B) into ru_maxrss.
    hwm = [int(line.split()[1]) * 1024 for line in open("/proc/self/status")
           if line.startswith("VmHWM:")][0]
    print(seconds, hwm, summary.get("delivery", "whole"), summary["tiles"],
          summary["verdicts"]["rejected"], resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
""")


def status_bytes(pid, key):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return 0


class PeakSampler(threading.Thread):
    """The node's largest anonymous memory (RssAnon: what it really holds) and mapped file pages
    (RssFile: the blobs' page cache, which the kernel may drop), sampled every 50 ms."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.anon, self.file, self.stopped = pid, 0, 0, threading.Event()

    def run(self):
        while not self.stopped.wait(0.05):
            try:
                self.anon = max(self.anon, status_bytes(self.pid, "RssAnon"))
                self.file = max(self.file, status_bytes(self.pid, "RssFile"))
            except OSError:
                return


def spot_check(A, B, C, rows):
    """The worst |C - A·B| ÷ float32's error bound over the first `rows` rows, against float64;
    B is read in row blocks so no whole float64 copy of it is ever held (< 1: within the bound)."""
    n = B.shape[0]
    a = np.asarray(A[:rows], np.float64)
    exact = np.zeros((rows, B.shape[1]))
    magnitude = np.zeros((rows, B.shape[1]))
    for k0 in range(0, n, 2048):
        block = np.asarray(B[k0:k0 + 2048], np.float64)
        exact += a[:, k0:k0 + 2048] @ block
        magnitude += np.abs(a[:, k0:k0 + 2048]) @ np.abs(block)
    bound = 2 * n * np.finfo(np.float32).eps * magnitude
    return float(np.max(np.abs(C[:rows] - exact) / bound))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=8192)
    parser.add_argument("--node-tensor-mb", type=int, default=128,
                        help="the node's --max-tensor-mb (a product over it comes in rows)")
    parser.add_argument("--numpy-n", type=int, default=None,
                        help="size of numpy's in-memory product to compare with (default: --n; "
                             "the largest that fits in memory)")
    args = parser.parse_args()
    run_numpy_on_volunteers_kernel()
    n = args.n
    print(f"numpy {np.__version__}, OpenBLAS kernel {openblas_corename()} (numpy and the volunteers), "
          f"OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}", file=sys.stderr)
    folder = Path(tempfile.mkdtemp(prefix="goblin-ooc-"))
    rng = np.random.default_rng(1)
    for name in ("A", "B"):  # written in row blocks: this process never holds a whole matrix
        target = np.lib.format.open_memmap(folder / f"{name}.npy", mode="w+", dtype=np.float32,
                                           shape=(n, n))
        for row0 in range(0, n, 1024):
            target[row0:row0 + 1024] = rng.standard_normal((min(1024, n - row0), n),
                                                           dtype=np.float32)
        target.flush()
        del target
    network = Network(node_args=["--max-tensor-mb", str(args.node_tensor_mb)])
    try:
        sampler = PeakSampler(network.node.pid)
        sampler.start()
        child = subprocess.Popen([sys.executable, "-c", CLIENT, network.url, network.token,
                                  str(folder), str(n)], stdout=subprocess.PIPE, text=True)
        client_sampler = PeakSampler(child.pid)
        client_sampler.start()
        stdout, _ = child.communicate()
        sampler.stopped.set()
        client_sampler.stopped.set()
        if child.returncode != 0:
            raise SystemExit("the client failed")
        seconds, client_rss, delivery, tiles, rejected, client_maxrss = stdout.split()
        node_rss = status_bytes(network.node.pid, "VmHWM")
    finally:
        network.close()
    seconds, client_rss = float(seconds), int(client_rss)
    print(f"network {seconds:.1f} s, client peak RSS {client_rss >> 20} MiB (its ru_maxrss, with "
          f"the pre-exec image: {int(client_maxrss) >> 20} MiB), node peak RSS "
          f"{node_rss >> 20} MiB (anonymous {sampler.anon >> 20} MiB, mapped files "
          f"{sampler.file >> 20} MiB), {delivery}, {tiles} tiles, {rejected} rejected",
          file=sys.stderr)
    A = np.load(folder / "A.npy", mmap_mode="r")
    B = np.load(folder / "B.npy", mmap_mode="r")
    C = np.load(folder / "C.npy", mmap_mode="r")
    worst = spot_check(A, B, C, rows=64)
    del A, B, C
    numpy_n = args.numpy_n or n
    a = rng.standard_normal((numpy_n, numpy_n), dtype=np.float32)
    b = rng.standard_normal((numpy_n, numpy_n), dtype=np.float32)
    numpy_seconds = best_of(1, lambda: a @ b)
    del a, b
    flops = 2.0 * n ** 3
    numpy_gflops = 2.0 * numpy_n ** 3 / numpy_seconds / 1e9
    print(f"| N | input bytes | network s | GFLOP/s | numpy in-memory (N, s, GFLOP/s) | network ÷ numpy GFLOP/s "
          f"| node peak RSS (anonymous, mapped files) | client peak RSS (anonymous, mapped files) "
          f"| delivery | tiles | rejected | worst error ÷ bound "
          f"(64 rows vs f64) |")
    print("|--:|--:|--:|--:|--:|--:|--:|--:|--|--:|--:|--:|")
    print(f"| {n} | {2 * n * n * 4 / 2**30:.2f} GiB | {seconds:.1f} | {flops / seconds / 1e9:.1f} "
          f"| {numpy_n}, {numpy_seconds:.1f}, {numpy_gflops:.1f} "
          f"| {flops / seconds / 1e9 / numpy_gflops:.2f} | {node_rss / 2**20:.0f} MiB ({sampler.anon >> 20}, "
          f"{sampler.file >> 20}) "
          f"| {client_rss / 2**20:.0f} MiB ({client_sampler.anon >> 20}, "
          f"{client_sampler.file >> 20}) | {delivery} | {tiles} | {rejected} | {worst:.2e} |")
    for name in ("A", "B", "C"):
        os.remove(folder / f"{name}.npy")
    os.rmdir(folder)


if __name__ == "__main__":
    main()
