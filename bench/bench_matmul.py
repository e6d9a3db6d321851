#!/usr/bin/env python3
"""Distributed matmul benchmark, side by side in one run (not a test: it asserts nothing).

For each N it times, on this machine:
  numpy      numpy.matmul locally (the best local BLAS call on the same cores), with the OpenBLAS
             kernel numpy picks by itself and, when the volunteers run another one (they raise a
             kernel OpenBLAS guessed below the CPU's level), with theirs; ratios use the faster
  backend    the volunteer backend's own GEMM called directly (goblin-bench-gemm, 2 threads)
  network    C = A·B through a real lab node and 2 headless volunteers (1 thread each), with
             upload, tiling, verification of every tile, merge and download included
  dask       dask.array matmul on dask.distributed with 2 worker processes (verifies nothing),
             its workers on the volunteers' OpenBLAS kernel
and prints the ratios, the verification share (node verification CPU ÷ volunteer tile compute),
and the wire efficiency (TCP payload bytes through the node's sockets ÷ raw tensor bytes moved).
Then the scheduler alone: a job forced into ≥ 10,000 tiny tiles, tiles per second, with the
volunteers' default 2 slots (a round-trip bound: 4 tiles in flight) and with 16 (their most).

Run it as `bash bench/run.sh` (which unsets OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE for this command
only, so numpy and the volunteers both run OpenBLAS's native kernels; see STACK.md).
"""

import argparse
import ctypes
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import goblin

REPO = Path(__file__).resolve().parents[1]
BUILD = Path(os.environ.get("GOBLIN_BUILD_DIR", REPO / "build" / "ci"))
LABNODE = BUILD / "app" / "labnode" / "goblin-labnode"
VOLUNTEER = BUILD / "app" / "volunteer-gui" / "goblin-volunteer"
GEMM = BUILD / "bench" / "goblin-bench-gemm"


def openblas_corename():
    """Which OpenBLAS kernel numpy runs (read from the library numpy loaded)."""
    for path in set(re.findall(r"\S*openblas\S*\.so\S*", Path("/proc/self/maps").read_text())):
        try:
            lib = ctypes.CDLL(path)
            lib.openblas_get_corename.restype = ctypes.c_char_p
            return lib.openblas_get_corename().decode()
        except (OSError, AttributeError):
            continue
    return "unknown"


def volunteers_kernel():
    """The OpenBLAS kernel a volunteer runs here (goblin-bench-gemm picks it as goblin-volunteer
    does: OpenBLAS's own choice, raised when it guessed below the CPU's level)."""
    out = subprocess.run([GEMM, "64"], check=True, capture_output=True, text=True).stdout
    return json.loads(out.splitlines()[-1])["blas_kernel"]


def run_numpy_on_volunteers_kernel():
    """Runs this script again with OPENBLAS_CORETYPE set to the volunteers' kernel when numpy's
    own OpenBLAS guessed another, so numpy and the volunteers multiply with the same kernel (a
    variable set by whoever started the bench stands)."""
    if "OPENBLAS_CORETYPE" in os.environ:
        return
    kernel = volunteers_kernel()
    if kernel != openblas_corename():
        os.execve(sys.executable, [sys.executable, *sys.argv],
                  {**os.environ, "OPENBLAS_CORETYPE": kernel})


def best_of(repeats, fn):
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


