"""Adversarial volunteers (tests/adversary, written from docs/protocol.md alone, never importing
goblin) beside real headless honest volunteers and a real lab node: every lie must be caught (the
liar's verdicts are rejected or stale, the node's tables record it) and the researcher's answer
must be exact (matmul: every element within its float64-referenced sound bound; graphs: what an
honest computation gives).
"""

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import goblin
from goblin import graph as gg
from goblin import reference
from goblin.accuracy import matmul_error

pytestmark = pytest.mark.integration

TESTS = Path(__file__).resolve().parent
VECTORS = TESTS.parents[1] / "tests" / "vectors"
JOB_TIMEOUT = 120.0
EVENT_TIMEOUT = 60.0
HOARDER_JOB_TIMEOUT = 60.0
HOARDER_LEASE_SECONDS = 2
VERDICT = re.compile(r"^verdict task (-?\d+) attempt (-?\d+): (\S+) identity (v-\S+)$")
TASK = re.compile(r"^task (-?\d+) attempt (-?\d+) op (\S+) identity (v-\S+)$")
CONNECTED = re.compile(r"connected to \S+ as (v-[0-9a-f]+)")


# -- reading the adversary's log and the node's tables ----------------------------------------------

def verdicts(process, identity=None):
    """[(task, attempt, verdict, identity)] in the order the adversary received them. Fails the
    test at once when the adversary saw the node break docs/protocol.md."""
    broken = [line for line in list(process.lines) if "node protocol violation" in line]
    if broken:
        pytest.fail("the lab node broke the protocol: %s" % broken[0], pytrace=False)
    found = [VERDICT.match(line) for line in list(process.lines)]
    rows = [(int(m.group(1)), int(m.group(2)), m.group(3), m.group(4)) for m in found if m]
    return [row for row in rows if identity is None or row[3] == identity]


def tasks_received(process, identity=None):
    found = [TASK.match(line) for line in list(process.lines)]
    rows = [(int(m.group(1)), int(m.group(2)), m.group(4)) for m in found if m]
    return [row for row in rows if identity is None or row[2] == identity]


def answered(process, identity=None):
    """{(task, attempt)} the adversary sent its answer for (matmul tiles)."""
    found = [re.match(r"^answered task (\d+) attempt (\d+): .* identity (v-\S+)$", line)
             for line in list(process.lines)]
    return {(int(m.group(1)), int(m.group(2))) for m in found
            if m and (identity is None or m.group(3) == identity)}


def closed(process, identity):
    return bool(lines_with(process, "closed: ") and [
        line for line in lines_with(process, "closed: ") if line.endswith("identity " + identity)])


def wait_for_verdicts(cluster, process, ids):
    """Until every answer of every identity has its verdict, or the node closed that identity
    (a quarantined volunteer is disconnected: its undecided answers get no verdict)."""
    def settled():
        decided = {(t, a, i) for t, a, _, i in verdicts(process)}
        return all(closed(process, i) or all((t, a, i) in decided for t, a in answered(process, i))
                   for i in ids)
    cluster.wait_until(settled, EVENT_TIMEOUT, "a verdict for every answer of %s" % ids)


def lines_with(process, text):
    return [line for line in list(process.lines) if text in line]


def matmul_results(cluster, volunteers):
    marks = ",".join("?" * len(volunteers))
    return cluster.query("SELECT task_id, attempt, volunteer_id, verdict, method FROM results "
                         "WHERE volunteer_id IN (%s) ORDER BY task_id, attempt" % marks,
                         tuple(volunteers))


def graph_results(cluster, volunteers=None):
    rows = cluster.query("SELECT task_id, attempt, volunteer_id, verdict, method FROM graph_results "
                         "ORDER BY task_id, attempt")
    return [r for r in rows if volunteers is None or r[2] in volunteers]


def honest_id(volunteer):
    return volunteer.wait_for_line(CONNECTED, EVENT_TIMEOUT).group(1)


def assert_no_over_slots(process):
    assert not lines_with(process, "over-slots"), lines_with(process, "over-slots")


# -- matmul jobs ----------------------------------------------------------------------------------

def random_matrices(m, k, n, dtype, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype))


def assert_exact(A, B, C):
    """Every element of C within its own sound bound of the float64 product (docs/protocol.md)."""
    assert C.shape == (A.shape[0], B.shape[1]) and C.dtype == A.dtype
    report = matmul_error(A, B, C)
    assert report["max_bound_ratio"] <= 1.0, "an element is off by more than its bound: %s" % report


