"""The patient colluding pair (tests/adversary, strategy patient-pair, never importing
goblin) beside one real headless honest volunteer and a real lab node at its default verification
settings. The pair (two identities on two addresses, 127.0.0.2 and .3) answers every task with the project's own canonical bits (goblin-run-graph)
until each identity has answered 12 tasks (past the 10 audits of probation), then lies only on the
tasks both identities hold, so no honest replica ever disagrees with a lie: only the node's own
check of every task can see it. Nothing it lies about may be used: no wrong chunk is delivered, and
no poisoned gradient is applied (the trained parameters equal an honest run's, bit for bit).

`--second-opinion-seconds 2` lets the one honest volunteer finish once the pair is quarantined
(liveness, tested on its own in test_liveness.py); every verification setting is the default."""

import re

import numpy as np
import pytest

from goblin import graph as gg

from goblin import optim

from conftest import BUILD_DIR
from test_adversaries import (EVENT_TIMEOUT, JOB_TIMEOUT, assert_graph_lies_caught, assert_honest_outputs,
                              banned, honest_id, lied_tasks, small_graph, wait_for_connected)

torch = pytest.importorskip("torch", reason="torch is not installed (optional dependency)")

from training_models import training_family  # noqa: E402

pytestmark = pytest.mark.integration

RUNNER = BUILD_DIR / "app" / "graph-runner" / "goblin-run-graph"
LIVENESS = ["--second-opinion-seconds", "2"]
HONEST_TASKS = 12
# How long an identity of the pair waits for its partner to receive the same task: generous, so
# that a busy machine does not keep the pair from ever holding a task together.
PAIR_WAIT = "3"


def start_pair(cluster, lies=0, node_args=(), pair_args=(), honest_args=()):
    """The node, one honest volunteer and the pair; returns (adversary, pair ids, honest ids)."""
    if not RUNNER.exists():
        pytest.fail("%s is missing: build the ci preset" % RUNNER)
    cluster.start_node(extra_args=LIVENESS + list(node_args))
    # The pair asks for more slots than the honest volunteer, so it often holds both opinions of
    # a task (the node leases a queued task's opinions to whoever asks first).
    honest_ids = [honest_id(cluster.start_volunteer(threads=1, slots=1,
                                                    extra_args=list(honest_args)))]
    adversary, ids = cluster.start_adversary(
        "patient-pair", identities=2,
        extra_args=["--addresses", "127.0.0.2,127.0.0.3", "--slots", "4", "--honest-tasks", str(HONEST_TASKS), "--runner", str(RUNNER),
                    "--pair-wait", PAIR_WAIT,
                    "--lies", str(lies)] + list(pair_args))
    wait_for_connected(cluster, 3)
    return adversary, ids, honest_ids


@pytest.mark.parametrize("lies", [0, 1], ids=["lies-on-every-shared-task", "lies-once"])
def test_patient_pair_gets_no_wrong_chunk_delivered(cluster, lies):
    token = cluster.add_researcher()
    adversary, ids, honest_ids = start_pair(cluster, lies)
    client = cluster.connect(token)
    jobs = 0
    # Jobs of 8 tasks one after another: the pair wakes during the third or so, and every later
    # job is one it may lie on.
    while jobs < 10 and not (lied_tasks(adversary) and all(banned(adversary, i) for i in ids)):
        g, inputs = small_graph(16, seed=20 + jobs)
        outputs = client.run(g, inputs, batch=0, chunks=8, timeout=JOB_TIMEOUT)
        assert_honest_outputs(g, inputs, outputs)  # every job, those the pair lied on included
        jobs += 1
    assert lied_tasks(adversary), "the pair never lied in %d jobs\n%s" % (jobs, adversary.tail())
    assert_graph_lies_caught(cluster, adversary, ids, honest_ids)
    # The partner's identical lie convicts it too.
    cluster.wait_until(lambda: all(banned(adversary, i) for i in ids), EVENT_TIMEOUT,
                       "both identities of the pair quarantined")


