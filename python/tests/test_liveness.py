"""Liveness: a job of replicas never stalls for want of a second volunteer. A task that holds one
volunteer's opinion and wants another that no connected volunteer may give (one volunteer left)
waits --second-opinion-seconds, saying why in the job's progress, then the node computes it and
judges the volunteer's replica against its own computation. A task its volunteers keep taking and
dropping (they disconnect while holding it) is computed by the node after a bounded number of
tries, rather than offered forever."""

import re

import pytest

from test_graph_network import NO_AUDITS, assert_matches_reference, graph_verdicts, inputs_for, \
    mlp_graph

pytestmark = pytest.mark.integration

JOB_TIMEOUT = 120.0


def test_a_lone_volunteer_is_not_left_waiting_and_the_wait_is_said(cluster):
    token = cluster.add_researcher()
    cluster.start_node(extra_args=NO_AUDITS + ["--second-opinion-seconds", "3"])
    volunteer = cluster.start_volunteer(threads=1, slots=2)
    client = cluster.connect(token)
    g, inputs = mlp_graph(), inputs_for()
    job = client.submit_graph(g, inputs, batch=0, chunks=2)
    outputs = job.result(timeout=JOB_TIMEOUT)
    assert_matches_reference(g, inputs, outputs)
    # The researcher's progress said why the job waited and what would unblock it.
    cluster.node.wait_for_line(re.compile(
        r"job %s waits: task \d+ wants a second volunteer's opinion and every connected volunteer "
        r"computed it already: connect another volunteer, or the node computes it itself in \d+ s"
        % re.escape(str(job))), 10)
    # The node said once per task that it computes it, and judged the volunteer against itself.
    lines = [line for line in cluster.node.lines if "for a second volunteer" in line]
    assert len(lines) == 2, lines
    assert all(re.search(r"graph task \d+ waited 3 s for a second volunteer \(every connected "
                         r"volunteer computed it already\); the node computes it", line)
               for line in lines)
    rows = graph_verdicts(cluster)
    assert len(rows) == 2 and all(v == "accepted" and m == "node-compute" for _, v, m in rows), rows
    assert volunteer.alive()


DROPPED_LEASES_BEFORE_THE_NODE_COMPUTES = 6  # SchedulerSettings::maxTaskHandBacks


def test_a_task_its_volunteers_keep_dropping_is_computed_by_the_node(cluster):
    """Two vanishers (tests/adversary: take a task, disconnect, say hello again with the saved
    identity) and nobody else: each task is offered at most a bounded number of times, then the
    node computes it, and the job finishes with the right numbers."""
    token = cluster.add_researcher()
    cluster.start_node(extra_args=NO_AUDITS)
    vanishers = [cluster.start_adversary("vanisher")[0] for _ in range(2)]
    client = cluster.connect(token)
    g, inputs = mlp_graph(), inputs_for()
    outputs = client.run(g, inputs, batch=0, chunks=2, timeout=JOB_TIMEOUT)
    assert_matches_reference(g, inputs, outputs)
    assert any(re.match(r"vanished with task", line) for p in vanishers for line in p.lines)
    dropped = {}
    for line in list(cluster.node.lines):
        match = re.search(r"graph task (\d+) attempt \d+ \(v-\S+\): volunteer disconnected", line)
        if match:
            dropped[match.group(1)] = dropped.get(match.group(1), 0) + 1
    # A task has two replicas: when its sixth hand-back makes the node compute it, the other
    # replica's lease may still be out, and its holder drops it once more.
    assert dropped and max(dropped.values()) <= DROPPED_LEASES_BEFORE_THE_NODE_COMPUTES + 1, dropped
