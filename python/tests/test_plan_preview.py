"""client.plan(...): the node says how it would cut a graph job for the volunteers connected now,
before anything of it travels, and the job then submitted is cut exactly so. End to end on a real
lab node with headless volunteers.
"""

import re

import numpy as np
import pytest

import goblin

from test_graph_stages import (JOB_TIMEOUT, LAYERS, SMALL_VOLUNTEER, TRAINING_VOLUNTEER, Pool,
                               assert_close_to_reference, deep_mlp, inputs_for)
from test_observability import metrics, total

pytestmark = pytest.mark.integration

MIB = 1 << 20


def received_bytes(cluster):
    return total(metrics(cluster), "goblin_received_bytes_total")


def test_the_plan_is_the_cut_the_job_then_gets(cluster):
    token = cluster.add_researcher()
    cluster.start_node()
    g, inputs = deep_mlp(), inputs_for()
    client = cluster.connect(token)

    alone = client.plan(g, inputs)
    assert isinstance(alone, goblin.Plan)
    assert alone.volunteers == 0 and alone.waits == "no graph volunteer is connected now"
    assert (alone.tasks, alone.ranges, len(alone.stages)) == (1, 1, 1)

    Pool(cluster).replace(2, SMALL_VOLUNTEER)
    before = received_bytes(cluster)
    plan = client.plan(g, inputs, batch=0, chunks=2)
    # Only shapes travelled: the 4 MiB of weights and 256 KiB of inputs stayed here.
    assert received_bytes(cluster) - before < 256 * 1024
    assert plan.volunteers == 2 and plan.largest_volunteer_bytes == 3 * MIB
    assert plan.opinions == 2 and plan.ranges == 2 and plan.cut_into_stages
    assert 0 < plan.largest_task_bytes <= plan.budget_bytes <= 3 * MIB
    assert plan.tasks == sum(stage.tasks for stage in plan.stages) >= 2 * 2
    assert plan.stages[0].boundary_in_bytes == 0 < plan.stages[-1].boundary_in_bytes
    assert plan.boundary_bytes > 0 and plan.traffic_bytes > 2 * 4 * MIB  # weights, per opinion
    assert plan.flops > 2 * 128 * 512 * 512 * LAYERS
    assert plan.waits is None and plan.why_whole is None
    text = str(plan)
    assert "%d task(s) = 2 batch range(s) x %d stage(s)" % (plan.tasks, len(plan.stages)) in text
    assert "computed by 2 volunteers each" in text and "3.0 MiB" in text

    outputs = client.run(g, inputs, batch=0, chunks=2, timeout=JOB_TIMEOUT)
    assert client.last_summary["tasks"] == plan.tasks
    cluster.node.wait_for_line(re.compile(r"graph job g-\S+ accepted: .* %d task\(s\) \(2 batch "
                                          r"range\(s\) cut into stages" % plan.tasks), 5)
    assert_close_to_reference(g, inputs, outputs)

    single = client.plan(g, inputs, batch=0, chunks=2, verification="freivalds")
    assert single.opinions == 1 and "checked by the node" in str(single)


def test_a_micro_batched_plan_counts_the_rows_the_inputs_carry(cluster):
    token = cluster.add_researcher()
    cluster.start_node()
    client = cluster.connect(token)
    g = goblin.graph.Graph()
    x = g.input("f32", [4, 8])
    g.output(g.relu(x))
    rows = np.ones((12, 8), dtype=np.float32)
    plan = client.plan(g, [rows], batch=0, micro_batch=4)
    assert (plan.tasks, plan.ranges) == (3, 3)
    with pytest.raises(goblin.ShapeError):  # checked here, as run() checks it
        client.plan(g, [np.ones((10, 8), dtype=np.float32)], batch=0, micro_batch=4)


