"""Cancelling a training job on a real node: it keeps the rounds it committed (fetch_train raises
TrainingError with code "cancelled" and those rounds in its result), its running round's graph job
is cancelled too, and it is listed as cancelled."""

import pytest

from goblin import optim
from goblin.training import TrainingError

pytest.importorskip("torch", reason="torch is not installed (optional dependency)")

from training_models import training_family  # noqa: E402
from test_graph_network import wait_for_volunteers  # noqa: E402

pytestmark = pytest.mark.integration  # starts a lab node and volunteers

TIMEOUT = 180.0


def test_cancelled_training_keeps_its_committed_rounds(cluster):
    token = cluster.add_researcher()
    cluster.start_node()
    volunteers = [cluster.start_volunteer(threads=1, slots=2) for _ in range(2)]
    wait_for_volunteers(cluster, 2)
    client = cluster.connect(token, timeout=TIMEOUT)
    model, loss_fn, x, y = training_family("mlp", samples=32)
    job = client.submit_train(model, loss_fn, (x, y), optimizer=optim.AdamW(lr=1e-2), rounds=50,
                              batch_size=8, micro_batch=4)
    assert job.kind == "train"

    def committed():
        rows = cluster.query("SELECT rounds_done FROM train_jobs WHERE id = ?", (job.id,))
        return rows and rows[0][0] >= 1

    cluster.wait_until(committed, TIMEOUT, "a committed round")
    for volunteer in volunteers:  # nobody computes from here on: a round stays in flight
        volunteer.kill9()

    def in_flight():
        rows = cluster.query("SELECT round_job FROM train_jobs WHERE id = ?", (job.id,))
        return rows[0][0] if rows and rows[0][0] else None

    round_job = cluster.wait_until(in_flight, TIMEOUT, "the next round's graph job")
    rounds_done = cluster.query("SELECT rounds_done FROM train_jobs WHERE id = ?", (job.id,))[0][0]
    assert job.cancel() is True
    assert cluster.query("SELECT state FROM train_jobs WHERE id = ?", (job.id,)) == [("cancelled",)]
    assert cluster.query("SELECT state FROM graph_jobs WHERE id = ?",
                         (round_job,)) == [("cancelled",)]
    with pytest.raises(TrainingError) as cancelled:
        job.result(timeout=TIMEOUT)
    assert cancelled.value.code == "cancelled"
    result = cancelled.value.result
    assert result is not None and result.rounds == rounds_done
    assert [r.round for r in result.history] == list(range(rounds_done))
    listed = {j.id: j for j in cluster.connect(token).jobs()}
    assert listed[job.id].state in ("cancelled", "released") and round_job not in listed
