"""Fixtures that start real goblin-labnode and goblin-volunteer processes on loopback.

Tests that start any process (these fixtures, the adversary, goblin-run-graph, a staff command)
carry `pytest.mark.integration`; a test without it that starts one fails (see
pytest_runtest_protocol below), so `pytest -m "not integration"` runs the unit tests only.

The binaries come from $GOBLIN_BUILD_DIR (default <repo>/build/ci). When they are missing the
integration tests fail (they never skip): a green run must mean the real programs were tested.
Every child process dies with the test run (PR_SET_PDEATHSIG) and every wait is bounded.
"""

import ctypes
import faulthandler
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import pytest

import goblin

REPO = Path(__file__).resolve().parents[2]
TESTS = Path(__file__).resolve().parent
_build = Path(os.environ.get("GOBLIN_BUILD_DIR", str(REPO / "build" / "ci")))
BUILD_DIR = _build if _build.is_absolute() else REPO / _build
LABNODE = BUILD_DIR / "app" / "labnode" / "goblin-labnode"
VOLUNTEER = BUILD_DIR / "app" / "volunteer-gui" / "goblin-volunteer"

LISTENING = re.compile(r"^goblin-labnode listening on 127\.0\.0\.1:(\d+)$")
START_TIMEOUT = 30.0
# The longest any single integration test may run before the watchdog dumps stacks and exits.
WATCHDOG_SECONDS = 600


def die_with_parent():
    # Children must not outlive a crashed or killed test run.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


