"""The headless volunteer build (cmake --preset nogui, i.e. -DGOBLIN_GUI=OFF): it links no Qt and
computes a real matmul job for a real lab node.

The binary comes from $GOBLIN_NOGUI_BUILD_DIR (default <repo>/build/nogui; scripts/test.sh builds
it). When it is missing the tests fail under CI=true and skip, with the reason, elsewhere.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import conftest
from conftest import REPO, Process
from goblin.accuracy import matmul_error

pytestmark = pytest.mark.integration

_build = Path(os.environ.get("GOBLIN_NOGUI_BUILD_DIR", str(REPO / "build" / "nogui")))
NOGUI_BUILD_DIR = _build if _build.is_absolute() else REPO / _build
NOGUI_VOLUNTEER = NOGUI_BUILD_DIR / "app" / "volunteer-gui" / "goblin-volunteer"
JOB_TIMEOUT = 120.0


@pytest.fixture
def nogui_volunteer() -> Path:
    if not os.access(NOGUI_VOLUNTEER, os.X_OK):
        reason = ("the GOBLIN_GUI=OFF volunteer is missing: %s (cmake --preset nogui && "
                  "cmake --build --preset nogui)" % NOGUI_VOLUNTEER)
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    return NOGUI_VOLUNTEER


def needed_libraries(binary: Path) -> list:
    readelf = shutil.which("readelf")
    assert readelf, "readelf (binutils) is needed to read the binary's dynamic section"
    done = subprocess.run([readelf, "-d", str(binary)], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", done.stdout)


def test_links_no_qt(nogui_volunteer):
    needed = needed_libraries(nogui_volunteer)
    # A dynamic executable always needs libc: an empty list would mean the parse failed.
    assert any(name.startswith("libc.so") for name in needed), needed
    qt = [name for name in needed if re.match(r"libQt\d", name)]
    assert not qt, "the headless volunteer links Qt: %s" % qt


def test_says_it_has_no_desktop_app(nogui_volunteer):
    done = subprocess.run([str(nogui_volunteer), "--minimized"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode != 0
    assert "no desktop app" in done.stderr and "GOBLIN_GUI=OFF" in done.stderr, done.stderr


def test_computes_a_matmul_job(cluster, nogui_volunteer):
    cluster.token = cluster.add_researcher()
    cluster.start_node()
    # Without --headless: a build without the GUI runs headless anyway.
    for _ in range(2):
        name = cluster.next_name("nogui-volunteer")
        config_dir = cluster.root / name
        config_dir.mkdir()
        argv = [str(nogui_volunteer), "--node", cluster.url, "--config-dir", str(config_dir),
                "--threads", "1", "--slots", "2"]
        cluster.processes.append(Process(name, argv, cluster.root / (name + ".log")))
    rng = np.random.default_rng(9)
    A = rng.standard_normal((96, 40))
    B = rng.standard_normal((40, 72))
    client = cluster.connect(cluster.token)
    C = client.matmul(A, B, tile=[32, 32], timeout=JOB_TIMEOUT)
    assert C.shape == (96, 72) and C.dtype == np.float64
    report = matmul_error(A, B, C)
    assert report["max_bound_ratio"] <= 1.0, report
    np.testing.assert_allclose(C, A @ B, rtol=1e-12, atol=1e-12)
    # Every tile was computed and accepted, and only the headless volunteers were there to do it.
    accepted = cluster.accepted_tasks(client.last_job)
    assert len(accepted) == 3 * 3, accepted
    assert [Path(p.argv[0]) for p in cluster.processes] == [conftest.LABNODE] + [nogui_volunteer] * 2


def test_version_and_polite_options(nogui_volunteer):
    done = subprocess.run([str(nogui_volunteer), "--version"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and "headless only" in done.stdout, (done.stdout, done.stderr)
    done = subprocess.run([str(nogui_volunteer), "--node", "ws://127.0.0.1:9", "--cpu-percent",
                           "0"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--cpu-percent must be 1 to 100" in done.stderr, done.stderr


def test_idle_only_says_where_idle_time_comes_from(cluster, nogui_volunteer):
    cluster.start_node()
    name = cluster.next_name("nogui-volunteer")
    config_dir = cluster.root / name
    config_dir.mkdir()
    argv = [str(nogui_volunteer), "--node", cluster.url, "--config-dir", str(config_dir),
            "--threads", "1", "--idle-only", "--cpu-percent", "50"]
    volunteer = Process(name, argv, cluster.root / (name + ".log"))
    cluster.processes.append(volunteer)
    # The Qt-free build has no X11: idle time comes from the terminals of logged-in users.
    volunteer.wait_for_line(re.compile(r"idle only: after 5 min without input; idle time from "
                                       r".*\(utmp\)"), 30)
    volunteer.wait_for_line(re.compile(r"registered with the lab node as v-"), 30)
