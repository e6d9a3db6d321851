"""A late catch rewinds a training job: on a node whose lab lowered its checks
(`--audit-floor 0 --probation-audits 0`: agreement alone decides a task), the adversary's patient
pair (tests/adversary, never importing goblin) agrees a poisoned gradient into several rounds, then
grows careless and is caught by a disagreement with an honest volunteer. The audits of the rounds'
graph jobs correct them, the node rewinds the job to the first poisoned round and trains on: the
result equals an honest run's bit for bit, and the rounds trained again say why. The same pair lying
only near the end of a job, caught after the job ended and was released, has the node train the
released job again: its audit says "corrected" with an honest run's parameters."""

import numpy as np
import pytest

from goblin import optim
from goblin.errors import RemoteError
from goblin.training import TrainingError

from test_adversaries import (EVENT_TIMEOUT, JOB_TIMEOUT, banned, honest_id, lied_tasks, small_graph,
                              wait_for_connected)
from test_patient_colluders import PAIR_WAIT, RUNNER

torch = pytest.importorskip("torch", reason="torch is not installed (optional dependency)")

from training_models import training_family  # noqa: E402

pytestmark = pytest.mark.integration

LOWERED_CHECKS = ["--audit-floor", "0", "--probation-audits", "0",
                  "--shared-address-audit-rate", "0", "--second-opinion-seconds", "2"]


def start_pair(cluster, pair_args):
    """A node with lowered checks, one honest volunteer and the pair (--slots 4 each, so it often
    holds both opinions of a task); (researcher token, client, adversary, pair ids, honest ids)."""
    if not RUNNER.exists():
        pytest.fail("%s is missing: build the ci preset" % RUNNER)
    token = cluster.add_researcher()
    cluster.start_node(extra_args=LOWERED_CHECKS)
    honest_ids = [honest_id(cluster.start_volunteer(threads=1, slots=1))]
    adversary, ids = cluster.start_adversary(
        "patient-pair", identities=2,
        extra_args=["--addresses", "127.0.0.2,127.0.0.3", "--slots", "4", "--runner", str(RUNNER),
                    "--pair-wait", PAIR_WAIT] + list(pair_args))
    wait_for_connected(cluster, 3)
    return token, cluster.connect(token, timeout=120), adversary, ids, honest_ids


def test_a_pair_caught_late_has_its_rounds_trained_again(cluster):
    token, client, adversary, ids, honest_ids = start_pair(
        cluster, ["--honest-tasks", "2", "--careless-after", "6"])
    model, loss_fn, x, y = training_family("mlp", samples=64, seed=12)
    redone_seen = []

    def train(callback=None):
        return client.train(model, loss_fn, (x, y), optimizer=optim.AdamW(lr=1e-2), rounds=10,
                            batch_size=16, micro_batch=4, progress=False, timeout=JOB_TIMEOUT,
                            callback=callback)

    attacked = train(lambda record: redone_seen.append(record.redone))
    assert len(lied_tasks(adversary)) > 6, adversary.tail()
    assert all(banned(adversary, i) for i in ids), adversary.tail()
    # Rounds were trained again, each saying why; the history holds one record per round.
    assert [r.round for r in attacked.history] == list(range(10))
    redone = [r for r in attacked.history if r.redone]
    assert redone and all("was corrected after" in r.redone for r in redone), \
        [r.redone for r in attacked.history]
    assert any(redone_seen), "no train_round record said it was redone"
    rewinds = cluster.query("SELECT first_round, end_round, reason FROM train_rewinds")
    assert rewinds and all(first < end for first, end, _ in rewinds), rewinds
    # Released, the job keeps its states for the audits of its rounds (a later catch would train
    # it again), and only as long as they keep their data.
    assert {row[0] for row in cluster.query(
        "SELECT t.state FROM train_snapshots s JOIN train_jobs t ON t.id = s.job_id")} == \
        {"retained"}
    # The same job with two honest volunteers: the bits an honest run gives.
    cluster.start_volunteer(threads=1, slots=2)
    control = train()
    assert not any(r.redone for r in control.history)
    for name, value in control.params.items():
        assert np.asarray(attacked.params[name]).tobytes() == np.asarray(value).tobytes(), name
    assert [np.float64(r.loss) for r in attacked.history] == \
        [np.float64(r.loss) for r in control.history]
    assert honest_ids
    # A node started with no retention deletes what the released jobs kept for audits.
    cluster.node.stop()
    cluster.start_node(extra_args=LOWERED_CHECKS + ["--audit-retention-hours", "0"])
    cluster.wait_until(lambda: {row[0] for row in cluster.query("SELECT state FROM train_jobs")}
                       == {"released"}, EVENT_TIMEOUT, "the retained training jobs released")
    assert not cluster.query("SELECT * FROM train_snapshots"), "kept states outlived the job"


