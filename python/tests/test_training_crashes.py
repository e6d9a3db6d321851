"""Training survives crashes: a node killed with SIGKILL while a round's job runs (and the
volunteers killed with it) and a researcher's client killed with SIGKILL mid-round both resume —
the first from the TrainingError's result, the second from its checkpoint file — re-attaching to
the round's durable job, and finish with the same bits as a run that never stopped."""

import json
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

from goblin import optim

torch = pytest.importorskip("torch", reason="torch is not installed (optional dependency)")

from conftest import START_TIMEOUT, TESTS, _die_with_parent  # noqa: E402
from goblin.training import TrainingError  # noqa: E402
from training_models import training_family  # noqa: E402

ROUNDS, BATCH, MICRO, SAMPLES, SEED = 4, 8, 4, 24, 11
TIMEOUT = 180.0


def train(client, rounds=ROUNDS, **kwargs):
    model, loss_fn, x, y = training_family("mlp", samples=SAMPLES, seed=SEED)
    return client.train(model, loss_fn, (x, y), optimizer=optim.AdamW(lr=1e-2), rounds=rounds,
                        batch_size=BATCH, micro_batch=MICRO, progress=False, timeout=TIMEOUT,
                        **kwargs)


def bits(result):
    return [v.tobytes() for _, v in sorted(result.params.items())], \
        [np.float64(r.loss).tobytes() for r in result.history]


def graph_jobs(cluster):
    return [row[0] for row in cluster.query("SELECT id FROM graph_jobs ORDER BY created_at")]


def two_volunteers(cluster):
    return [cluster.start_volunteer(threads=1, slots=2) for _ in range(2)]


def test_a_node_killed_mid_round_resumes_to_the_same_bits(cluster):
    token = cluster.add_researcher()
    node = cluster.start_node()
    volunteers = two_volunteers(cluster)
    client = cluster.connect(token, timeout=TIMEOUT)
    uninterrupted = train(client)

    def stop_after_round_one(record):
        if record.round == 1:  # round 2 will wait: nobody computes it
            for volunteer in volunteers:
                volunteer.kill9()

    jobs_before = len(graph_jobs(cluster))

    def kill_node_when_round_two_is_durable():
        cluster.wait_until(lambda: len(graph_jobs(cluster)) == jobs_before + 3, TIMEOUT,
                           "round 2's job at the node")
        node.kill9()

    killer = threading.Thread(target=kill_node_when_round_two_is_durable, daemon=True)
    killer.start()
    with pytest.raises(TrainingError, match="round 2") as caught:
        train(client, callback=stop_after_round_one)
    killer.join(TIMEOUT)
    partial = caught.value.result
    assert partial.rounds == 2 and partial.pending is not None
    pending_round, pending_job = partial.pending
    assert pending_round == 2 and pending_job == graph_jobs(cluster)[-1]

    cluster.start_node()  # the same database and data folder
    two_volunteers(cluster)
    client = cluster.connect(token, timeout=TIMEOUT)
    resumed = train(client, rounds=ROUNDS - 2, resume=partial)
    assert bits(resumed) == bits(uninterrupted)
    # Round 2 came from the job that was running when the node died, not from a new one.
    assert resumed.history[2].job == pending_job
    assert len(graph_jobs(cluster)) == jobs_before + 4


CLIENT = textwrap.dedent("""
    import sys
    sys.path.insert(0, %(tests)r)
    import goblin
    from goblin import optim
    from training_models import training_family

    def wait_after_round_one(record):
        print("round", record.round, flush=True)
        if record.round == 1:
            sys.stdin.readline()  # the test kills the volunteers, then lets round 2 start

    model, loss_fn, x, y = training_family("mlp", samples=%(samples)d, seed=%(seed)d)
    with goblin.connect(%(url)r, token=%(token)r, timeout=%(timeout)r) as client:
        client.train(model, loss_fn, (x, y), optimizer=optim.AdamW(lr=1e-2), rounds=%(rounds)d,
                     batch_size=%(batch)d, micro_batch=%(micro)d, progress=False,
                     checkpoint=%(checkpoint)r, callback=wait_after_round_one)
""")


def pending_in(path):
    try:
        with np.load(path) as stored:
            return json.loads(stored["meta"].tobytes().decode()).get("pending")
    except (OSError, ValueError, KeyError):
        return None


def test_a_client_killed_mid_round_resumes_from_its_checkpoint(cluster, tmp_path):
    token = cluster.add_researcher()
    cluster.start_node()
    volunteers = two_volunteers(cluster)
    client = cluster.connect(token, timeout=TIMEOUT)
    uninterrupted = train(client)

    checkpoint = tmp_path / "run.npz"
    script = CLIENT % dict(tests=str(TESTS), samples=SAMPLES, seed=SEED, url=cluster.url,
                           token=token, timeout=TIMEOUT, rounds=ROUNDS, batch=BATCH, micro=MICRO,
                           checkpoint=str(checkpoint))
    researcher = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, preexec_fn=_die_with_parent)
    try:
        for expected in ("round 0", "round 1"):
            assert researcher.stdout.readline().strip() == expected
        for volunteer in volunteers:
            volunteer.kill9()
        researcher.stdin.write("\n")
        researcher.stdin.flush()
        pending = cluster.wait_until(lambda: pending_in(checkpoint), START_TIMEOUT * 4,
                                     "round 2's job in the checkpoint")
        researcher.kill()  # SIGKILL, while round 2 runs
        researcher.wait(30)
    finally:
        if researcher.poll() is None:
            researcher.kill()
    assert pending[0] == 2

    two_volunteers(cluster)
    resumed = train(client, rounds=ROUNDS - 2, resume=str(checkpoint))
    assert bits(resumed) == bits(uninterrupted)
    assert resumed.history[2].job == pending[1]
    # The checkpoint kept up: it now holds the finished run.
    assert pending_in(checkpoint) is None
    with np.load(checkpoint) as stored:
        assert json.loads(stored["meta"].tobytes().decode())["rounds"] == ROUNDS