class Network:
    """A lab node and 2 headless volunteers on loopback, in a temporary folder."""

    def __init__(self, volunteers=2, threads=int(os.environ.get("GOBLIN_BENCH_THREADS", "1")), slots=2,
                 node_args=(), volunteer_args=()):
        self.dir = Path(tempfile.mkdtemp(prefix="goblin-bench-"))
        db = self.dir / "node.db"
        subprocess.run([LABNODE, "init", "--db", db], check=True, capture_output=True)
        self.token = subprocess.run([LABNODE, "researcher", "add", "bench@lab.example", "--db", db],
                                    check=True, capture_output=True, text=True).stdout.strip()
        # The node's log goes to a file: a pipe nobody reads after the first line would fill
        # (64 KiB) and then block the node's every log line.
        self.node_log = open(self.dir / "node.log", "w")
        self.node = subprocess.Popen([LABNODE, "serve", "--db", db, "--data-dir", self.dir / "data",
                                      "--listen", "127.0.0.1:0", *node_args],
                                     stdout=self.node_log, stderr=subprocess.STDOUT)
        first = self._listening_line()
        match = re.match(r"goblin-labnode listening on 127\.0\.0\.1:(\d+)", first)
        if not match:
            raise RuntimeError("lab node did not start: " + first)
        self.url = f"ws://127.0.0.1:{match.group(1)}"
        self.db = db
        self.volunteers = []
        for i in range(volunteers):
            log = open(self.dir / f"volunteer-{i}.log", "w")
            self.volunteers.append(subprocess.Popen(
                [VOLUNTEER, "--headless", "--node", self.url, "--threads", str(threads),
                 "--slots", str(slots), "--config-dir", self.dir / f"volunteer-{i}",
                 *volunteer_args],
                stdout=log, stderr=subprocess.STDOUT))
        deadline = time.time() + 20
        while time.time() < deadline:
            if all(self._connected(i) for i in range(volunteers)):
                break
            for i, volunteer in enumerate(self.volunteers):
                if volunteer.poll() is not None:  # refused an option, say: nothing would compute
                    self.close()
                    raise RuntimeError("volunteer %d exited: %s" % (
                        i, (self.dir / f"volunteer-{i}.log").read_text().strip()))
            time.sleep(0.05)

    def _listening_line(self):
        """The node's "listening on" line, or what it logged instead if it exited or hung."""
        deadline = time.time() + 30
        while time.time() < deadline:
            text = (self.dir / "node.log").read_text()
            for line in text.splitlines():
                if "goblin-labnode listening on" in line:
                    return line
            if self.node.poll() is not None:
                return "(exited with %d) %s" % (self.node.returncode, text.strip())
            time.sleep(0.02)
        return "(no listening line in 30 s) " + (self.dir / "node.log").read_text().strip()

    def _connected(self, i):
        return "connected to" in (self.dir / f"volunteer-{i}.log").read_text()

    def socket_bytes(self):
        """TCP payload bytes sent and received by all of the node's sockets (from `ss -ti`): the
        researcher's upload and download and every task and result frame to and from volunteers."""
        port = self.url.rsplit(":", 1)[1]
        out = subprocess.run(["ss", "-tinH", "state", "established", f"( sport = :{port} )"],
                             check=True, capture_output=True, text=True).stdout
        return sum(int(value) for value in re.findall(r"bytes_(?:sent|received):(\d+)", out))

    def job_stats(self, job):
        with sqlite3.connect(f"file:{self.db}?mode=ro", uri=True) as con:
            row = con.execute(
                "SELECT sum(r.compute_seconds), sum(r.verify_seconds), "
                "sum(t.rows * j.k + j.k * t.cols + t.rows * t.cols) FROM results r "
                "JOIN tasks t ON t.id = r.task_id JOIN jobs j ON j.id = t.job_id "
                "WHERE t.job_id = ?", (job,)).fetchone()
        return row

    def close(self):
        for process in self.volunteers + [self.node]:
            process.terminate()
        for process in self.volunteers + [self.node]:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        shutil.rmtree(self.dir, ignore_errors=True)


def kernel_env(kernel):
    """This process's environment with OPENBLAS_CORETYPE = kernel (for processes started now)."""
    return {**os.environ, "OPENBLAS_CORETYPE": kernel}


