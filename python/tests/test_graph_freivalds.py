"""Graph jobs verified by Freivalds (`verification="freivalds"`), end to end on a real lab node and
real goblin-volunteer processes: one volunteer computes each task, its large f32 matmuls through
OpenBLAS (the task frame's gemm_nodes), and the node checks every task itself — each of those
matmuls by Freivalds per element, every other value recomputed bit for bit. The outputs are
compared with PyTorch in float64; the verdicts show one opinion per task, decided by the node.
"""

import json
import re

import numpy as np
import pytest
import torch

import goblin
from goblin.errors import GoblinError, InputError
from goblin.graph_job import graph_request
from goblin.wire import encode_tensor_frame
from torch_programs import TransformerBlock

pytestmark = pytest.mark.integration

JOB_TIMEOUT = 180.0


def block_and_input(batch=8, length=16, seed=4):
    """A transformer block whose projections and MLP have inner sizes 64 and 256 (checked by
    Freivalds) and whose attention products (head size 32, length 16) are recomputed."""
    torch.manual_seed(seed)
    module = TransformerBlock(dim=64, heads=2, hidden=256).eval()
    x = np.random.default_rng(seed).standard_normal((batch, length, 64)).astype(np.float32)
    return module, x


def float64_forward(module, x):
    with torch.no_grad():
        return module.double()(torch.from_numpy(x.astype(np.float64))).numpy()


def task_verdicts(cluster):
    return cluster.query("SELECT t.job_id, r.task_id, r.volunteer_id, r.backend, r.verdict, "
                         "r.method, r.reason FROM graph_results r JOIN graph_tasks t "
                         "ON t.id = r.task_id ORDER BY r.task_id, r.attempt")


def assert_checked_alone(rows, tasks):
    """One accepted opinion per task, from a volunteer's BLAS, decided by the node's check."""
    assert len(rows) == tasks, rows
    assert len({row[1] for row in rows}) == tasks
    for _, _, _, backend, verdict, method, reason in rows:
        assert (backend, verdict, method) == ("cpu-reference+blas", "accepted", "node-audit")
        assert reason.startswith("cheap audit: ") and "checked by Freivalds" in reason, reason
        checked = int(re.search(r"cheap audit: (\d+) matmul", reason).group(1))
        assert checked >= 4, reason  # qkv, output projection, both MLP layers


def test_transformer_block_checked_by_freivalds_matches_pytorch(cluster):
    token = cluster.add_researcher()
    cluster.start_node()  # default trust settings: probation, audit floor
    cluster.start_volunteer(threads=1, slots=2)
    cluster.start_volunteer(threads=1, slots=2)
    client = cluster.connect(token)
    module, x = block_and_input()
    captured = goblin.capture(module, torch.from_numpy(x))
    fresh = np.random.default_rng(9).standard_normal(x.shape).astype(np.float32)
    [output] = client.run(captured, [fresh], batch=0, chunks=4, verification="freivalds",
                          timeout=JOB_TIMEOUT)
    expected = float64_forward(module, fresh)
    assert output.dtype == np.float32 and output.shape == expected.shape
    np.testing.assert_allclose(output, expected, rtol=1e-4, atol=1e-4)
    summary = client.last_summary
    assert summary["tasks"] == 4 and summary["verdicts"] == {"accepted": 4, "rejected": 0}
    assert_checked_alone(task_verdicts(cluster), 4)

    # The same job with replicas: two opinions per task, canonical bits, rounding apart from the
    # BLAS one.
    [canonical] = client.run(captured, [fresh], batch=0, chunks=4, timeout=JOB_TIMEOUT)
    np.testing.assert_allclose(output, canonical, rtol=1e-4, atol=1e-4)
    assert client.last_summary["verdicts"]["accepted"] == 8


