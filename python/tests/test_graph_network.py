"""Graph jobs end to end: a real lab node, real goblin-volunteer processes and dishonest Python
volunteers. Every task is computed by two volunteers and compared; any disagreement is decided by
the node's own CPU reference; agreement is audited by the node at the rate trust asks for (every
task of a new identity), which is what catches volunteers that agree on the same wrong answer; a
volunteer caught once is quarantined and the running jobs it touched are rechecked.
"""

import copy
import json
import re

import numpy as np
import pytest

import goblin
from goblin import graph as gg
from goblin import reference

pytestmark = pytest.mark.integration

JOB_TIMEOUT = 120.0


def mlp_graph(batch=64, features=32, hidden=16, seed=3):
    """softmax(relu(x·W + b)) and its argmax: float and integer outputs, a hoisted constant."""
    rng = np.random.default_rng(seed)
    g = gg.Graph()
    x = g.input("f32", [batch, features])
    w = g.constant(rng.standard_normal((features, hidden)).astype(np.float32))  # 512: a tensor
    b = g.constant(rng.standard_normal((hidden,)).astype(np.float32))  # inline JSON
    h = g.relu(g.add(g.matmul(x, w), b))
    g.output(g.softmax(h, dim=-1), g.argmax(h, dim=-1))
    return g


def inputs_for(batch=64, features=32, seed=5):
    return [np.random.default_rng(seed).standard_normal((batch, features)).astype(np.float32)]


def assert_matches_reference(g, inputs, outputs):
    expected = reference.run(g, inputs)
    assert len(outputs) == len(expected)
    np.testing.assert_allclose(outputs[0], expected[0], rtol=2e-5, atol=1e-6)
    assert outputs[0].dtype == np.float32
    np.testing.assert_array_equal(outputs[1], expected[1])


# Replica mechanics alone: no probation, no audit floor, no extra audits for loopback's one address.
NO_AUDITS = ["--audit-floor", "0", "--probation-audits", "0", "--shared-address-audit-rate", "0"]


def quarantined(cluster, volunteer):
    rows = cluster.query("SELECT quarantined_at FROM volunteer_trust WHERE volunteer_id = ?",
                         (volunteer,))
    return bool(rows) and rows[0][0] is not None


def graph_verdicts(cluster, volunteer=None):
    sql = "SELECT volunteer_id, verdict, method FROM graph_results"
    rows = cluster.query(sql)
    return [r for r in rows if volunteer is None or r[0] == volunteer]


def test_graph_job_on_two_volunteers(cluster):
    token = cluster.add_researcher()
    cluster.start_node(extra_args=NO_AUDITS)
    cluster.start_volunteer(threads=1, slots=2)
    cluster.start_volunteer(threads=1, slots=2)
    client = cluster.connect(token)
    g, inputs = mlp_graph(), inputs_for()
    outputs = client.run(g, inputs, batch=0, chunks=4, timeout=JOB_TIMEOUT)
    assert_matches_reference(g, inputs, outputs)
    summary = client.last_summary
    assert summary["kind"] == "graph" and summary["tasks"] == 4
    assert summary["verdicts"] == {"accepted": 8, "rejected": 0}
    assert summary["volunteers"] == 2
    rows = graph_verdicts(cluster)
    assert len(rows) == 8 and all(v == "accepted" and m == "replica-agreement" for _, v, m in rows)
    # Each task was computed by two different volunteers.
    per_task = cluster.query("SELECT task_id, count(DISTINCT volunteer_id) FROM graph_results "
                             "GROUP BY task_id")
    assert len(per_task) == 4 and all(count == 2 for _, count in per_task)
    # run() released the job. Its outputs rest on replica agreement, so the node keeps its data
    # for audits after delivery (--audit-retention-hours); to its researcher it is released.
    assert cluster.query("SELECT state FROM graph_jobs") == [("retained",)]
    assert list((cluster.data_dir / "blobs").glob("*.bin"))
    assert client.audit(client.last_job).state == "clean"