def numpy_seconds_with_kernel(n, repeats, kernel):
    """numpy.matmul timed in a fresh interpreter whose OpenBLAS loads `kernel`."""
    script = ("import sys, time, numpy as np\n"
              "n, repeats = int(sys.argv[1]), int(sys.argv[2])\n"
              "rng = np.random.default_rng(n)\n"
              "A = rng.standard_normal((n, n), dtype=np.float32)\n"
              "B = rng.standard_normal((n, n), dtype=np.float32)\n"
              "A @ B\n"
              "best = 1e30\n"
              "for _ in range(repeats):\n"
              "    t = time.perf_counter(); A @ B; best = min(best, time.perf_counter() - t)\n"
              "print(best)\n")
    out = subprocess.run([sys.executable, "-c", script, str(n), str(repeats)], check=True,
                         capture_output=True, text=True, env=kernel_env(kernel)).stdout
    return float(out.split()[-1])


def dask_seconds(n, repeats, kernel):
    try:
        import dask.array as da
        from dask.distributed import Client, LocalCluster
    except ImportError:
        return None
    rng = np.random.default_rng(1)
    A = rng.standard_normal((n, n), dtype=np.float32)
    B = rng.standard_normal((n, n), dtype=np.float32)
    saved = os.environ.get("OPENBLAS_CORETYPE")
    os.environ["OPENBLAS_CORETYPE"] = kernel  # the workers are processes started now
    try:
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               dashboard_address=None)
    finally:
        if saved is None:
            del os.environ["OPENBLAS_CORETYPE"]
        else:
            os.environ["OPENBLAS_CORETYPE"] = saved
    with cluster, Client(cluster):
        chunk = n // 2
        def run():
            a = da.from_array(A, chunks=(chunk, chunk))
            b = da.from_array(B, chunks=(chunk, chunk))
            (a @ b).compute()
        run()
        return best_of(repeats, run)


def backend_seconds(n):
    """(seconds, OpenBLAS kernel) of the volunteer backend's GEMM, on the kernel a volunteer
    picks (goblin-bench-gemm raises it as goblin-volunteer does)."""
    out = subprocess.run([GEMM, str(n), "--threads", "2"], check=True, capture_output=True,
                         text=True).stdout
    line = json.loads(out.splitlines()[-1])
    return line["seconds"], line["blas_kernel"]


