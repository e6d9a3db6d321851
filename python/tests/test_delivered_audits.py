"""A lie that reached a researcher is corrected afterwards: with audits off, two colluding
identities (tests/adversary, which never imports goblin) agree on wrong outputs and the job is
delivered; later one of them is caught (a tie-break against honest volunteers), the node rechecks
the delivered — and already released — job, and `client.audit(job)` returns the corrected outputs,
equal to an independent reference. A real lab node, real headless volunteers, loopback sockets.
"""

import numpy as np
import pytest

from goblin import graph as gg
from goblin import reference

pytestmark = pytest.mark.integration

JOB_TIMEOUT = 120.0
EVENT_TIMEOUT = 60.0
NO_AUDITS = ["--probation-audits", "0", "--audit-floor", "0", "--shared-address-audit-rate", "0"]


def small_graph(batch, features=6, hidden=5, seed=13):
    """relu(x·W + b) and the row sums of its squares."""
    rng = np.random.default_rng(seed)
    g = gg.Graph()
    x = g.input("f32", [batch, features])
    w = g.constant(rng.standard_normal((features, hidden)).astype(np.float32))
    b = g.constant(rng.standard_normal((hidden,)).astype(np.float32))
    h = g.relu(g.add(g.matmul(x, w), b))
    g.output(h, g.sum(g.mul(h, h), dims=[1], keepdim=True))
    return g, [rng.standard_normal((batch, features)).astype(np.float32)]


def wrong_elements(g, inputs, outputs):
    expected = reference.run(g, inputs)
    assert len(outputs) == len(expected)
    wrong = 0
    for got, want in zip(outputs, expected):
        assert got.dtype == want.dtype and got.shape == want.shape
        wrong += int((~np.isclose(got, want, rtol=1e-5, atol=1e-6)).sum())
    return wrong


def test_a_delivered_lie_is_corrected_after_a_colluder_is_caught(cluster):
    token = cluster.add_researcher()
    cluster.start_node(extra_args=NO_AUDITS)
    adversary, ids = cluster.start_adversary("collude", identities=2,
                                             extra_args=["--slots", "2"])
    client = cluster.connect(token)
    g, inputs = small_graph(8)
    outputs = client.run(g, inputs, batch=0, chunks=4, timeout=JOB_TIMEOUT)
    job = client.last_job
    # With audits off, the pair's agreement decided every task: the lie was delivered (and the
    # client released the job).
    assert wrong_elements(g, inputs, outputs) > 0
    assert client.audit(job).state == "clean"

    # Honest volunteers join; on the next job a colluder disagrees with one of them and the node's
    # tie-break catches it. Which volunteers pair up on a task is up to who asks first, so the job
    # has 32 tasks: enough that some task pairs a colluder with an honest volunteer.
    for _ in range(2):
        cluster.start_volunteer(threads=1, slots=2)
    g2, inputs2 = small_graph(64, seed=14)
    outputs2 = client.run(g2, inputs2, batch=0, chunks=32, timeout=JOB_TIMEOUT)
    job2 = client.last_job

    reports = []
    cluster.wait_until(lambda: reports.append(client.audit(job)) or
                       reports[-1].state == "corrected", EVENT_TIMEOUT,
                       "the delivered job's audit to correct it")
    report = reports[-1]
    assert report.needs_attention
    assert report.audits and all(a["volunteer"] in ids for a in report.audits)
    assert sum(a["corrected"] for a in report.audits) == 4  # every task of the job
    assert wrong_elements(g, inputs, report.outputs) == 0
    # Both identities are quarantined: the caught one, and its partner overturned by the recheck.
    rows = cluster.query("SELECT volunteer_id FROM volunteer_trust WHERE quarantined_at IS NOT "
                         "NULL")
    assert set(ids) <= {row[0] for row in rows}
    overturned = cluster.query(
        "SELECT count(*) FROM graph_results r JOIN graph_tasks t ON t.id = r.task_id "
        "WHERE t.job_id = ? AND r.method = 'delivered-recheck'", (job,))
    assert overturned[0][0] == 8  # two replicas per task
    # With audits off the pair may also have held both replicas of a task of the second job (the
    # order in which the four volunteers took its tasks decides it): then that job's lie is
    # corrected the same way once both identities are quarantined.
    if wrong_elements(g2, inputs2, outputs2) > 0:
        reports2 = []
        cluster.wait_until(lambda: reports2.append(client.audit(job2)) or
                           reports2[-1].state == "corrected", EVENT_TIMEOUT,
                           "the second job's audit to correct it")
        assert wrong_elements(g2, inputs2, reports2[-1].outputs) == 0
    # The node also pushed the report to this connection when the audit ended.
    cluster.wait_until(lambda: client.audit(job) is not None and any(
        notice.job == job and notice.state == "corrected" for notice in client.audit_notices),
        EVENT_TIMEOUT, "the pushed audit_report")
