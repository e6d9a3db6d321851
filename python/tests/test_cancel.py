"""Cancelling jobs on a real lab node (protocol 4): a researcher's client.cancel() / Job.cancel()
and lab staff's `goblin-labnode jobs cancel|purge`, for matmul and graph jobs; a volunteer still
computing a cancelled job's task gets `stale` and nothing else; another researcher's job and an
unknown id are refused; a Ctrl-C during a submit never leaves an orphaned job."""

import re

import numpy as np
import pytest

import goblin
from goblin import lifecycle
from goblin.errors import InputError, JobCancelledError, RemoteError

from test_graph_network import NO_AUDITS, mlp_graph, inputs_for, quarantined, wait_for_volunteers  # noqa: E402,E501

pytestmark = pytest.mark.integration  # starts a lab node and volunteers

JOB_TIMEOUT = 120.0


def blobs(cluster):
    return sorted(p.name for p in (cluster.data_dir / "blobs").glob("*.bin"))


def results(cluster):
    return sorted(p.name for p in (cluster.data_dir / "results").glob("*"))


def matrices(m=64, k=32, n=64, seed=1):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, k)), rng.standard_normal((k, n))


def test_researcher_cancels_a_matmul_job(cluster):
    token = cluster.add_researcher()
    other = cluster.add_researcher("bob@example.org")
    cluster.start_node()  # no volunteer: the job waits
    client = cluster.connect(token)
    A, B = matrices()
    job = client.submit_matmul(A, B, tile=[16, 16])
    assert isinstance(job, goblin.Job) and isinstance(job, str) and job.startswith("j-")
    assert cluster.job_state(job) == "running" and blobs(cluster)
    assert not job.done()

    # Another researcher's job is "not found", like an unknown id: ids reveal nothing.
    intruder = cluster.connect(other)
    for target in (job.id, "j-00000000"):
        with pytest.raises(RemoteError) as refused:
            intruder.cancel(target)
        assert refused.value.code == "not_found"
    assert cluster.job_state(job) == "running"
    assert [j.id for j in intruder.jobs()] == []

    assert job.cancel() is True
    assert cluster.job_state(job) == "cancelled"
    assert blobs(cluster) == [] and results(cluster) == []
    cluster.node.wait_for_line(re.compile("job %s cancelled by its researcher" % job), 10)
    assert job.done() and job.cancelled()
    with pytest.raises(JobCancelledError) as cancelled:
        job.result(timeout=JOB_TIMEOUT)
    assert cancelled.value.code == "cancelled"
    # Cancelling again answers cancelled; a fetch on another connection says cancelled too.
    assert client.cancel(job) == "cancelled"
    later = cluster.connect(token)
    with pytest.raises(JobCancelledError):
        later.fetch(job.id, timeout=JOB_TIMEOUT)
    listed = {j.id: j for j in later.jobs()}
    assert listed[job.id].state == "cancelled" and listed[job.id].kind == "matmul"
    assert listed[job.id].total == 16

    # A volunteer arriving now never gets a task of the cancelled job; a new job runs.
    cluster.start_volunteer(threads=1, slots=2)
    C = client.matmul(A, B, tile=[32, 32], timeout=JOB_TIMEOUT)
    np.testing.assert_allclose(C, A @ B, rtol=1e-12, atol=1e-12)
    assert cluster.query("SELECT count(*) FROM results r JOIN tasks t ON t.id = r.task_id "
                         "WHERE t.job_id = ?", (job.id,)) == [(0,)]
    # A finished job cannot be cancelled.
    finished = client.submit_matmul(A, B, tile=[32, 32])
    cluster.wait_until(lambda: cluster.job_state(finished) == "done", JOB_TIMEOUT, "job done")
    with pytest.raises(InputError):
        client.cancel(finished)
    assert finished.cancel() is False
    np.testing.assert_allclose(finished.result(timeout=JOB_TIMEOUT), A @ B, rtol=1e-12, atol=1e-12)
    assert finished.summary["tiles"] == 4


