"""The OpenCL volunteer end to end: --list-devices, and a distributed matmul computed by one CPU
volunteer and one `--devices gpu0` volunteer (PoCL in CI), checked against the sound bound, with
the node's results table naming both backends.

Like the other integration tests these fail (never skip) when the programs are missing; the GPU
tests need an OpenCL device, which PoCL provides wherever the project's packages are installed.
"""

import os
import re
import subprocess

import numpy as np
import pytest

from conftest import VOLUNTEER, require_binaries
from test_integration import JOB_TIMEOUT, assert_exact_within_bound, random_matrices, tile_count

pytestmark = pytest.mark.integration

CONNECTED = re.compile(r"connected to \S+ as (v-[0-9a-f]+) \((\S+),")
OPENCL_READY = re.compile(r"OpenCL device gpu0: ")


def list_devices(extra_env=None):
    require_binaries()
    env = dict(os.environ, **(extra_env or {}))
    return subprocess.run([str(VOLUNTEER), "--list-devices"], capture_output=True, text=True,
                          timeout=120, env=env)


def test_list_devices_shows_cpu_and_opencl():
    done = list_devices()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:2] == ["DEVICE", "BACKEND"], done.stdout
    assert any(line.split()[:2] == ["cpu", "cpu-eigen"] for line in lines), done.stdout
    assert any(line.split()[:2] == ["gpu0", "opencl-clblast"] for line in lines), done.stdout


def test_list_devices_without_any_opencl_platform(tmp_path):
    # An empty vendor folder: the ICD loader finds no platform at all.
    done = list_devices({"OCL_ICD_VENDORS": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    assert "no platform or device found" in done.stdout, done.stdout
    assert any(line.split()[:2] == ["cpu", "cpu-eigen"] for line in done.stdout.splitlines())


def test_gpu_volunteer_without_opencl_falls_back_to_cpu(cluster, tmp_path):
    cluster.start_node()
    volunteer = cluster.start_volunteer(threads=1, slots=1, extra_args=["--devices", "gpu0"],
                                        extra_env={"OCL_ICD_VENDORS": str(tmp_path)})
    volunteer.wait_for_line(re.compile(r"OpenCL device gpu0 unavailable"), 60)
    assert volunteer.wait_for_line(CONNECTED, 60).group(2) == "cpu-eigen"


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_matmul_with_a_cpu_and_an_opencl_volunteer(cluster, dtype):
    token = cluster.add_researcher()
    cluster.start_node()
    cpu = cluster.start_volunteer(threads=1, slots=2)
    gpu = cluster.start_volunteer(threads=1, slots=2, extra_args=["--devices", "gpu0"])
    gpu.wait_for_line(OPENCL_READY, 120)
    gpu_connected = gpu.wait_for_line(CONNECTED, 120)
    assert gpu_connected.group(2) == "opencl-clblast", gpu.tail()
    cpu.wait_for_line(CONNECTED, 60)

    m, k, n, tile = 190, 161, 157, [32, 32]  # edge tiles are not multiples of any kernel tile
    A, B = random_matrices(m, k, n, dtype, seed=97)
    client = cluster.connect(token)
    C = client.matmul(A, B, tile=tile, timeout=JOB_TIMEOUT)
    assert_exact_within_bound(A, B, C)
    summary = client.last_summary
    assert summary["verdicts"] == {"accepted": tile_count(m, n, tile), "rejected": 0}, summary

    backends = dict(cluster.query(
        "SELECT r.backend, count(*) FROM results r WHERE r.verdict = 'accepted' GROUP BY r.backend"))
    assert set(backends) == {"cpu-eigen", "opencl-clblast"}, backends
    assert set(summary["backends"]) == {"cpu-eigen", "opencl-clblast"}, summary