def test_unsplit_graph_job_and_node_audit(cluster):
    token = cluster.add_researcher()
    cluster.start_node(extra_args=["--audit-floor", "1"])
    cluster.start_volunteer(threads=1, slots=1)
    cluster.start_volunteer(threads=1, slots=1)
    client = cluster.connect(token)
    g, inputs = mlp_graph(batch=8), inputs_for(batch=8)
    outputs = client.run(g, inputs, timeout=JOB_TIMEOUT)
    assert_matches_reference(g, inputs, outputs)
    summary = client.last_summary
    assert summary["tasks"] == 1 and summary["node_recomputed"] == 1 and summary["node_caught"] == 0
    assert summary["verdicts"] == {"accepted": 2, "rejected": 0}


def wait_for_volunteers(cluster, count):
    cluster.wait_until(lambda: sum("connected from" in line for line in list(cluster.node.lines)) >= count,
                       60, "%d connected volunteers" % count)


def test_dishonest_replica_loses_to_the_node_and_is_quarantined(cluster):
    token = cluster.add_researcher()
    cluster.start_node(extra_args=NO_AUDITS)
    _, dishonest_id = cluster.start_dishonest(corruption=1000.0)
    cluster.start_volunteer(threads=1, slots=2)
    cluster.start_volunteer(threads=1, slots=2)
    wait_for_volunteers(cluster, 3)
    client = cluster.connect(token)
    g, inputs = mlp_graph(), inputs_for()
    outputs = client.run(g, inputs, batch=0, chunks=6, timeout=JOB_TIMEOUT)
    assert_matches_reference(g, inputs, outputs)
    # The liar took part (round robin gives it work): the node decided against it, it was
    # quarantined, and any replica it still had out was dropped.
    mine = graph_verdicts(cluster, dishonest_id)
    assert mine and all(v == "rejected" for _, v, _ in mine), mine
    assert {m for _, _, m in mine} <= {"node-tiebreak", "quarantine"}, mine
    assert any(m == "node-tiebreak" for _, _, m in mine)
    assert quarantined(cluster, dishonest_id)
    summary = client.last_summary
    assert summary["verdicts"]["rejected"] == len(mine)
    # Tie-breaks, plus any task the node computed itself once the liar was gone.
    assert summary["node_tiebreaks"] >= sum(m == "node-tiebreak" for _, _, m in mine)
    assert cluster.query("SELECT rejected FROM volunteers WHERE id = ?", (dishonest_id,))[0][0] == len(mine)


@pytest.mark.parametrize("mode", ["shape", "dtype"])
def test_wrong_shape_or_dtype_is_rejected_at_the_gate(cluster, mode):
    token = cluster.add_researcher()
    cluster.start_node(extra_args=NO_AUDITS)
    _, dishonest_id = cluster.start_dishonest(mode=mode)
    client = cluster.connect(token)
    g, inputs = mlp_graph(batch=4), inputs_for(batch=4)
    job = client.submit_graph(g, inputs)
    cluster.wait_until(lambda: graph_verdicts(cluster, dishonest_id), 60, "the gate's verdict")
    cluster.start_volunteer(threads=1, slots=1)
    cluster.start_volunteer(threads=1, slots=1)
    outputs = client.fetch_outputs(job, timeout=JOB_TIMEOUT)
    assert_matches_reference(g, inputs, outputs)
    assert graph_verdicts(cluster, dishonest_id) == [(dishonest_id, "rejected", "shape-gate")]
    assert client.last_summary["verdicts"]["rejected"] == 1


def colluder_rows(cluster, colluders):
    return [r for r in graph_verdicts(cluster) if r[0] in colluders]


def test_colluders_lying_from_their_first_task_are_caught_on_probation(cluster):
    token = cluster.add_researcher()
    cluster.start_node()  # default trust: a new identity's tasks are all audited
    _, first = cluster.start_dishonest(corruption=7.0)
    _, second = cluster.start_dishonest(corruption=7.0)
    # Honest volunteers finish the job once the liars are gone (a node does not compute whole
    # jobs while it waits for volunteers).
    cluster.start_volunteer(threads=1, slots=1)
    cluster.start_volunteer(threads=1, slots=1)
    wait_for_volunteers(cluster, 4)
    client = cluster.connect(token)
    g, inputs = mlp_graph(), inputs_for()
    outputs = client.run(g, inputs, batch=0, chunks=4, timeout=JOB_TIMEOUT)
    # Both liars return the same wrong answer; paired they agree and the node's audit rejects
    # both, paired with an honest volunteer the node's tie-break does. They are quarantined.
    assert_matches_reference(g, inputs, outputs)
    mine = colluder_rows(cluster, {first, second})
    assert mine and all(v == "rejected" for _, v, _ in mine), mine
    assert {m for _, _, m in mine} <= {"node-audit", "node-tiebreak", "quarantine"}, mine
    assert quarantined(cluster, first) and quarantined(cluster, second)