class Process:
    """A child process whose output lines a thread collects and copies to a log file."""

    def __init__(self, name: str, argv: List[str], log_path: Path, env=None):
        self.name = name
        self.argv = argv
        self.lines: List[str] = []
        self._changed = threading.Condition()
        self._log = open(log_path, "w", encoding="utf-8")
        self.popen = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, env=env, text=True,
                                      errors="replace", bufsize=1,
                                      preexec_fn=die_with_parent)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.popen.stdout:
            line = line.rstrip("\n")
            try:
                self._log.write(line + "\n")
                self._log.flush()
            except ValueError:  # the log was closed after a stop() that timed out
                pass
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for_line(self, pattern: "re.Pattern[str]", timeout: float,
                      first_only: bool = False) -> "re.Match[str]":
        """The first output line matching `pattern`; fails the test after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                candidates = self.lines[:1] if first_only else self.lines
                for line in candidates:
                    match = pattern.search(line)
                    if match:
                        return match
                if first_only and self.lines:
                    pytest.fail("%s printed %r first, expected a line matching %r\n%s"
                                % (self.name, self.lines[0], pattern.pattern, self.tail()))
                if self.popen.poll() is not None and not self._reader.is_alive():
                    pytest.fail("%s exited with %s before printing %r\n%s"
                                % (self.name, self.popen.returncode, pattern.pattern, self.tail()))
                left = deadline - time.monotonic()
                if left <= 0:
                    pytest.fail("%s printed no line matching %r within %.0f s\n%s"
                                % (self.name, pattern.pattern, timeout, self.tail()))
                self._changed.wait(min(left, 0.5))

    def alive(self) -> bool:
        return self.popen.poll() is None

    def kill9(self) -> None:
        if self.alive():
            self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(10)

    def stop(self, timeout: float = 10.0) -> Optional[int]:
        """SIGTERM, then SIGKILL after `timeout`; returns the exit status."""
        if self.alive():
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(10)
        self._reader.join(5)
        self._log.close()
        return self.popen.returncode

    def tail(self, count: int = 40) -> str:
        lines = list(self.lines[-count:])
        return "---- last %d lines of %s ----\n%s" % (len(lines), self.name, "\n".join(lines))


def require_binaries() -> None:
    missing = [str(path) for path in (LABNODE, VOLUNTEER) if not os.access(path, os.X_OK)]
    if missing:
        pytest.fail("integration tests need the C++ programs, missing: %s. Build them first "
                    "(cmake --preset ci && cmake --build --preset ci) or point GOBLIN_BUILD_DIR "
                    "at a build folder." % ", ".join(missing), pytrace=False)


class Cluster:
    """One lab node (database + data folder under `root`), its volunteers and its clients."""

    def __init__(self, root: Path):
        require_binaries()
        self.root = root
        self.db = root / "node.db"
        self.data_dir = root / "data"
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.node: Optional[Process] = None
        self.port: Optional[int] = None
        self.processes: List[Process] = []
        self.clients: List[goblin.Client] = []
        self._counter = 0
        # Scheme and host of the node's URL for volunteers and clients (test_tls.py: wss://localhost).
        self.origin = "ws://127.0.0.1"

    @property
    def url(self) -> str:
        return "%s:%d" % (self.origin, self.port)

    def next_name(self, name: str) -> str:
        self._counter += 1
        return "%s-%d" % (name, self._counter)

    def staff(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """Runs a staff command (`goblin-labnode ARGS --db <db>`); asserts exit 0 if `check`."""
        done = subprocess.run([str(LABNODE)] + list(args) + ["--db", str(self.db)],
                              capture_output=True, text=True, timeout=30,
                              preexec_fn=die_with_parent)
        if check:
            assert done.returncode == 0, "goblin-labnode %s failed (%d): %s" % (
                " ".join(args), done.returncode, done.stderr)
        return done

    def init_db(self) -> None:
        """`goblin-labnode init` unless the database exists (every other command needs one)."""
        if not self.db.exists():
            self.staff("init")

    def add_researcher(self, email: str = "alice@example.org") -> str:
        self.init_db()
        done = subprocess.run([str(LABNODE), "researcher", "add", email, "--db", str(self.db)],
                              capture_output=True, text=True, timeout=30,
                              preexec_fn=die_with_parent)
        assert done.returncode == 0, "researcher add failed (%d): %s" % (done.returncode,
                                                                         done.stderr)
        token = done.stdout.strip()
        assert token and "\n" not in token, "researcher add printed %r, not one token" % done.stdout
        return token

    def start_node(self, lease_seconds: Optional[int] = None, port: int = 0,
                   extra_args: Sequence[str] = ()) -> Process:
        """Starts `serve` (a free port unless `port` is given) and waits for its first line."""
        self.init_db()
        argv = [str(LABNODE), "serve", "--db", str(self.db), "--listen", "127.0.0.1:%d" % port,
                "--data-dir", str(self.data_dir)]
        if lease_seconds is not None:
            argv += ["--lease-seconds", str(lease_seconds)]
        argv += list(extra_args)
        name = self.next_name("labnode")
        node = Process(name, argv, self.root / (name + ".log"))
        self.processes.append(node)
        match = node.wait_for_line(LISTENING, START_TIMEOUT, first_only=True)
        assert port in (0, int(match.group(1))), match.group(0)
        self.node, self.port = node, int(match.group(1))
        return node

    def start_volunteer(self, threads: int = 1, slots: int = 2,
                        config_dir: Optional[Path] = None, extra_args: Sequence[str] = (),
                        extra_env: Optional[Dict[str, str]] = None) -> Process:
        """Starts a headless volunteer; `extra_args` (e.g. ["--devices", "gpu0"]) go last."""
        name = self.next_name("volunteer")
        config_dir = config_dir or self.root / name
        config_dir.mkdir(parents=True, exist_ok=True)
        argv = [str(VOLUNTEER), "--headless", "--node", self.url, "--config-dir", str(config_dir),
                "--threads", str(threads), "--slots", str(slots)] + list(extra_args)
        runtime_dir = self.root / "xdg-runtime"
        runtime_dir.mkdir(mode=0o700, exist_ok=True)
        env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_RUNTIME_DIR=str(runtime_dir),
                   **(extra_env or {}))
        volunteer = Process(name, argv, self.root / (name + ".log"), env=env)
        volunteer.config_dir = config_dir
        self.processes.append(volunteer)
        return volunteer

    def start_dishonest(self, corruption: float = 1000.0, mode: str = "add",
                        catalog: int = 3) -> "tuple[Process, str]":
        """Starts tests/dishonest_volunteer.py; returns it and its volunteer id once registered."""
        name = self.next_name("dishonest")
        argv = [sys.executable, str(TESTS / "dishonest_volunteer.py"), "--node", self.url,
                "--corruption", repr(corruption), "--mode", mode, "--catalog", str(catalog)]
        process = Process(name, argv, self.root / (name + ".log"))
        self.processes.append(process)
        match = process.wait_for_line(re.compile(r"^dishonest volunteer (v-\S+)$"), START_TIMEOUT)
        return process, match.group(1)

    def start_adversary(self, strategy: str, identities: int = 1,
                        extra_args: Sequence[str] = ()) -> "tuple[Process, List[str]]":
        """Starts tests/adversary (`python -m adversary`, which never imports goblin) with one
        strategy; returns it and its volunteer ids once `identities` of them registered."""
        name = self.next_name("adversary-" + strategy)
        argv = [sys.executable, "-m", "adversary", "--node", self.url, "--strategy", strategy,
                "--identities", str(identities)] + list(extra_args)
        env = dict(os.environ, PYTHONPATH=str(TESTS), PYTHONNOUSERSITE="1")
        process = Process(name, argv, self.root / (name + ".log"), env=env)
        self.processes.append(process)
        pattern = re.compile(r"^adversary identity (v-\S+)$")
        process.wait_for_line(re.compile(r"^(?:adversary identity v-\S+|sybil registered .*)$"),
                              START_TIMEOUT)
        deadline = time.monotonic() + START_TIMEOUT
        while len([l for l in list(process.lines) if pattern.match(l)]) < identities:
            if not process.alive() or time.monotonic() > deadline:
                pytest.fail("%s registered fewer than %d identities\n%s"
                            % (name, identities, process.tail()))
            time.sleep(0.05)
        ids = [pattern.match(l).group(1) for l in list(process.lines) if pattern.match(l)]
        return process, ids

    def connect(self, token: Optional[str], timeout: float = 60.0) -> goblin.Client:
        client = goblin.connect(self.url, token=token, timeout=timeout)
        self.clients.append(client)
        return client

    def query(self, sql: str, args=()) -> list:
        """Rows of a read-only query on the node's database."""
        with sqlite3.connect("file:%s?mode=ro" % self.db, uri=True, timeout=10) as db:
            return db.execute(sql, args).fetchall()

    def wait_until(self, condition, timeout: float, what: str, interval: float = 0.02):
        deadline = time.monotonic() + timeout
        while True:
            value = condition()
            if value:
                return value
            if time.monotonic() > deadline:
                pytest.fail("timed out after %.0f s waiting for %s\n%s"
                            % (timeout, what, self.logs()))
            time.sleep(interval)

    def accepted_tasks(self, job: str) -> Dict[int, tuple]:
        """task id -> (attempt, volunteer, created_at) of every accepted result of `job`."""
        rows = self.query("SELECT r.task_id, r.attempt, r.volunteer_id, r.created_at "
                          "FROM results r JOIN tasks t ON t.id = r.task_id "
                          "WHERE t.job_id = ? AND r.verdict = 'accepted'", (job,))
        return {row[0]: tuple(row[1:]) for row in rows}

    def job_state(self, job: str) -> Optional[str]:
        rows = self.query("SELECT state FROM jobs WHERE id = ?", (job,))
        return rows[0][0] if rows else None

    def logs(self) -> str:
        return "\n".join(process.tail() for process in self.processes)

    def shutdown(self) -> None:
        for client in self.clients:
            client.close()
        for process in self.processes:
            process.stop()