def bench_matmul(sizes, repeats):
    own_kernel = openblas_corename()
    print(f"numpy {np.__version__}, OpenBLAS kernel {own_kernel}, "
          f"{os.cpu_count()} cores, OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '(unset)')}")
    def matrices(n):
        rng = np.random.default_rng(n)
        return (rng.standard_normal((n, n), dtype=np.float32),
                rng.standard_normal((n, n), dtype=np.float32))

    # Local figures first, each on an otherwise idle machine: no node, volunteer or Dask worker
    # (Dask's workers take a while to go after their cluster closes).
    rows = []
    for n in sizes:
        A, B = matrices(n)
        numpy_s = best_of(repeats, lambda: A @ B)
        backend_s, kernel = backend_seconds(n)
        numpy_theirs_s = numpy_s if kernel == own_kernel else \
            numpy_seconds_with_kernel(n, repeats, kernel)
        rows.append(dict(n=n, numpy_own=numpy_s, numpy_theirs=numpy_theirs_s, kernel=kernel,
                         numpy=min(numpy_s, numpy_theirs_s), backend=backend_s))
    network = Network()
    try:
        with goblin.connect(network.url, token=network.token) as client:
            for row in rows:
                n = row["n"]
                A, B = matrices(n)
                client.matmul(A, B)  # warm-up: first-touch pages, thread pools
                best = None
                for _ in range(repeats):
                    before = network.socket_bytes()
                    started = time.perf_counter()
                    C = client.matmul(A, B)
                    seconds = time.perf_counter() - started
                    moved = network.socket_bytes() - before
                    if best is None or seconds < best[0]:
                        best = (seconds, moved, client.last_job, client.last_summary)
                network_s, moved, job, summary = best
                compute_s, verify_s, elements = network.job_stats(job)
                elements += 3 * n * n  # the researcher's A and B up, C down
                error = float(np.max(np.abs(C.astype(np.float64) - A.astype(np.float64) @ B)))
                row.update(network=network_s, verify_share=verify_s / compute_s,
                           wire=moved / (elements * 4), tiles=summary["tiles"],
                           rejected=summary["verdicts"]["rejected"], error=error)
    finally:
        network.close()
    for row in rows:
        row["dask"] = dask_seconds(row["n"], repeats, row["kernel"])

    print()
    print("numpy s: with numpy's own OpenBLAS kernel / with the volunteers' (kernel named); "
          "numpy÷ ratios use the faster")
    print("| N | numpy s | backend s | network s | dask s | numpy÷network | backend÷network | "
          "dask: numpy÷dask | verify ÷ compute | wire ÷ raw | tiles |")
    print("|--:|--|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for r in rows:
        dask = f"{r['dask']:.3f}" if r["dask"] else "n/a"
        dask_ratio = f"{r['numpy'] / r['dask']:.2f}" if r["dask"] else "n/a"
        numpy_cell = f"{r['numpy_own']:.3f} ({own_kernel})"
        if r["kernel"] != own_kernel:
            numpy_cell += f" / {r['numpy_theirs']:.3f} ({r['kernel']})"
        print(f"| {r['n']} | {numpy_cell} | {r['backend']:.3f} | {r['network']:.3f} | {dask} | "
              f"{r['numpy'] / r['network']:.2f} | {r['backend'] / r['network']:.2f} | {dask_ratio} | "
              f"{100 * r['verify_share']:.2f} % | {r['wire']:.4f} | {r['tiles']} |")


def scheduler_run(tiles_side, repeats, slots):
    """The best of `repeats` runs of one job of tiles_side² tiles of 16×16 (K = 16) on 2
    volunteers with `slots` slots each: (seconds end to end, the node's job seconds, tiles)."""
    k = 16
    m = n = 16 * tiles_side
    network = Network(slots=slots)
    try:
        with goblin.connect(network.url, token=network.token) as client:
            rng = np.random.default_rng(7)
            A = rng.standard_normal((m, k), dtype=np.float32)
            B = rng.standard_normal((k, n), dtype=np.float32)
            client.matmul(A, B, tile=[16, 16])  # warm-up: first-touch pages, thread pools
            best = None
            for _ in range(repeats):
                started = time.perf_counter()
                client.matmul(A, B, tile=[16, 16])
                seconds = time.perf_counter() - started
                summary = client.last_summary
                if best is None or seconds < best[0]:
                    best = (seconds, summary)
    finally:
        network.close()
    seconds, summary = best
    return seconds, summary["seconds"], summary["tiles"]


def bench_scheduler(tiles_side, repeats, slot_counts):
    rows = [(slots, *scheduler_run(tiles_side, repeats, slots)) for slots in slot_counts]
    print()
    print("| scheduler: 16×16 tiles, K = 16, 2 volunteers | slots each | tiles | end-to-end s "
          "| node job s | tiles/s (end-to-end) | tiles/s (node) |")
    print("|--|--:|--:|--:|--:|--:|--:|")
    for slots, seconds, node_seconds, tiles in rows:
        print(f"| | {slots} | {tiles} | {seconds:.2f} | {node_seconds:.2f} | "
              f"{tiles / seconds:.0f} | {tiles / node_seconds:.0f} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2048, 4096])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tiles-side", type=int, default=100, help="scheduler job: side² tiles")
    parser.add_argument("--scheduler-slots", type=int, nargs="+", default=[2, 16],
                        help="the volunteers' --slots for the scheduler job (2 is their default: "
                             "4 tiles in flight make it a round-trip bound; 16, their most, keeps "
                             "the pipe full)")
    parser.add_argument("--scheduler-only", action="store_true", help="skip the matmul table")
    args = parser.parse_args()
    for binary in (LABNODE, VOLUNTEER, GEMM):
        if not binary.exists():
            sys.exit(f"missing {binary}: build first (bash scripts/build.sh)")
    if not args.scheduler_only:
        bench_matmul(args.sizes, args.repeats)
    bench_scheduler(args.tiles_side, args.repeats, args.scheduler_slots)


if __name__ == "__main__":
    main()