def tile_count(m, n, tile):
    return -(-m // tile[0]) * -(-n // tile[1])


def run_matmul_against(cluster, strategy, shape, tile, dtype=np.float32, extra_args=(),
                       identities=1, node_args=(), first_answers=1, slots=2):
    """Node + the adversary alone until it answered `first_answers` tiles (a tile the node sends to
    a second opinion has no verdict yet then), then an honest volunteer joins; returns (adversary,
    its ids, honest id, A, B, C, summary, job) once the job is done and every answer has its
    verdict."""
    token = cluster.add_researcher()
    cluster.start_node(extra_args=list(node_args))
    adversary, ids = cluster.start_adversary(strategy, identities=identities,
                                             extra_args=["--slots", str(slots)] + list(extra_args))
    client = cluster.connect(token)
    A, B = random_matrices(shape[0], shape[1], shape[2], dtype, seed=sum(shape))
    job = client.submit_matmul(A, B, tile=tile)
    cluster.wait_until(lambda: len(answered(adversary)) >= first_answers, EVENT_TIMEOUT,
                       "%d answers from the %s adversary" % (first_answers, strategy))
    honest = honest_id(cluster.start_volunteer(threads=1, slots=2))
    C = client.fetch(job, timeout=JOB_TIMEOUT)
    wait_for_verdicts(cluster, adversary, ids)
    return adversary, ids, honest, A, B, C, client.last_summary, job


def banned(process, identity):
    return any(line.startswith("closed: 4003 ") and line.endswith("identity " + identity)
               for line in list(process.lines))


def assert_every_answer_rejected(cluster, adversary, ids):
    """No verdict but rejected or stale; at least one rejection, or the node closed the liar as
    quarantined (4003: it may close before the rejected verdict went out); the table agrees."""
    mine = verdicts(adversary)
    assert all(v in ("rejected", "stale") for _, _, v, _ in mine), mine
    assert any(v == "rejected" for _, _, v, _ in mine) or any(banned(adversary, i) for i in ids), \
        adversary.tail()
    rows = matmul_results(cluster, ids)
    assert rows and all(row[3] == "rejected" for row in rows), rows
    assert sum(cluster.query("SELECT rejected FROM volunteers WHERE id = ?", (i,))[0][0]
               for i in ids) >= 1


def assert_one_accepted_result_per_task(cluster, job, total):
    rows = cluster.query("SELECT t.id, count(r.task_id) FROM tasks t LEFT JOIN results r "
                         "ON r.task_id = t.id AND r.verdict = 'accepted' "
                         "WHERE t.job_id = ? GROUP BY t.id", (job,))
    assert len(rows) == total and all(count == 1 for _, count in rows), rows


@pytest.mark.parametrize("dtype", [
    np.float32,
    np.float64,
], ids=["f32", "f64"])
def test_past_bound_element_is_caught(cluster, dtype):
    # 64-column tiles: the per-row slack of today's check is ~n/3 times one element's bound.
    adversary, ids, _, A, B, C, summary, job = run_matmul_against(
        cluster, "past-bound", (8, 64, 128), [4, 64], dtype=dtype)
    assert_exact(A, B, C)
    assert_every_answer_rejected(cluster, adversary, ids)
    assert summary["verdicts"]["accepted"] == tile_count(8, 128, [4, 64])


def test_row_scaled_by_1_001_is_caught_on_wide_tiles(cluster):
    adversary, ids, _, A, B, C, summary, _ = run_matmul_against(
        cluster, "row-scale", (8, 256, 512), [4, 512])
    assert_exact(A, B, C)
    assert_every_answer_rejected(cluster, adversary, ids)


def test_streamed_tiles_carry_only_accepted_results(cluster, monkeypatch):
    """With tiles streamed to the researcher (1 MiB tiles, protocol 6), a liar's tiles never reach
    `out`: only verified, committed tiles are pushed, each cell once (TileStream refuses a second),
    and the product is exact."""
    from concurrent.futures import ThreadPoolExecutor

    from test_streamed_tiles import count_tiles
    token = cluster.add_researcher()
    cluster.start_node()
    adversary, ids = cluster.start_adversary("past-bound", extra_args=["--slots", "2"])
    client = cluster.connect(token)
    A, B = random_matrices(1024, 64, 512, np.float32, seed=7)
    out = np.full((1024, 512), np.nan, np.float32)
    pushed = count_tiles(client, monkeypatch)
    with ThreadPoolExecutor(1) as pool:
        product = pool.submit(client.matmul, A, B, tile=[512, 512], out=out, timeout=JOB_TIMEOUT)
        cluster.wait_until(lambda: len(answered(adversary)) >= 1, EVENT_TIMEOUT,
                           "an answer from the past-bound adversary")
        cluster.start_volunteer(threads=1, slots=2)
        assert product.result(timeout=JOB_TIMEOUT) is out
    assert client.last_summary["delivery"] == "tiles"
    assert sorted(pushed) == [(0, 0), (512, 0)]
    assert_exact(A, B, out)
    wait_for_verdicts(cluster, adversary, ids)
    assert_every_answer_rejected(cluster, adversary, ids)


@pytest.mark.parametrize("strategy", ["row-scale", "lazy-zeros", "nan", "inf", "shape", "dtype"])
def test_wrong_tile_is_rejected(cluster, strategy):
    # row-scale on narrow tiles (16 columns) is caught by today's check too.
    adversary, ids, _, A, B, C, summary, job = run_matmul_against(
        cluster, strategy, (32, 24, 32), [16, 16])
    assert_exact(A, B, C)
    assert_every_answer_rejected(cluster, adversary, ids)
    assert summary["verdicts"]["accepted"] == 4 and summary["verdicts"]["rejected"] >= 1
    assert_one_accepted_result_per_task(cluster, job, 4)
    methods = {row[4] for row in matmul_results(cluster, ids)}
    assert methods, "no recorded method"


def test_replayed_result_is_rejected(cluster):
    adversary, ids, _, A, B, C, summary, job = run_matmul_against(
        cluster, "replay", (32, 24, 32), [16, 16], first_answers=2)
    assert_exact(A, B, C)
    replayed = {(int(m.group(1)), int(m.group(2))) for m in (
        re.search(r"answered task (\d+) attempt (\d+): replayed", line)
        for line in lines_with(adversary, ": replayed")) if m}
    assert replayed, adversary.tail()
    # A replay without a verdict is one the node never decided: it quarantined the liar first.
    outcome = {(t, a): v for t, a, v, _ in verdicts(adversary)}
    assert all(outcome.get(key, "rejected") == "rejected" for key in replayed), (replayed, outcome)
    assert any(key in outcome for key in replayed) or banned(adversary, ids[0]), adversary.tail()
    rows = {(t, a): v for t, a, _, v, _ in matmul_results(cluster, ids)}
    assert all(rows.get(key, "rejected") == "rejected" for key in replayed), rows
    assert any(key in rows for key in replayed), rows
    assert_one_accepted_result_per_task(cluster, job, 4)


def test_duplicate_result_counts_once(cluster):
    token = cluster.add_researcher()
    cluster.start_node()
    adversary, ids = cluster.start_adversary("duplicate", extra_args=["--slots", "1"])
    cluster.start_volunteer(threads=1, slots=2)
    client = cluster.connect(token)
    A, B = random_matrices(32, 24, 32, np.float32, seed=3)
    job = client.submit_matmul(A, B, tile=[16, 16])
    C = client.fetch(job, timeout=JOB_TIMEOUT)
    assert_exact(A, B, C)

    def answered_now():
        return {(int(m.group(1)), int(m.group(2))) for m in (
            re.search(r"answered task (\d+) attempt (\d+)", line)
            for line in lines_with(adversary, "sent twice")) if m}
    # The adversary logs an answer after sending it: its last line may come after the product.
    recorded = {(r[0], r[1]) for r in matmul_results(cluster, ids)}
    cluster.wait_until(lambda: recorded <= answered_now(), EVENT_TIMEOUT,
                       "the adversary's log of every result the node recorded")
    answered = answered_now()
    assert answered, "the duplicate adversary got no task\n" + cluster.logs()
    # The first copy is decided, the second is stale; one row per (task, attempt).
    cluster.wait_until(lambda: all(len([v for t, a, v, _ in verdicts(adversary) if (t, a) == key])
                                   >= 2 for key in answered), EVENT_TIMEOUT, "two verdicts each")
    for key in answered:  # the stale one may come first: a verdict waits for its commit
        got = [v for t, a, v, _ in verdicts(adversary) if (t, a) == key]
        assert sorted(got) == ["accepted", "stale"], (key, got)
    rows = matmul_results(cluster, ids)
    assert len(rows) == len({(r[0], r[1]) for r in rows}) == len(answered), rows
    assert_one_accepted_result_per_task(cluster, job, 4)
    assert_no_over_slots(adversary)


def test_results_for_tasks_never_leased_are_stale_and_free_no_slot(cluster):
    adversary, ids, _, A, B, C, summary, job = run_matmul_against(
        cluster, "never-leased", (32, 24, 32), [16, 16], slots=1, first_answers=2)
    assert_exact(A, B, C)
    bogus = {(int(m.group(1)), int(m.group(2))) for m in (
        re.search(r"never-leased result task (\d+) attempt (\d+)", line)
        for line in lines_with(adversary, "never-leased result")) if m}
    assert bogus
    leased = {(t, a) for t, a, _ in tasks_received(adversary)}
    outcome = {}
    for t, a, v, _ in verdicts(adversary):
        outcome.setdefault((t, a), v)
    assert all(outcome.get(key, "stale") in ("stale", "rejected") for key in bogus - leased), outcome
    # Nothing is recorded against a lease the adversary never held, and its slot stayed one.
    rows = matmul_results(cluster, ids)
    assert all((t, a) in leased for t, a, _, _, _ in rows), (rows, leased)
    assert_no_over_slots(adversary)
    assert_one_accepted_result_per_task(cluster, job, 4)


def test_foreign_result_does_not_touch_another_volunteers_lease(cluster):
    adversary, ids, honest, A, B, C, summary, job = run_matmul_against(
        cluster, "foreign", (48, 24, 32), [16, 16], identities=2, first_answers=2)
    holder, liar = ids
    assert_exact(A, B, C)
    attacked = {(int(m.group(1)), int(m.group(2))) for m in (
        re.search(r"foreign result task (\d+) attempt (\d+) \(the holder", line)
        for line in lines_with(adversary, "the holder's lease")) if m}
    assert attacked, adversary.tail()
    liar_verdicts = {(t, a): v for t, a, v, _ in verdicts(adversary, liar)}
    leased_to_liar = {(t, a) for t, a, _ in tasks_received(adversary, liar)}
    for key in attacked:
        assert liar_verdicts.get(key, "stale") in ("stale", "rejected"), (key, liar_verdicts)
    # The holder's leases stand: its honest answers to the attacked tasks are accepted.
    cluster.wait_until(lambda: all(key in {(t, a) for t, a, _, _ in verdicts(adversary, holder)}
                                   for key in attacked), EVENT_TIMEOUT, "the holder's verdicts")
    holder_verdicts = {(t, a): v for t, a, v, _ in verdicts(adversary, holder)}
    assert all(holder_verdicts[key] == "accepted" for key in attacked), holder_verdicts
    liar_rows = matmul_results(cluster, [liar])
    assert all((t, a) in leased_to_liar for t, a, _, _, _ in liar_rows), liar_rows
    assert not [r for r in matmul_results(cluster, [holder, honest]) if r[3] != "accepted"]
    assert_one_accepted_result_per_task(cluster, job, 6)


def test_result_after_its_verdict_is_stale(cluster):
    token = cluster.add_researcher()
    cluster.start_node()
    adversary, ids = cluster.start_adversary("after-verdict")
    client = cluster.connect(token)
    A, B = random_matrices(32, 24, 32, np.float64, seed=4)
    job = client.submit_matmul(A, B, tile=[16, 16])
    C = client.fetch(job, timeout=JOB_TIMEOUT)  # the adversary alone computes it, honestly
    assert_exact(A, B, C)

    def resends():
        return {(int(m.group(1)), int(m.group(2))) for m in (
            re.search(r"after-verdict result task (\d+) attempt (\d+)", line)
            for line in lines_with(adversary, "after-verdict result")) if m}

    # The adversary resends after each verdict reaches it, which may be after the researcher
    # already has the product.
    resent = cluster.wait_until(lambda: resends() if len(resends()) >= 4 else None,
                                EVENT_TIMEOUT, "4 resends after their verdicts")
    assert len(resent) == 4
    cluster.wait_until(lambda: all(len([1 for t, a, _, _ in verdicts(adversary) if (t, a) == key])
                                   >= 2 for key in resent), EVENT_TIMEOUT, "the resends' verdicts")
    for key in resent:
        got = [v for t, a, v, _ in verdicts(adversary) if (t, a) == key]
        assert got == ["accepted", "stale"], (key, got)
    rows = matmul_results(cluster, ids)
    assert sorted((t, a) for t, a, _, _, _ in rows) == sorted(resent)
    assert all(v == "accepted" for _, _, _, v, _ in rows)
    assert_one_accepted_result_per_task(cluster, job, 4)


def start_hoarder_job(cluster):
    """A hoarder (4 slots) alone with an 8-tile job and 2 s leases until its first 4 leases expired
    and one more lease period passed; then an honest volunteer joins and the job must finish.
    Returns the hoarder, its id and (A, B, C or None when the job stalled)."""
    token = cluster.add_researcher()
    cluster.start_node(lease_seconds=HOARDER_LEASE_SECONDS)
    hoarder, (hoarder_id,) = cluster.start_adversary("hoarder", extra_args=["--slots", "4"])
    client = cluster.connect(token)
    A, B = random_matrices(32, 16, 64, np.float32, seed=6)
    job = client.submit_matmul(A, B, tile=[16, 16])

    def first_leases_expired():
        deadlines = [row[0] for row in cluster.query(
            "SELECT deadline FROM task_leases WHERE volunteer_id = ? ORDER BY leased_at LIMIT 4",
            (hoarder_id,))]
        return len(deadlines) == 4 and max(deadlines) < time.time() and max(deadlines)
    first_expiry = cluster.wait_until(first_leases_expired, EVENT_TIMEOUT,
                                      "4 expired leases of the hoarder")
    # Still alone for one more lease period after that (the node's deadlines, this machine's
    # clock): whatever the node leases it after an expiry has been leased and expired too.
    cluster.wait_until(lambda: time.time() > first_expiry + 2 * HOARDER_LEASE_SECONDS + 0.5,
                       EVENT_TIMEOUT, "a second round of the hoarder's leases")
    cluster.start_volunteer(threads=1, slots=2)
    # Generous (30 lease periods) but shorter than JOB_TIMEOUT: without the lease rules the hoarder
    # takes an expired lease back every time and the job stalls.
    try:
        C = client.fetch(job, timeout=HOARDER_JOB_TIMEOUT)
    except goblin.GoblinTimeoutError:
        C = None
    assert not matmul_results(cluster, [hoarder_id])
    return hoarder, hoarder_id, (A, B, C)


def assert_hoarder_job_finished(job):
    A, B, C = job
    assert C is not None, "the job stalled behind the hoarder"
    assert_exact(A, B, C)


def test_hoarder_never_gets_the_same_task_back(cluster):
    hoarder, _, job = start_hoarder_job(cluster)
    got = [t for t, _, _ in tasks_received(hoarder)]
    assert len(got) == len(set(got)), "tasks leased to the hoarder again: %s" % got
    assert_hoarder_job_finished(job)


def test_hoarder_expiries_shrink_its_slots(cluster):
    _, hoarder_id, job = start_hoarder_job(cluster)
    leases = cluster.query("SELECT leased_at, deadline FROM task_leases WHERE volunteer_id = ? "
                           "ORDER BY leased_at", (hoarder_id,))
    first_expiry = min(deadline for _, deadline in leases)
    later = [(start, end) for start, end in leases if start >= first_expiry]
    # None at all after the first expiry is the strongest shrink.
    most = max([sum(1 for s, e in later if s <= start < e) for start, _ in later] or [0])
    assert most < 4, "after an expiry the hoarder still held %d leases at once" % most
    assert_hoarder_job_finished(job)


# -- graph jobs -----------------------------------------------------------------------------------

def small_graph(batch, features=6, hidden=5, seed=3):
    """relu(x·W + b) and the row sums of its squares (all constants inline: ≤ 256 elements)."""
    rng = np.random.default_rng(seed)
    g = gg.Graph()
    x = g.input("f32", [batch, features])
    w = g.constant(rng.standard_normal((features, hidden)).astype(np.float32))
    b = g.constant(rng.standard_normal((hidden,)).astype(np.float32))
    h = g.relu(g.add(g.matmul(x, w), b))
    g.output(h, g.sum(g.mul(h, h), dims=[1], keepdim=True))
    return g, [np.random.default_rng(seed + 1).standard_normal((batch, features)).astype(np.float32)]


def assert_honest_outputs(g, inputs, outputs):
    expected = reference.run(g, inputs)
    assert len(outputs) == len(expected)
    for got, want in zip(outputs, expected):
        assert got.dtype == want.dtype and got.shape == want.shape
        # Honest float32 work differs from the reference by rounding: across six chained 256-wide
        # matmuls up to 1.1e-6 of the largest output (40 seeds), so a tenth of that is allowed
        # beside the relative bound; every lie is far past it.
        scale = float(np.abs(want).max()) if want.size and want.dtype.kind == "f" else 0.0
        wrong = ~np.isclose(got, want, rtol=1e-5, atol=max(1e-6, 1e-5 * scale))
        assert not wrong.any(), "%d wrong elements reached the researcher, rows %s" % (
            int(wrong.sum()), sorted(set(np.nonzero(wrong)[0].tolist()))[:20])


def lied_tasks(process):
    return {(int(m.group(1)), int(m.group(2)), m.group(3)) for m in (
        re.search(r"answered graph task (\d+) attempt (\d+): lie identity (v-\S+)", line)
        for line in lines_with(process, ": lie identity")) if m}


def start_honest(cluster, count):
    return [honest_id(cluster.start_volunteer(threads=1, slots=2)) for _ in range(count)]


def wait_for_connected(cluster, count):
    cluster.wait_until(lambda: sum("connected from" in line for line in list(cluster.node.lines))
                       >= count, EVENT_TIMEOUT, "%d connected volunteers" % count)


def run_graph_against(cluster, strategy, chunks, identities=2, extra_args=(), honest=2,
                      honest_after_lies=0):
    """Default node settings, the adversary's identities and `honest` honest volunteers (started
    once the adversary told `honest_after_lies` lies, when that is > 0); returns (adversary, ids,
    honest ids, outputs, graph, inputs)."""
    token = cluster.add_researcher()
    cluster.start_node()
    # Honest volunteers register first, so a per-address registration limit filled by a sybil
    # cannot refuse them.
    honest_ids = [] if honest_after_lies else start_honest(cluster, honest)
    adversary, ids = cluster.start_adversary(strategy, identities=identities,
                                             extra_args=["--slots", "2"] + list(extra_args))
    wait_for_connected(cluster, identities + len(honest_ids))
    client = cluster.connect(token)
    g, inputs = small_graph(chunks)
    job = client.submit_graph(g, inputs, batch=0, chunks=chunks)
    if honest_after_lies:
        cluster.wait_until(lambda: len(lied_tasks(adversary)) >= honest_after_lies, EVENT_TIMEOUT,
                           "%d lies from the %s adversary" % (honest_after_lies, strategy))
        honest_ids = start_honest(cluster, honest)
        wait_for_connected(cluster, identities + honest)
    outputs = client.fetch_outputs(job, timeout=JOB_TIMEOUT)
    return adversary, ids, honest_ids, outputs, g, inputs


def assert_graph_lies_caught(cluster, adversary, ids, honest_ids):
    """Every lie is rejected or stale, or its identity was quarantined (closed 4003: its undecided
    replicas are dropped without a verdict, a lie accepted before is rechecked); no lie stands in
    graph_results; no honest replica was outvoted."""
    lies = lied_tasks(adversary)
    assert lies, "the adversary told no lie\n" + adversary.tail()
    cluster.wait_until(lambda: all(banned(adversary, i) or (t, a, i) in {
        (vt, va, vi) for vt, va, _, vi in verdicts(adversary)} for t, a, i in lies),
        EVENT_TIMEOUT, "a verdict for every lie (or its liar quarantined)")
    outcome = {(t, a, i): v for t, a, v, i in verdicts(adversary)}
    kept = sorted(key for key in lies if outcome.get(key, "rejected") not in ("rejected", "stale")
                  and not banned(adversary, key[2]))
    assert not kept, "lies the node accepted: %s" % kept[:20]
    rows = {(t, a, i): v for t, a, i, v, _ in graph_results(cluster, ids)}
    standing = sorted(key for key in lies if rows.get(key) == "accepted")
    assert not standing, "lies accepted in graph_results: %s" % standing[:20]
    assert any(v == "rejected" for v in rows.values()) or any(banned(adversary, i) for i in ids)
    outvoted = [r for r in graph_results(cluster, honest_ids) if r[3] != "accepted"]
    assert not outvoted, "honest replicas rejected: %s" % outvoted


def test_honest_adversary_control(cluster):
    """The adversary's own codec, handshake and evaluator, answering honestly, are accepted: so a
    lie is caught for its content, not for a malformed frame."""
    token = cluster.add_researcher()
    cluster.start_node(extra_args=["--audit-floor", "1"])
    adversary, ids = cluster.start_adversary("honest", identities=2)
    client = cluster.connect(token)
    g, inputs = small_graph(6)
    outputs = client.run(g, inputs, batch=0, chunks=3, timeout=JOB_TIMEOUT)
    assert_honest_outputs(g, inputs, outputs)
    assert client.last_summary["node_caught"] == 0
    assert client.last_summary["max_disagreement_ratio"] == 0  # bit for bit with the reference
    A, B = random_matrices(20, 12, 18, np.float32, seed=9)
    C = client.matmul(A, B, tile=[8, 8], timeout=JOB_TIMEOUT)
    assert_exact(A, B, C)
    assert verdicts(adversary) and all(v == "accepted" for _, _, v, _ in verdicts(adversary))


def test_colluding_identities_are_caught(cluster):
    adversary, ids, honest_ids, outputs, g, inputs = run_graph_against(cluster, "collude", 12)
    assert_honest_outputs(g, inputs, outputs)
    assert_graph_lies_caught(cluster, adversary, ids, honest_ids)


def test_sleeper_is_caught_after_it_wakes(cluster):
    adversary, ids, honest_ids, outputs, g, inputs = run_graph_against(
        cluster, "sleeper", 120, extra_args=["--honest-tasks", "50"])  # it sees ~80 of them
    assert_honest_outputs(g, inputs, outputs)
    assert_graph_lies_caught(cluster, adversary, ids, honest_ids)


def test_audit_dodger_is_caught(cluster):
    # The honest volunteer joins once the dodgers lied about 8 tasks (both replicas of each, at
    # attempts 1 and 2): with it there from the start, the node pairs each dodger with it (another
    # backend) and the disagreement's third opinion (attempt 3) is answered honestly.
    adversary, ids, honest_ids, outputs, g, inputs = run_graph_against(
        cluster, "audit-dodger", 16, honest_after_lies=16)
    assert_honest_outputs(g, inputs, outputs)
    assert_graph_lies_caught(cluster, adversary, ids, honest_ids)


SYBIL = re.compile(r"^sybil registered (\d+) of (\d+) \(refused: (.*)\)$")


def test_sybil_registrations_are_limited_and_its_identities_caught(cluster):
    adversary, ids, honest_ids, outputs, g, inputs = run_graph_against(
        cluster, "sybil", 8, extra_args=["--max-identities", "100"])
    got = SYBIL.match(lines_with(adversary, "sybil registered")[0])
    print("sybil: %s" % got.group(0))
    assert int(got.group(1)) < int(got.group(2)), got.group(0)
    assert_honest_outputs(g, inputs, outputs)
    assert_graph_lies_caught(cluster, adversary, ids, honest_ids)


def heavy_graph(batch, features=64, hidden=64, seed=7):
    """relu(x·W1 + b)·W2 with inner sizes 64: under verification="freivalds" both matmuls are
    gemm_nodes (checked by Freivalds), the add and relu are recomputed bit for bit."""
    rng = np.random.default_rng(seed)
    g = gg.Graph()
    x = g.input("f32", [batch, features])
    w1 = g.constant(rng.standard_normal((features, hidden)).astype(np.float32))
    b = g.constant(rng.standard_normal((hidden,)).astype(np.float32))
    w2 = g.constant(rng.standard_normal((hidden, 8)).astype(np.float32))
    g.output(g.matmul(g.relu(g.add(g.matmul(x, w1), b)), w2))
    return g, [rng.standard_normal((batch, features)).astype(np.float32)]


def start_gemm_liars(cluster, strategy):
    """The node, 2 honest volunteers and a pair of `strategy` shifting gemm values by 3× their
    own bound; returns (client, adversary, pair ids, honest ids)."""
    token = cluster.add_researcher()
    cluster.start_node()
    honest_ids = start_honest(cluster, 2)
    adversary, ids = cluster.start_adversary(strategy, identities=2,
                                             extra_args=["--slots", "2", "--factor", "3"])
    wait_for_connected(cluster, 4)
    return cluster.connect(token), adversary, ids, honest_ids


def test_gemm_lie_past_its_bound_is_caught_under_freivalds(cluster):
    """A colluding pair that shifts one element of a gemm node (a matmul the node checks by
    Freivalds instead of comparing bits) by 3× its own bound, and computes everything after it
    from the shifted value, is rejected on every lie: agreement buys nothing when the node checks
    every task; honest volunteers (real ones, on OpenBLAS) are never rejected."""
    client, adversary, ids, honest_ids = start_gemm_liars(cluster, "gemm-past-bound")
    g, inputs = heavy_graph(48)
    [output] = client.run(g, inputs, batch=0, chunks=12, verification="freivalds",
                          timeout=JOB_TIMEOUT)
    # Within rounding of the canonical reference (a BLAS summed the matmuls).
    expected = reference.run(g, inputs)[0].astype(np.float64)
    np.testing.assert_allclose(output, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())
    assert_graph_lies_caught(cluster, adversary, ids, honest_ids)
    rows = graph_results(cluster)
    accepted = [r for r in rows if r[3] == "accepted"]
    assert len({r[0] for r in accepted}) == 12 and len(accepted) == 12  # one opinion per task
    assert all(r[4] == "node-audit" for r in accepted)
    assert all(r[2] in honest_ids for r in accepted), "a lie was accepted: %s" % accepted
    # Caught by the matmul check itself, not by a frame or a cheap node.
    reasons = [r[0] for r in cluster.query("SELECT reason FROM graph_results WHERE verdict = "
                                           "'rejected' AND method = 'node-audit'")]
    assert reasons and all("(matmul)" in reason for reason in reasons), reasons


# -- the adversary itself, without a node ---------------------------------------------------------

def weighted_graph(batch, weights_seed, features=16, hidden=32):
    """relu(x·W): W has 512 elements, so the client sends it as an input every chunk gets whole
    (named by digest to volunteers that keep inputs)."""
    g = gg.Graph()
    x = g.input("f32", [batch, features])
    w = g.constant(np.random.default_rng(weights_seed).standard_normal((features, hidden))
                   .astype(np.float32))
    g.output(g.relu(g.matmul(x, w)))
    return g, [np.random.default_rng(weights_seed + 1).standard_normal((batch, features))
               .astype(np.float32)]


def test_stale_kept_inputs_are_caught(cluster):
    """A volunteer that keeps inputs by digest and computes the second job on the first job's
    weights (a lie no frame check can see) is rejected; the researcher gets the new weights'
    product."""
    token = cluster.add_researcher()
    cluster.start_node()
    honest_ids = start_honest(cluster, 2)
    adversary, ids = cluster.start_adversary("stale-inputs", extra_args=["--slots", "2"])
    wait_for_connected(cluster, 3)
    client = cluster.connect(token)
    for seed in (5, 50):  # the second job brings other weights
        g, inputs = weighted_graph(24, seed)
        outputs = client.run(g, inputs, batch={"inputs": [0], "outputs": [0]}, chunks=12,
                             timeout=JOB_TIMEOUT)
        assert_honest_outputs(g, inputs, outputs)
    assert lines_with(adversary, "forgot "), "the node never told it to drop the first weights"
    assert_graph_lies_caught(cluster, adversary, ids, honest_ids)


def test_adversary_frame_codec_passes_the_protocol_vectors():
    from adversary import frame
    manifest = json.loads((VECTORS / "manifest.json").read_text())
    for vector in manifest["vectors"]:
        data = (VECTORS / vector["file"]).read_bytes()
        if vector["expect"] == "ok":
            array = frame.decode(data)
            assert frame.dtype_name(array.dtype) == vector["dtype"], vector["file"]
            assert list(array.shape) == vector["shape"], vector["file"]
            assert array.ravel().tolist() == vector["values"], vector["file"]
            assert frame.encode(array) == data, vector["file"]
        else:
            with pytest.raises(frame.FrameError) as caught:
                frame.decode(data)
            assert caught.value.code == vector["code"], vector["file"]


def test_adversary_evaluator_agrees_with_the_reference():
    from adversary import evaluator
    g, inputs = small_graph(9)
    mine = evaluator.run(g.to_dict(), inputs)
    theirs = reference.run(g, inputs)
    for got, want in zip(mine, theirs):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_adversary_never_imports_goblin():
    env = dict(os.environ, PYTHONPATH=str(TESTS))
    probe = ("import sys, adversary.__main__\n"
             "assert not [m for m in sys.modules if m.split('.')[0] == 'goblin'], 'imported'\n"
             "try:\n    import goblin\nexcept ImportError:\n    print('blocked')\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          timeout=60, env=env, cwd=str(TESTS.parent))
    assert done.returncode == 0 and done.stdout.strip() == "blocked", done.stdout + done.stderr