@pytest.mark.parametrize("node_killed", [False, True], ids=["", "node-killed-while-retraining"])
def test_a_pair_caught_after_the_job_ended_has_it_trained_again(cluster, tmp_path, node_killed):
    """The pair lies only near the end of a training job: it stays honest until round 4 of 8 has
    committed (the test then creates its wake file), agrees poisoned gradients into later rounds,
    and the job ends and is released with them. Then it lies on every task of later graph jobs
    and is caught. The audits of the poisoned rounds' graph jobs make the node train the released
    job again from the first poisoned round: the job's audit (pushed, and on request) says
    "corrected" and carries an honest run's parameters bit for bit; fetch_train returns them with
    the rounds trained again saying why. Without the retraining the audit stays off (the test
    fails). A node killed (SIGKILL) while it trains the job again, and
    restarted with no retention for audits (so its start-up deletes what released jobs kept),
    resumes the retraining and reaches the same bits."""
    wake, careless = tmp_path / "wake", tmp_path / "careless"
    token, client, adversary, ids, honest_ids = start_pair(
        cluster, ["--honest-tasks", "0", "--wake-file", str(wake), "--careless-file", str(careless)])
    model, loss_fn, x, y = training_family("mlp", samples=64, seed=13)

    def train(callback=None):
        return client.train(model, loss_fn, (x, y), optimizer=optim.AdamW(lr=1e-2), rounds=8,
                            batch_size=16, micro_batch=4, progress=False, timeout=JOB_TIMEOUT,
                            callback=callback)

    attacked = train(lambda record: record.round == 4 and wake.touch())
    assert lied_tasks(adversary), "the pair never lied near the job's end\n" + adversary.tail()
    assert not any(r.redone for r in attacked.history), "caught before the job ended"
    # Later jobs: the pair lies on every task and is caught by a disagreement.
    careless.touch()
    for seed in range(16):
        if all(banned(adversary, i) for i in ids):
            break
        g, inputs = small_graph(16, seed=90 + seed)
        client.run(g, inputs, batch=0, chunks=8, timeout=JOB_TIMEOUT)
    cluster.wait_until(lambda: all(banned(adversary, i) for i in ids), EVENT_TIMEOUT,
                       "both identities of the pair quarantined")
    reports = []
    if node_killed:
        cluster.wait_until(lambda: reports.append(client.audit(attacked.job)) or
                           reports[-1].state in ("rechecking", "corrected"), JOB_TIMEOUT,
                           "the released training job %s trained again" % attacked.job)
        assert reports[-1].state == "rechecking", "retrained before the node could be killed"
        cluster.node.kill9()
        # Restarted with no retention for audits: its start-up pruning, which deletes what
        # released jobs kept, must leave the job being trained again alone (volunteers come back).
        cluster.start_node(port=cluster.port,
                           extra_args=LOWERED_CHECKS + ["--audit-retention-hours", "0"])
        client = cluster.connect(token, timeout=120)
    cluster.wait_until(lambda: reports.append(client.audit(attacked.job)) or
                       reports[-1].state == "corrected", JOB_TIMEOUT,
                       "the released training job %s trained again" % attacked.job)
    corrected = reports[-1]
    assert corrected.audits and corrected.outputs, corrected
    # The same job with two honest volunteers: the bits an honest run gives.
    cluster.start_volunteer(threads=1, slots=2)
    control = train()
    assert corrected.outputs[0].tobytes() == control.flat_params.tobytes()
    assert attacked.flat_params.tobytes() != control.flat_params.tobytes(), \
        "the lies never reached the delivered parameters"
    for mine, theirs in zip(corrected.outputs[1:], control.optimizer_state):
        assert mine.tobytes() == theirs.tobytes()
    # Pushed to the researcher's connection when the retraining ended.
    assert any(n.job == attacked.job and n.state == "corrected" for n in client.audit_notices)
    again = client.fetch_train(attacked.job, model)
    assert again.flat_params.tobytes() == control.flat_params.tobytes()
    redone = [r for r in again.history if r.redone]
    assert redone and all("was corrected after" in r.redone for r in redone)
    assert [r.round for r in again.history] == list(range(8))
    assert [np.float64(r.loss) for r in again.history] == \
        [np.float64(r.loss) for r in control.history]
    assert cluster.query("SELECT ended_at IS NOT NULL, error FROM train_late_catches "
                         "WHERE job_id = ?", (attacked.job,))[0] == (1, "")
    # Another researcher's audit or fetch of the job is "not found", like an unknown id's.
    intruder = cluster.connect(cluster.add_researcher("mallory@example.org"))
    with pytest.raises(RemoteError) as refused:
        intruder.audit(attacked.job)
    assert refused.value.code == "not_found"
    with pytest.raises(TrainingError) as refused:
        intruder.fetch_train(attacked.job, model)
    assert refused.value.code == "not_found"
    assert honest_ids