def test_cancelled_graph_task_in_flight_is_answered_stale(cluster):
    token = cluster.add_researcher()
    cluster.start_node(extra_args=NO_AUDITS)
    slow, slow_id = cluster.start_dishonest(mode="slow")  # right answers, 2 s each
    client = cluster.connect(token)
    job = client.submit_graph(mlp_graph(), inputs_for(), batch=0, chunks=2)
    assert job.kind == "graph"
    cluster.wait_until(lambda: cluster.query(
        "SELECT count(*) FROM task_leases WHERE kind = 'graph' AND volunteer_id = ?",
        (slow_id,))[0][0] > 0, 30, "a lease of the slow volunteer")
    job.cancel()
    assert cluster.query("SELECT state FROM graph_jobs WHERE id = ?", (job.id,)) == [("cancelled",)]
    assert blobs(cluster) == []
    # Its late answer is stale, costs it nothing, and decides nothing.
    slow.wait_for_line(re.compile(r"^verdict task \d+ attempt \d+: stale$"), 30)
    assert not quarantined(cluster, slow_id)
    assert cluster.query("SELECT count(*) FROM graph_results") == [(0,)]
    with pytest.raises(JobCancelledError):
        job.result(timeout=JOB_TIMEOUT)
    with pytest.raises(JobCancelledError):
        cluster.connect(token).fetch_outputs(job.id, timeout=JOB_TIMEOUT)


def test_staff_cancel_and_purge(cluster):
    token = cluster.add_researcher()
    cluster.start_node()
    client = cluster.connect(token)
    A, B = matrices()
    job = client.submit_matmul(A, B, tile=[32, 32])

    refused = cluster.staff("jobs", "purge", job, check=False)
    assert refused.returncode != 0 and "cancel it first" in refused.stderr
    assert cluster.job_state(job) == "running"

    done = cluster.staff("jobs", "cancel", job)
    assert "job %s cancelled" % job in done.stdout
    assert cluster.job_state(job) == "cancelled" and blobs(cluster) == []
    cluster.node.wait_for_line(re.compile("job %s cancelled by lab staff" % job), 10)
    with pytest.raises(JobCancelledError) as cancelled:
        job.result(timeout=JOB_TIMEOUT)
    assert "lab staff" in str(cancelled.value)
    again = cluster.staff("jobs", "cancel", job, check=False)
    assert again.returncode != 0 and "only a running job" in again.stderr

    assert "job %s purged" % job in cluster.staff("jobs", "purge", job).stdout
    assert cluster.query("SELECT count(*) FROM jobs WHERE id = ?", (job.id,)) == [(0,)]
    assert cluster.query("SELECT count(*) FROM tasks WHERE job_id = ?", (job.id,)) == [(0,)]
    assert job.id not in [j.id for j in client.jobs()]
    missing = cluster.staff("jobs", "cancel", job, check=False)
    assert missing.returncode != 0 and "no job" in missing.stderr

    # A finished graph job is purged with its records and data.
    cluster.start_volunteer(threads=1, slots=2)
    cluster.start_volunteer(threads=1, slots=2)
    wait_for_volunteers(cluster, 2)
    graph = client.submit_graph(mlp_graph(), inputs_for(), batch=0, chunks=2)
    cluster.wait_until(lambda: cluster.query("SELECT state FROM graph_jobs") == [("done",)],
                       JOB_TIMEOUT, "the graph job done")
    assert blobs(cluster) and cluster.query("SELECT count(*) FROM graph_results")[0][0] > 0
    cluster.staff("jobs", "purge", graph)
    assert cluster.query("SELECT count(*) FROM graph_jobs") == [(0,)]
    assert cluster.query("SELECT count(*) FROM graph_results") == [(0,)]
    assert blobs(cluster) == []
    with pytest.raises(RemoteError) as gone:
        graph.result(timeout=JOB_TIMEOUT)
    assert gone.value.code == "not_found"


