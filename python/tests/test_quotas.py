"""Per-researcher quotas against a real lab node: a job over the bytes or FLOPs quota is refused
before its upload (nothing reaches the node's data folder, no job row), naming the limit; the
running-jobs limit; staff's `researchers quota`; fetch of a released job says it was released."""

import numpy as np
import pytest

import goblin
from goblin import graph as goblin_graph
from test_researcher_notices import single_input_graph

pytestmark = pytest.mark.integration  # starts a lab node (and a volunteer)

EMAIL = "alice@example.org"


def stored_files(cluster):
    return sorted(str(p.relative_to(cluster.data_dir)) for p in cluster.data_dir.rglob("*")
                  if p.is_file() and p.name != "access-codes.txt")


def matrices(n=32):
    rng = np.random.default_rng(7)
    return (rng.standard_normal((n, n)).astype(np.float32),
            rng.standard_normal((n, n)).astype(np.float32))


def test_a_job_over_the_quota_is_refused_before_its_upload(cluster):
    token = cluster.add_researcher(EMAIL)
    shown = cluster.staff("researchers", "quota", EMAIL).stdout
    assert "max_bytes 68,719,476,736\tmax_flops 1e+16\tmax_running_jobs 16" in shown
    set_to = cluster.staff("researchers", "quota", EMAIL, "--max-bytes", "4KiB").stdout
    assert "max_bytes 4,096\t" in set_to
    cluster.start_node()
    before = stored_files(cluster)
    client = cluster.connect(token)
    A, B = matrices()  # 8 KiB together
    with pytest.raises(goblin.LimitExceededError,
                       match=r"the job uploads 8\.0 KiB .*over your quota max_bytes of 4\.0 KiB"):
        client.matmul(A, B, timeout=30)
    cluster.staff("researchers", "quota", EMAIL, "--max-bytes", "1GiB", "--max-flops", "1e4")
    with pytest.raises(goblin.LimitExceededError,
                       match=r"about 6\.55e\+04 FLOPs, over your quota max_flops of 1e\+04"):
        client.matmul(A, B, timeout=30)
    assert client.last_estimate == goblin.Estimate("matmul", 8192, None, "tiles", 65536.0)
    assert cluster.query("SELECT count(*) FROM jobs") == [(0,)]
    assert stored_files(cluster) == before  # not one byte of A or B was stored


def test_the_running_jobs_limit(cluster):
    token = cluster.add_researcher(EMAIL)
    cluster.staff("researchers", "quota", EMAIL, "--max-running-jobs", "2")
    cluster.start_node()  # no volunteer: submitted jobs keep running
    client = cluster.connect(token)
    A, B = matrices(8)
    first, _ = client.submit_matmul(A, B), client.submit_matmul(A, B)
    with pytest.raises(goblin.LimitExceededError,
                       match="you have 2 running jobs, your quota max_running_jobs is 2"):
        client.submit_matmul(A, B)
    with pytest.raises(goblin.LimitExceededError, match="max_running_jobs"):
        client.submit_graph(single_input_graph(), [np.ones((2, 3), np.float32)])
    first.cancel()
    assert client.submit_matmul(A, B).startswith("j-")


def test_staff_quota_options_are_range_checked(cluster):
    cluster.add_researcher(EMAIL)
    for option, value in (("--max-bytes", "0"), ("--max-bytes", "lots"),
                          ("--max-flops", "-1"), ("--max-running-jobs", "-1")):
        done = cluster.staff("researchers", "quota", EMAIL, option, value, check=False)
        assert done.returncode != 0 and option in done.stderr, (option, value, done.stderr)
    unknown = cluster.staff("researchers", "quota", "bob@example.org", check=False)
    assert unknown.returncode != 0 and "no researcher bob@example.org" in unknown.stderr


def test_fetch_of_a_released_job_says_it_was_released(cluster):
    token = cluster.add_researcher(EMAIL)
    cluster.start_node()
    cluster.start_volunteer()
    client = cluster.connect(token)
    A, B = matrices(16)
    client.matmul(A, B, timeout=120)
    job = client.last_job
    [y] = client.run(single_input_graph(), [np.ones((2, 3), np.float32)],
                     verification="freivalds", timeout=120)
    graph_job = client.last_job
    later = cluster.connect(token)
    with pytest.raises(goblin.JobReleasedError, match="job %s was released" % job):
        later.fetch(job)
    with pytest.raises(goblin.JobReleasedError, match="job %s was released" % graph_job):
        later.fetch_outputs(graph_job)


def test_graph_and_training_jobs_over_the_flops_quota_are_refused_and_nothing_is_kept(cluster):
    """A graph's or a training job's FLOPs are known once the node has planned it (after its
    upload): over the quota it is refused, naming the limit, and none of its data is kept."""
    torch = pytest.importorskip("torch")
    token = cluster.add_researcher(EMAIL)
    cluster.staff("researchers", "quota", EMAIL, "--max-flops", "1e5")
    cluster.start_node()
    before = stored_files(cluster)
    client = cluster.connect(token)
    g = goblin_graph.Graph()
    x = g.input("f32", [64, 64])
    g.output(g.matmul(x, g.constant(np.eye(64, dtype=np.float32))))
    inputs = [np.ones((64, 64), np.float32)]
    with pytest.raises(goblin.LimitExceededError,  # 2·64·64·64 multiply-adds
                       match=r"about 5\.24e\+05 FLOPs, over your quota max_flops of 1e\+05"):
        client.run(g, inputs, verification="freivalds", timeout=60)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64))
    xs, ys = torch.randn(16, 64), torch.randn(16, 64)
    with pytest.raises(goblin.GoblinError, match="over your quota max_flops of 1e\\+05"):
        client.train(model, torch.nn.functional.mse_loss, (xs, ys), rounds=2, batch_size=8,
                     progress=False, timeout=60)
    assert cluster.query("SELECT count(*) FROM graph_jobs") == [(0,)]
    assert cluster.query("SELECT count(*) FROM train_jobs") == [(0,)]
    assert stored_files(cluster) == before
    # Within the quota the same graph runs.
    cluster.staff("researchers", "quota", EMAIL, "--max-flops", "1e6")
    cluster.start_volunteer()
    [y] = client.run(g, inputs, verification="freivalds", timeout=120)
    np.testing.assert_array_equal(y, inputs[0])