def test_quarantine_leaves_no_accepted_replica_of_the_colluders(cluster):
    """No probation and audits at 0.5: a colluding pair's first agreed lies may be accepted, but
    the first audit or tie-break that catches them quarantines both, and every task of the running
    job they took part in is rechecked by the node before the job is merged: the researcher gets
    no wrong row. (tests/labnode/test_graph_jobs.cpp drives the recheck itself step by step.)"""
    token = cluster.add_researcher()
    cluster.start_node(extra_args=["--probation-audits", "0", "--audit-floor", "0.5",
                                   "--shared-address-audit-rate", "0"])
    _, first = cluster.start_dishonest(corruption=7.0)
    _, second = cluster.start_dishonest(corruption=7.0)
    cluster.start_volunteer(threads=1, slots=1)
    cluster.start_volunteer(threads=1, slots=1)
    wait_for_volunteers(cluster, 4)
    client = cluster.connect(token)
    tasks = 40
    g, inputs = mlp_graph(batch=tasks), inputs_for(batch=tasks)
    outputs = client.run(g, inputs, batch=0, chunks=tasks, timeout=JOB_TIMEOUT)
    assert_matches_reference(g, inputs, outputs)
    assert quarantined(cluster, first) and quarantined(cluster, second)
    mine = colluder_rows(cluster, {first, second})
    assert mine and all(v == "rejected" for _, v, _ in mine), \
        "an accepted replica of a caught colluder survived the recheck: %r" % mine


def test_graph_bad_input(cluster):
    token = cluster.add_researcher()
    cluster.start_node(extra_args=["--max-graph-task-mb", "2"])
    client = cluster.connect(token)
    g, inputs = mlp_graph(batch=8), inputs_for(batch=8)
    with pytest.raises(goblin.DTypeError):
        client.run(g, [inputs[0].astype(np.float64)])
    with pytest.raises(goblin.ShapeError):
        client.run(g, [inputs[0][:4]])
    with pytest.raises(goblin.InputError):
        client.run(g, inputs + inputs)
    unknown = copy.deepcopy(g.to_dict())
    unknown["nodes"][0]["op"] = "fft"
    with pytest.raises(goblin.GoblinError, match="fft"):
        client.run(unknown, inputs)
    cycle = copy.deepcopy(g.to_dict())
    cycle["nodes"][0]["args"][0] = cycle["nodes"][-1]["id"]
    with pytest.raises(goblin.GoblinError):
        client.run(cycle, inputs)
    # A batch split the graph does not allow: a sum over the batch cannot be cut into rows.
    s = gg.Graph()
    x = s.input("f32", [8, 4])
    s.output(s.sum(x, dims=[0]))
    with pytest.raises(goblin.GoblinError, match="batch"):
        client.run(s, [np.ones((8, 4), np.float32)], batch=0)
    # A task over the node's size limit is refused with the way out in the message; split into
    # enough chunks, the same graph is accepted.
    big, big_inputs = mlp_graph(batch=8192, features=64, hidden=64), inputs_for(batch=8192, features=64)
    with pytest.raises(goblin.LimitExceededError, match="split it"):
        client.submit_graph(big, big_inputs, batch=0, chunks=1)
    assert client.submit_graph(big, big_inputs, batch=0, chunks=8).startswith("g-")
    # The connection is still good for a normal job afterwards (no volunteers: just accepted).
    job = client.submit_graph(g, inputs)
    assert job.startswith("g-")