def test_jobs_lists_only_the_researchers_own(cluster):
    alice = cluster.add_researcher()
    bob = cluster.add_researcher("bob@example.org")
    cluster.start_node()
    a, b = cluster.connect(alice), cluster.connect(bob)
    A, B = matrices()
    first = a.submit_matmul(A, B, tile=[16, 16])
    second = a.submit_matmul(A, B, tile=[32, 32])
    theirs = b.submit_matmul(A, B)
    listed = a.jobs()
    assert [j.id for j in listed] == [second.id, first.id]  # newest first
    assert all(j.kind == "matmul" and j.state == "running" and j.done == 0 for j in listed)
    assert [j.total for j in listed] == [4, 16]
    assert listed[0].created >= listed[1].created and listed[1].created_epoch > 0
    assert listed[1].created.tzinfo is not None
    assert [j.id for j in b.jobs()] == [theirs.id]


def test_a_job_nothing_computes_says_so(cluster):
    token = cluster.add_researcher()
    cluster.start_node()
    client = cluster.connect(token)
    A, B = matrices()
    job = client.submit_matmul(A, B)
    cluster.wait_until(lambda: job.done() or job.waiting, 30, "the node saying the job waits")
    assert job.waiting == "no volunteer is connected to compute it" and not job.done()
    cluster.node.wait_for_line(re.compile("job %s waits: no volunteer is connected" % job), 10)
    cluster.start_volunteer(threads=1, slots=2)
    np.testing.assert_allclose(job.result(timeout=JOB_TIMEOUT), A @ B, rtol=1e-12, atol=1e-12)
    assert job.waiting is None


def test_interrupted_upload_leaves_no_job(cluster, monkeypatch):
    token = cluster.add_researcher()
    cluster.start_node()
    client = cluster.connect(token)
    A, B = matrices()
    sent = []
    real_send = client.transport.send

    def send(data):  # Ctrl-C after the control message and A, before B
        sent.append(data)
        if len(sent) == 3:
            raise KeyboardInterrupt
        real_send(data)

    monkeypatch.setattr(client.transport, "send", send)
    with pytest.raises(KeyboardInterrupt):
        client.submit_matmul(A, B)
    monkeypatch.undo()
    later = cluster.connect(token)
    assert later.jobs() == [] and cluster.query("SELECT count(*) FROM jobs") == [(0,)]
    assert blobs(cluster) == []


def test_interrupt_while_awaiting_acceptance_cancels_the_job(cluster, monkeypatch):
    token = cluster.add_researcher()
    cluster.start_node()
    client = cluster.connect(token)
    A, B = matrices()
    real_reply = client.connection.reply
    calls = []

    def reply(request_id, kind, timeout=None):  # Ctrl-C once, while job_accepted is awaited
        calls.append(kind)
        if calls.count("submit_matmul") == 1 and kind == "submit_matmul":
            raise KeyboardInterrupt
        return real_reply(request_id, kind, timeout)

    monkeypatch.setattr(client.connection, "reply", reply)
    with pytest.raises(KeyboardInterrupt):
        client.submit_matmul(A, B)
    monkeypatch.undo()
    listed = cluster.connect(token).jobs()
    assert len(listed) == 1 and listed[0].state == "cancelled"
    assert blobs(cluster) == []


def test_interrupted_wait_leaves_the_job_fetchable(cluster, monkeypatch, capsys):
    token = cluster.add_researcher()
    cluster.start_node()
    client = cluster.connect(token)
    A, B = matrices()

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(lifecycle, "finish", interrupted)
    with pytest.raises(KeyboardInterrupt):
        client.matmul(A, B)
    monkeypatch.undo()
    job = client.last_job
    assert job in capsys.readouterr().err  # the id is on the terminal
    assert cluster.job_state(job) == "running"
    cluster.start_volunteer(threads=1, slots=2)
    C = cluster.connect(token).fetch(job, timeout=JOB_TIMEOUT)
    np.testing.assert_allclose(C, A @ B, rtol=1e-12, atol=1e-12)