def test_patient_pair_gets_no_poisoned_gradient_applied(cluster):
    token = cluster.add_researcher()
    adversary, ids, honest_ids = start_pair(cluster)
    client = cluster.connect(token, timeout=120)
    model, loss_fn, x, y = training_family("mlp", samples=64, seed=11)

    def train():
        return client.train(model, loss_fn, (x, y), optimizer=optim.AdamW(lr=1e-2), rounds=12,
                            batch_size=16, micro_batch=4, progress=False, timeout=JOB_TIMEOUT)

    attacked = train()
    assert lied_tasks(adversary), "the pair never lied\n" + adversary.tail()
    assert_graph_lies_caught(cluster, adversary, ids, honest_ids)
    assert sum(r.rejected for r in attacked.history) >= 1
    # The same job again with a second honest volunteer and no pair: the bits an honest run gives.
    cluster.start_volunteer(threads=1, slots=2)
    control = train()
    for name, value in control.params.items():
        assert np.asarray(attacked.params[name]).tobytes() == np.asarray(value).tobytes(), name
    assert [np.float64(r.loss) for r in attacked.history] == \
        [np.float64(r.loss) for r in control.history]


def matmul_graph(batch, seed):
    """x·W alone, inner size 128: the node's cheap check takes the output by Freivalds, which
    accepts any value within the element's rounding bound (below an inner size of 96 it would
    recompute the product and catch a nudge at once)."""
    rng = np.random.default_rng(seed)
    g = gg.Graph()
    x = g.input("f32", [batch, 128])
    w = g.input("f32", [128, 6])
    g.output(g.matmul(x, w))
    return g, [rng.standard_normal((batch, 128)).astype(np.float32),
               rng.standard_normal((128, 6)).astype(np.float32)]


ROWS_OF_X = {"inputs": [0, None], "outputs": [0]}


def nudged_tasks(process):
    return {int(m.group(1)) for m in (
        re.search(r"answered graph task (\d+) attempt \d+: nudge", line)
        for line in list(process.lines)) if m}


def test_a_nudge_within_the_bound_is_corrected_once_the_pair_is_caught(cluster):
    """The pair nudges one element of two shared tasks by one ulp (the cheap check passes it, so
    those jobs are delivered a hair off the canonical bits), answers 24 more tasks honestly (the
    nudged jobs finish meanwhile), then lies grossly and is caught. The
    recheck of the delivered jobs after the quarantine covers the cheap-audited tasks too: each
    nudged job's audit says "corrected" and its outputs are the canonical bits (those of the same
    job run again by the honest volunteer alone). `--full-audit-share 0`: no random full audit
    may catch a nudge first, so nothing here rests on a draw."""
    token = cluster.add_researcher()
    adversary, ids, _ = start_pair(cluster, node_args=["--full-audit-share", "0"],
                                   pair_args=["--nudge", "--careless-after", "2", "--careless-gap", "24"])
    client = cluster.connect(token)

    def run(g, inputs):
        return client.run(g, inputs, batch=ROWS_OF_X, chunks=8, timeout=JOB_TIMEOUT)

    jobs = run_until_caught(cluster, client, adversary, ids,
                            lambda n: matmul_graph(16, seed=40 + n), run)
    for job, report, control in nudged_jobs_corrected(cluster, client, adversary, jobs, run):
        assert sum(a["corrected"] for a in report.audits) >= 1
        assert [o.tobytes() for o in report.outputs] == [o.tobytes() for o in control]


def run_until_caught(cluster, client, adversary, ids, make_job, run):
    """Jobs `make_job(n)` run one after another until both identities of the pair are banned (at
    most 16); [(job id, graph, inputs)]. Fails when the pair nudged nothing."""
    jobs = []
    while len(jobs) < 16 and not all(banned(adversary, i) for i in ids):
        g, inputs = make_job(len(jobs))
        run(g, inputs)
        jobs.append((client.last_job, g, inputs))
    assert nudged_tasks(adversary), "the pair never nudged a task\n" + adversary.tail()
    cluster.wait_until(lambda: all(banned(adversary, i) for i in ids), EVENT_TIMEOUT,
                       "both identities of the pair quarantined")
    return jobs


def nudged_jobs_corrected(cluster, client, adversary, jobs, run):
    """For each job the pair nudged: (job id, its audit report once "corrected", the same job
    run again)."""
    nudged = nudged_tasks(adversary)
    marks = ",".join("?" * len(nudged))
    nudged_jobs = {row[0] for row in cluster.query(
        "SELECT DISTINCT job_id FROM graph_tasks WHERE id IN (%s)" % marks, tuple(sorted(nudged)))}
    assert nudged_jobs & {job for job, _, _ in jobs}
    for job, g, inputs in jobs:
        if job not in nudged_jobs:
            continue
        reports = []
        cluster.wait_until(lambda: reports.append(client.audit(job)) or
                           reports[-1].state == "corrected", EVENT_TIMEOUT,
                           "the nudged job %s corrected" % job)
        yield job, reports[-1], run(g, inputs)