def test_integer_division_by_zero_fails_the_job_clearly(cluster):
    token = cluster.add_researcher()
    cluster.start_node()
    cluster.start_volunteer(threads=1, slots=1)
    cluster.start_volunteer(threads=1, slots=1)
    client = cluster.connect(token)
    g = gg.Graph()
    a, b = g.input("i32", [4]), g.input("i32", [4])
    g.output(g.floor_divide(a, b))
    with pytest.raises(goblin.GoblinError) as raised:
        client.run(g, [np.array([7, -7, 3, 1], np.int32), np.array([2, 2, 0, 1], np.int32)],
                   timeout=JOB_TIMEOUT)
    assert "invalid_input" in str(raised.value) or getattr(raised.value, "code", "") == "invalid_input"
    # Honest volunteers reported it as a task error; none of them was marked.
    assert all(v != "rejected" for _, v, _ in graph_verdicts(cluster))


def test_graph_job_on_cpu_and_opencl_volunteers(cluster):
    """One volunteer on the CPU reference, one on its OpenCL device (PoCL in CI): every task gets
    one opinion from each backend, and they agree."""
    token = cluster.add_researcher()
    cluster.start_node(extra_args=NO_AUDITS)
    cluster.start_volunteer(threads=1, slots=1)
    cluster.start_volunteer(threads=1, slots=1, extra_args=["--devices", "gpu0"])
    wait_for_volunteers(cluster, 2)
    client = cluster.connect(token)
    g, inputs = mlp_graph(), inputs_for()
    outputs = client.run(g, inputs, batch=0, chunks=3, timeout=JOB_TIMEOUT)
    assert_matches_reference(g, inputs, outputs)
    summary = client.last_summary
    assert summary["backends"] == {"cpu-reference": 3, "opencl-graph": 3}, summary
    assert summary["verdicts"] == {"accepted": 6, "rejected": 0}
    # The shared math header and fixed reduction order make the two backends agree bit for bit.
    assert summary["max_disagreement_ratio"] == 0


def test_node_killed_mid_graph_job_resumes_without_losing_decided_tasks(cluster):
    """kill -9 of the node while a graph job runs: on restart the decided tasks keep their outputs
    and verdicts (nothing decided twice), the rest are computed again, and fetch gets the result."""
    token = cluster.add_researcher()
    cluster.start_node(extra_args=NO_AUDITS)
    cluster.start_volunteer(threads=1, slots=4)
    cluster.start_dishonest(mode="slow")  # honest, one task every 2 s: tasks finish one by one
    wait_for_volunteers(cluster, 2)
    client = cluster.connect(token)
    g, inputs = mlp_graph(batch=40), inputs_for(batch=40)
    job = client.submit_graph(g, inputs, batch=0, chunks=5)

    def decided():
        return cluster.query("SELECT count(*) FROM graph_tasks WHERE state = 'accepted'")[0][0]
    cluster.wait_until(lambda: decided() >= 1, 60, "a decided graph task")
    cluster.node.kill9()
    before = cluster.query("SELECT task_id, attempt, volunteer_id, verdict FROM graph_results "
                           "ORDER BY task_id, attempt")
    decided_before = {row[0] for row in cluster.query(
        "SELECT id FROM graph_tasks WHERE state = 'accepted'")}
    assert 1 <= len(decided_before) < 5

    cluster.start_node(port=cluster.port, extra_args=NO_AUDITS)
    cluster.node.wait_for_line(re.compile(r"graph job %s resumed: %d of 5 task\(s\) already decided"
                                          % (job, len(decided_before))), 30)
    cluster.start_volunteer(threads=1, slots=2)
    fresh = cluster.connect(token)
    outputs = fresh.fetch_outputs(job, timeout=JOB_TIMEOUT)
    assert_matches_reference(g, inputs, outputs)
    after = cluster.query("SELECT task_id, attempt, volunteer_id, verdict FROM graph_results "
                          "ORDER BY task_id, attempt")
    # Verdicts from before the crash are all still there, unchanged; decided tasks got no new ones.
    assert set(before) <= set(after)
    assert not [row for row in after if row[0] in decided_before and row not in before]
    assert cluster.query("SELECT count(*) FROM graph_tasks WHERE state = 'accepted'")[0][0] == 5
    summary = fresh.last_summary
    assert summary["verdicts"]["accepted"] == 10 and summary["tasks"] == 5


