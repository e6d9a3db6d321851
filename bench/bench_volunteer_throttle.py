#!/usr/bin/env python3
"""Benchmark of the desktop volunteer's throttle (not a test: prints a table, asserts nothing).

Runs the real app (`goblin-volunteer` without --headless, Qt offscreen, settings in a private
XDG_CONFIG_HOME) against a real lab node on loopback, fed by the Python client, and measures:
  - idle footprint: resident memory and CPU % while connected with no work, and while waiting
    (throttled: outside the allowed hours) with tasks held;
  - how closely the process's CPU use follows the CPU-time limit (1 core lent; 25/50/75/100 %):
    the mean of per-second CPU % samples and their spread.
Usage: .venv/bin/python bench/bench_volunteer_throttle.py [--seconds 20]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("GOBLIN_BUILD_DIR", ROOT / "build" / "ci"))
LABNODE = BUILD / "app" / "labnode" / "goblin-labnode"
VOLUNTEER = BUILD / "app" / "volunteer-gui" / "goblin-volunteer"
sys.path.insert(0, str(ROOT / "python"))
import numpy as np  # noqa: E402
import goblin  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    fields = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime


def rss_mib(pid):
    match = re.search(r"VmRSS:\s+(\d+) kB", Path("/proc/%d/status" % pid).read_text())
    return int(match.group(1)) / 1024


def sample_cpu(pid, seconds, interval=1.0):
    """Per-interval CPU % of one core."""
    samples = []
    last_cpu, last_wall = cpu_seconds(pid), time.monotonic()
    for _ in range(int(seconds / interval)):
        time.sleep(interval)
        cpu, wall = cpu_seconds(pid), time.monotonic()
        samples.append(100.0 * (cpu - last_cpu) / (wall - last_wall))
        last_cpu, last_wall = cpu, wall
    return samples


class Feeder(threading.Thread):
    """Keeps jobs queued at the node so the volunteer never runs dry."""

    def __init__(self, url, token):
        super().__init__(daemon=True)
        self.url, self.token, self.stop = url, token, threading.Event()

    def run(self):
        rng = np.random.default_rng(1)
        # Big tiles (2·2048²·4096 flop per 64 MiB moved) so the volunteer, not the loopback or the
        # node's verification, is the bottleneck.
        A = rng.random((4096, 4096), dtype=np.float32)
        B = rng.random((4096, 4096), dtype=np.float32)
        try:
            with goblin.connect(self.url, token=self.token, timeout=600) as client:
                while not self.stop.is_set():
                    jobs = [client.submit_matmul(A, B, tile=[2048, 2048]) for _ in range(2)]
                    for job in jobs:
                        client.fetch(job)
        except goblin.GoblinError:
            pass  # the node shut down at the end of the run


def start_volunteer(work, url, settings, name):
    config = work / name / "config"
    (config / "gpu-goblin").mkdir(parents=True)
    lines = []
    for section, values in settings.items():
        lines.append("[%s]" % section)
        lines += ["%s=%s" % item for item in values.items()]
    (config / "gpu-goblin" / "goblin-volunteer.conf").write_text("\n".join(lines) + "\n")
    runtime = work / "xdg-runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(config),
               XDG_RUNTIME_DIR=str(runtime))
    log = open(work / (name + ".log"), "w")
    return subprocess.Popen([str(VOLUNTEER), "--node", url, "--config-dir", str(work / name / "id")],
                            env=env, stdout=log, stderr=subprocess.STDOUT)


def stop(process):
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=20.0, help="sampling window per limit")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="goblin-throttle-bench-"))
    subprocess.run([str(LABNODE), "init", "--db", str(work / "node.db")], check=True,
                   capture_output=True)
    token = subprocess.run([str(LABNODE), "researcher", "add", "bench@example.org", "--db",
                            str(work / "node.db")], capture_output=True, text=True,
                           check=True).stdout.strip()
    node = subprocess.Popen([str(LABNODE), "serve", "--db", str(work / "node.db"), "--listen",
                             "127.0.0.1:0", "--data-dir", str(work / "data")],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = "ws://" + node.stdout.readline().strip().rsplit(" ", 1)[1]
    threading.Thread(target=lambda: [None for _ in node.stdout], daemon=True).start()
    rows = []
    try:
        idle = start_volunteer(work, url, {"cpu": {"cores": 1}}, "idle")
        time.sleep(3)
        cpu = sample_cpu(idle.pid, 10)
        rows.append(("connected, no work", rss_mib(idle.pid), statistics.mean(cpu), None))
        stop(idle)

        feeder = Feeder(url, token)
        feeder.start()
        waiting = start_volunteer(work, url, {"cpu": {"cores": 1},
                                              "schedule": {"enabled": "true", "hours": ""}},
                                  "waiting")
        time.sleep(3)
        cpu = sample_cpu(waiting.pid, 10)
        rows.append(("waiting (outside hours), tasks held", rss_mib(waiting.pid),
                     statistics.mean(cpu), None))
        stop(waiting)

        for limit in (25, 50, 75, 100):
            volunteer = start_volunteer(work, url, {"cpu": {"cores": 1, "limit_percent": limit}},
                                        "limit%d" % limit)
            time.sleep(4)  # connect, first tasks, slice size settles
            cpu = sample_cpu(volunteer.pid, args.seconds)
            rows.append(("computing, CPU limit %d %%" % limit, rss_mib(volunteer.pid),
                         statistics.mean(cpu), statistics.pstdev(cpu)))
            stop(volunteer)
        feeder.stop.set()
    finally:
        stop(node)
    print("goblin-volunteer (desktop app, offscreen), 1 core lent; CPU %% of one core, "
          "sampled every 1 s; load average %.2f" % os.getloadavg()[0])
    print("| state | RSS MiB | CPU % mean | CPU % spread (stdev) |")
    print("| --- | --: | --: | --: |")
    for state, rss, mean, spread in rows:
        print("| %s | %.0f | %.1f | %s |" % (state, rss, mean,
                                          "-" if spread is None else "%.1f" % spread))


if __name__ == "__main__":
    main()