def matmul_chain(batch, seed, layers=6, width=256):
    """x·W1·W2·…·W6 (256 KiB weights): too big for volunteers lending 1 MiB, so the node cuts it
    into stages whose boundary values are matmul outputs, which its cheap check takes by
    Freivalds (a one-ulp nudge passes it)."""
    rng = np.random.default_rng(seed)
    g = gg.Graph()
    h = g.input("f32", [batch, width])
    weights = []
    for index in range(layers):
        shape = (width, 6 if index == layers - 1 else width)
        weights.append((rng.standard_normal(shape) / np.sqrt(width)).astype(np.float32))
        h = g.matmul(h, g.input("f32", shape))
    g.output(h)
    return g, [rng.standard_normal((batch, width)).astype(np.float32)] + weights


CHAIN_ROWS = {"inputs": [0] + [None] * 6, "outputs": [0]}
SMALL = ["--memory-mb", "1"]
# Tasks of at most 1 MiB (the chain is cut into stages), while each of the pair's identities lends
# room for several: a volunteer gets only the tasks its memory holds at once, and the pair must
# hold both opinions of a task to lie on it.
STAGED = ["--max-graph-task-mb", "1"]
PAIR_MEMORY = ["--memory-mb", "4"]


def test_a_nudged_stage_is_corrected_with_every_stage_that_read_it(cluster):
    """The same late catch as above on jobs cut into stages: the pair nudges a stage's boundary
    value within its bound, a later stage computes from it (honestly) and the job is delivered a
    hair off. Once the pair is caught, the delivered job's audit corrects the nudged stage and
    computes again every stage that read it, so the job's outputs are the canonical bits again (the
    same job run anew), and the volunteers of those later stages are not blamed."""
    token = cluster.add_researcher()
    adversary, ids, honest_ids = start_pair(
        cluster, node_args=["--full-audit-share", "0"] + STAGED, honest_args=SMALL,
        pair_args=["--nudge", "--careless-after", "2", "--careless-gap", "24"] + PAIR_MEMORY)
    client = cluster.connect(token)

    def run(g, inputs):
        outputs = client.run(g, inputs, batch=CHAIN_ROWS, chunks=4, timeout=JOB_TIMEOUT)
        assert client.last_summary["tasks"] > 4, "the chain was not cut into stages"
        return outputs

    jobs = run_until_caught(cluster, client, adversary, ids,
                            lambda n: matmul_chain(16, seed=60 + n), run)
    nudged = nudged_tasks(adversary)
    for job, report, control in nudged_jobs_corrected(cluster, client, adversary, jobs, run):
        assert [o.tobytes() for o in report.outputs] == [o.tobytes() for o in control]
        # A nudged stage that a later stage read: that later stage was corrected as well.
        tasks = cluster.query("SELECT id, chunk FROM graph_tasks WHERE job_id = ?", (job,))
        stages = len(tasks) // 4
        read_later = [t for t, chunk in tasks if t in nudged and chunk % stages < stages - 1]
        corrected = sum(a["corrected"] for a in report.audits)
        assert corrected >= (len(read_later) + 1 if read_later else 1), (read_later, corrected)
    # Only the pair's results were overturned: the honest volunteer computed what it was given.
    overturned = {row[0] for row in cluster.query(
        "SELECT DISTINCT volunteer_id FROM graph_results WHERE method = 'delivered-recheck'")}
    assert overturned <= set(ids), overturned
    assert not set(honest_ids) & overturned


def test_patient_pair_gets_no_wrong_stage_output_used(cluster):
    """The pair against jobs cut into stages (tasks of at most 1 MiB): once past probation it
    lies on every stage task both identities hold. Each lie is caught before a later stage reads
    it or a chunk is merged, so every job's outputs are honest."""
    token = cluster.add_researcher()
    adversary, ids, honest_ids = start_pair(cluster, node_args=STAGED, honest_args=SMALL,
                                            pair_args=PAIR_MEMORY)
    client = cluster.connect(token)
    jobs = 0
    while jobs < 10 and not (lied_tasks(adversary) and all(banned(adversary, i) for i in ids)):
        g, inputs = matmul_chain(16, seed=80 + jobs)
        outputs = client.run(g, inputs, batch=CHAIN_ROWS, chunks=4, timeout=JOB_TIMEOUT)
        assert client.last_summary["tasks"] > 4, "the chain was not cut into stages"
        assert_honest_outputs(g, inputs, outputs)
        jobs += 1
    assert lied_tasks(adversary), "the pair never lied in %d jobs\n%s" % (jobs, adversary.tail())
    assert_graph_lies_caught(cluster, adversary, ids, honest_ids)