class UnmarkedProcessError(AssertionError):
    """A test without pytest.mark.integration started a process."""


def refuse_processes(item):
    """A stand-in for subprocess.Popen while `item` (an unmarked test) runs, from its fixtures'
    setup to its teardown: every process start fails the test."""
    real = subprocess.Popen

    class Refused(real):
        def __init__(self, args, *rest, **options):
            raise UnmarkedProcessError(
                "%s starts a process (%r) but has no pytest.mark.integration: mark it (a "
                "module-level `pytestmark = pytest.mark.integration` when its fixtures start "
                "processes)" % (item.nodeid, args))

    return Refused


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Unit tests (no integration marker) may not start processes: subprocess.Popen (which
    subprocess.run and every fixture here use) refuses while one runs."""
    if item.get_closest_marker("integration") is not None:
        yield
        return
    real = subprocess.Popen
    subprocess.Popen = refuse_processes(item)
    try:
        yield
    finally:
        subprocess.Popen = real


@pytest.fixture(autouse=True)
def _watchdog():
    """A hung test dumps every thread's stack and ends the run instead of hanging CI."""
    faulthandler.dump_traceback_later(WATCHDOG_SECONDS, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


@pytest.fixture
def cluster(tmp_path):
    """A fresh node root for one test; everything it started is stopped afterwards."""
    instance = Cluster(tmp_path)
    yield instance
    instance.shutdown()
    print(instance.logs())  # shown by pytest only when the test failed


@pytest.fixture(scope="module")
def shared_cluster(tmp_path_factory):
    """A running node with two honest volunteers and a researcher token, shared by a module."""
    instance = Cluster(tmp_path_factory.mktemp("shared"))
    try:
        instance.token = instance.add_researcher()
        instance.start_node()
        instance.start_volunteer(threads=1, slots=2)
        instance.start_volunteer(threads=1, slots=2)
        yield instance
    finally:
        instance.shutdown()
        print(instance.logs())
