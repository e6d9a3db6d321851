"""The volunteer runs the OpenBLAS kernel its CPU allows.

OpenBLAS picks kernels from the CPU's model when it loads; a release older than the CPU falls back
to its SSE3 kernel (Debian 12's 0.3.21 runs Prescott on this machine's AVX-512 Xeon, five times
slower). The volunteer then runs itself again with OPENBLAS_CORETYPE set, unless whoever started
it set the variable. The CPU's level here is read from /proc/cpuinfo, not from our code.
"""

import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import VOLUNTEER, require_binaries

pytestmark = pytest.mark.integration

# OpenBLAS's x86-64 kernels by the vector level they need (0 SSE, 1 AVX, 2 AVX2, 3 AVX-512).
KERNEL_LEVEL = {"Prescott": 0, "Core2": 0, "Penryn": 0, "Nehalem": 0, "Atom": 0, "Barcelona": 0,
                "Sandybridge": 1, "Bulldozer": 1, "Piledriver": 1, "Steamroller": 1,
                "Haswell": 2, "Zen": 2, "Excavator": 2, "SkylakeX": 3, "Cooperlake": 3}


def cpu_level():
    flags = set()
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        return 3
    if {"avx2", "fma"} <= flags:
        return 2
    return 1 if "avx" in flags else 0


def listed_kernel(env):
    require_binaries()
    done = subprocess.run([str(VOLUNTEER), "--list-devices"], capture_output=True, text=True,
                          timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    match = re.search(r"^cpu\s+cpu-eigen\s+CPU \(Eigen \+ OpenBLAS (\w+)\)", done.stdout, re.M)
    assert match, done.stdout
    return match.group(1)


def test_volunteer_runs_a_kernel_at_its_cpus_level():
    env = {key: value for key, value in os.environ.items() if key != "OPENBLAS_CORETYPE"}
    kernel = listed_kernel(env)
    assert kernel in KERNEL_LEVEL, kernel
    assert KERNEL_LEVEL[kernel] >= cpu_level(), (kernel, cpu_level())


def test_a_kernel_set_by_whoever_started_the_volunteer_stands():
    # Even one below the CPU's level: the variable is the volunteer's owner's choice.
    assert listed_kernel(dict(os.environ, OPENBLAS_CORETYPE="Prescott")) == "Prescott"