def test_a_plan_the_submission_would_refuse_is_refused_alike(cluster):
    token = cluster.add_researcher()
    cluster.start_node(extra_args=["--max-graph-task-mb", "1"])
    client = cluster.connect(token)
    g = goblin.graph.Graph()
    w = g.input("f32", [1024, 1024])  # 4 MiB: no task can hold it
    g.output(g.matmul(w, w))
    square = np.eye(1024, dtype=np.float32)
    with pytest.raises(goblin.LimitExceededError) as planned:
        client.plan(g, [square])
    with pytest.raises(goblin.LimitExceededError) as submitted:
        client.run(g, [square], timeout=JOB_TIMEOUT)
    assert str(planned.value) == str(submitted.value)
    assert "cannot be cut into stages that fit" in str(planned.value)
    # The connection stays usable after a refused plan.
    small = goblin.graph.Graph()
    small.output(small.relu(small.input("f32", [4, 8])))
    assert client.plan(small, [np.ones((4, 8), dtype=np.float32)]).tasks == 1


def test_a_training_rounds_plan_is_the_cut_its_rounds_get(cluster):
    torch = pytest.importorskip("torch")
    from torch.nn import functional as F
    from test_graph_stages import wide_mlp

    token = cluster.add_researcher()
    cluster.start_node()
    Pool(cluster).replace(2, TRAINING_VOLUNTEER)
    client = cluster.connect(token)
    g = torch.Generator().manual_seed(3)
    data = (torch.randn(1024, 64, generator=g), torch.randint(0, 8, (1024,), generator=g))
    plan = client.plan_train(wide_mlp(), F.cross_entropy, data, batch_size=512, micro_batch=256)
    assert plan.ranges == 2 and plan.cut_into_stages  # two micro-batches, each in stages
    assert plan.largest_task_bytes <= plan.budget_bytes <= 2 * MIB
    client.train(wide_mlp(), F.cross_entropy, data, rounds=1, batch_size=512, micro_batch=256,
                 progress=False, timeout=JOB_TIMEOUT)
    assert cluster.query("SELECT tasks FROM graph_jobs")[0][0] == plan.tasks
    with pytest.raises(goblin.InputError, match="does not divide"):
        client.plan_train(wide_mlp(), F.cross_entropy, data, batch_size=512, micro_batch=100)


class _ScriptedConnection:
    """Answers every request with one reply, as a node that breaks the protocol might."""

    def __init__(self, reply):
        self.reply = reply
        self.broken = None

    def request(self, message, arrays):
        assert message["type"] == "plan_graph" and not arrays
        return self.reply

    def violation(self, text):
        self.broken = goblin.ProtocolError(text)
        return self.broken


def test_a_malformed_graph_plan_is_a_protocol_error():
    stage = {"tasks": 2, "max_bytes": 1024, "boundary_in_bytes": 0, "flops": 1e6}
    good = {"type": "graph_plan", "id": 1, "tasks": 2, "ranges": 2, "opinions": 2,
            "budget_bytes": 4096, "volunteers": 2, "largest_volunteer_bytes": 4096,
            "largest_task_bytes": 1024, "boundary_bytes": 0, "traffic_bytes": 8192,
            "flops": 1e6, "stages": [stage]}
    from goblin.plan_preview import request_plan
    plan = request_plan(_ScriptedConnection(good), {"type": "plan_graph"})
    assert plan.tasks == 2 and plan.stages[0].max_bytes == 1024
    broken = [dict(good, type="job_failed"), {k: v for k, v in good.items() if k != "tasks"},
              dict(good, stages={"0": stage}), dict(good, stages=[dict(stage, flops="many")]),
              dict(good, largest_task_bytes=None)]
    for reply in broken:
        connection = _ScriptedConnection(reply)
        with pytest.raises(goblin.ProtocolError):
            request_plan(connection, {"type": "plan_graph"})
        assert connection.broken is not None  # the connection is given up


def test_a_connections_first_request_may_carry_a_graph_bigger_than_a_greeting(cluster):
    """Before the welcome a control frame may hold 64 KiB, after it 4 MiB: a plan of a graph whose
    JSON is far over 64 KiB, sent as a fresh connection's first request, is answered (the node
    used to close such a connection with 1009: its read in flight kept the greeting's limit)."""
    token = cluster.add_researcher()
    cluster.start_node()
    g = goblin.graph.Graph()
    h = g.input("f32", [4, 8])
    for _ in range(2000):
        h = g.relu(h)
    g.output(h)
    assert len(g.to_json()) > 64 * 1024
    client = cluster.connect(token)
    plan = client.plan(g, [np.ones((4, 8), dtype=np.float32)])
    assert plan.tasks == 1 and plan.waits is not None  # no volunteer is connected