def test_volunteer_lending_too_little_memory_gets_no_graph_task(cluster):
    token = cluster.add_researcher()
    cluster.start_node(extra_args=NO_AUDITS)
    tiny = cluster.start_volunteer(threads=1, slots=2, extra_args=["--memory-mb", "1"])
    tiny_id = tiny.wait_for_line(re.compile(r"connected to \S+ as (v-[0-9a-f]+)"), 30).group(1)
    cluster.start_volunteer(threads=1, slots=2)
    cluster.start_volunteer(threads=1, slots=2)
    wait_for_volunteers(cluster, 3)
    client = cluster.connect(token)
    # Each of the 2 chunks holds a few MiB of values; the tiny volunteer lends 1 MiB.
    g, inputs = mlp_graph(batch=4096, features=64, hidden=64), inputs_for(batch=4096, features=64)
    outputs = client.run(g, inputs, batch=0, chunks=2, timeout=JOB_TIMEOUT)
    assert_matches_reference(g, inputs, outputs)
    assert tiny_id not in {volunteer for volunteer, _, _ in graph_verdicts(cluster)}
    assert client.last_summary["verdicts"] == {"accepted": 4, "rejected": 0}


def test_catalog_1_peers_get_no_graphs(cluster):
    """A volunteer that says catalog 1 computes matmul tiles only; a researcher connection that
    said catalog 1 may not submit graphs."""
    token = cluster.add_researcher()
    cluster.start_node(extra_args=NO_AUDITS)
    old, old_id = cluster.start_dishonest(mode="slow", catalog=1)
    cluster.start_volunteer(threads=1, slots=2)
    cluster.start_volunteer(threads=1, slots=2)
    wait_for_volunteers(cluster, 3)
    client = cluster.connect(token)
    g, inputs = mlp_graph(), inputs_for()
    outputs = client.run(g, inputs, batch=0, chunks=6, timeout=JOB_TIMEOUT)
    assert_matches_reference(g, inputs, outputs)
    assert old_id not in {volunteer for volunteer, _, _ in graph_verdicts(cluster)}
    assert "graph task" not in old.tail()

    from test_integration import open_raw
    ws = open_raw(cluster)
    ws.send(json.dumps({"type": "hello", "id": 1, "protocol": 1, "catalog": 1, "token": token}))
    assert json.loads(ws.recv(timeout=10))["type"] == "welcome"
    ws.send(json.dumps({"type": "submit_graph", "id": 2, "graph": g.to_dict(), "tensors": 0}))
    reply = json.loads(ws.recv(timeout=10))
    assert reply["type"] == "error" and reply["id"] == 2 and reply["code"] == "version_mismatch", reply
    ws.close()


def many_constants_graph(count=100, seed=21):
    """x·W_i summed over `count` weight matrices, a third of them f64: more large constants than a
    message may carry tensors."""
    rng = np.random.default_rng(seed)
    g = gg.Graph()
    x = g.input("f32", [8, 20])
    x64 = g.cast(x, dtype="f64")
    total = None
    for i in range(count):
        w = g.constant(rng.standard_normal((20, 20)).astype(np.float64 if i % 3 == 0 else
                                                            np.float32))
        term = g.cast(g.matmul(x64, w), dtype="f32") if i % 3 == 0 else g.matmul(x, w)
        total = term if total is None else g.add(total, term)
    g.output(total)
    return g, [rng.standard_normal((8, 20)).astype(np.float32)]


def test_more_large_constants_than_a_message_carries_travel_packed(cluster):
    from goblin.graph_job import graph_request
    g, inputs = many_constants_graph()
    request, arrays = graph_request(g, inputs, batch=0, max_tensors=64)
    assert len(arrays) == 3  # the input, then one pack per dtype
    assert request["batch"]["inputs"] == [0, None, None]
    np.testing.assert_array_equal(reference.run(request["graph"], arrays)[0],
                                  reference.run(g, inputs)[0])
    token = cluster.add_researcher()
    cluster.start_node(extra_args=NO_AUDITS)
    cluster.start_volunteer(threads=1, slots=2)
    cluster.start_volunteer(threads=1, slots=2)
    client = cluster.connect(token)
    [output] = client.run(g, inputs, batch=0, chunks=2, timeout=JOB_TIMEOUT)
    # numpy's matmul sums in its BLAS kernel's order (SkylakeX, Haswell, ... differ in the last bits),
    # so the reference is matched to a tolerance; the replicas' bitwise agreement is what the node checked.
    np.testing.assert_allclose(output, reference.run(g, inputs)[0], rtol=2e-5, atol=1e-5)