def test_restarted_node_keeps_a_jobs_verification(cluster):
    """kill -9 of the node holding a job verified by Freivalds: the restarted node reloads it with
    its verification (one opinion per task, each checked by the node) and finishes it."""
    token = cluster.add_researcher()
    cluster.start_node()
    client = cluster.connect(token)
    module, x = block_and_input(batch=6)
    captured = goblin.capture(module, torch.from_numpy(x))
    job = client.submit_graph(captured, [x], batch=0, chunks=3, verification="freivalds")
    cluster.node.wait_for_line(re.compile(r"graph job %s accepted: \d+ node\(s\), 3 task\(s\), "
                                          r"each checked by the node$" % job), 30)
    cluster.node.kill9()  # no volunteer yet: nothing decided
    cluster.start_node(port=cluster.port)
    cluster.node.wait_for_line(re.compile(r"graph job %s resumed: 0 of 3 task" % job), 30)
    cluster.start_volunteer(threads=1, slots=2)
    fresh = cluster.connect(token)
    [output] = fresh.fetch_outputs(job, timeout=JOB_TIMEOUT)
    np.testing.assert_allclose(output, float64_forward(module, x), rtol=1e-4, atol=1e-4)
    assert_checked_alone(task_verdicts(cluster), 3)


def stored_output_counts(cluster, job):
    """How many tensors the node stored for each decided task of `job`."""
    rows = cluster.query("SELECT outputs FROM graph_tasks WHERE job_id = ? ORDER BY chunk", (job,))
    return [len(json.loads(outputs)) for (outputs,) in rows if outputs]


def test_every_task_stores_only_the_researchers_outputs(cluster):
    """Every task stores the researcher's output alone, never the witnesses (the node's checks
    read those before the decision, from the replicas in memory; a later recheck compares what
    the researcher got), for a job of replicas as for one checked alone. A node killed after the
    job is done delivers it, from what it stored, after a restart."""
    token = cluster.add_researcher()
    cluster.start_node()
    cluster.start_volunteer(threads=1, slots=2)
    cluster.start_volunteer(threads=1, slots=2)
    client = cluster.connect(token)
    module, x = block_and_input(batch=6)
    captured = goblin.capture(module, torch.from_numpy(x))
    expected = float64_forward(module, x)
    module.float()

    [canonical] = client.run(captured, [x], batch=0, chunks=3, timeout=JOB_TIMEOUT)
    [replicas] = cluster.query("SELECT id FROM graph_jobs")[0]
    kept = stored_output_counts(cluster, replicas)
    assert kept == [1, 1, 1], kept  # the output alone, though each task returned witnesses too

    job = client.submit_graph(captured, [x], batch=0, chunks=3, verification="freivalds")
    cluster.wait_until(lambda: cluster.query("SELECT state FROM graph_jobs WHERE id = ?",
                                             (job,)) == [("done",)], JOB_TIMEOUT, "the job done")
    assert stored_output_counts(cluster, job) == [1, 1, 1]
    cluster.node.kill9()
    cluster.start_node(port=cluster.port)
    [output] = cluster.connect(token).fetch_outputs(job, timeout=JOB_TIMEOUT)
    np.testing.assert_allclose(output, expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(output, canonical, rtol=1e-4, atol=1e-4)


def test_unknown_verification_is_refused(cluster):
    module, x = block_and_input(batch=2)
    captured = goblin.capture(module, torch.from_numpy(x))
    token = cluster.add_researcher()
    cluster.start_node()
    client = cluster.connect(token)
    with pytest.raises(InputError, match="verification is one of"):
        client.run(captured, [x], batch=0, verification="trust-me")
    # Sent raw, past the client's check: the node refuses it and creates no job.
    request, arrays = graph_request(captured, [x], batch=0)
    for wrong in ("trust-me", 3, True):
        request["verification"] = wrong
        with pytest.raises(GoblinError, match="'verification' is"):
            client.connection.request(request, [encode_tensor_frame(a) for a in arrays])
    assert cluster.query("SELECT count(*) FROM graph_jobs")[0][0] == 0
