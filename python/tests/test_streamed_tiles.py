"""Streamed tiles (docs/protocol.md, "Streamed tiles", protocol 6) on a real lab node with two real
volunteers: client.matmul asks for C's tiles as they are accepted; with tiles of at least 1 MiB the
node grants it, every tile arrives once and C equals the float64 product within float32's error
(also written straight into `out`); small tiles and submit_matmul's job handles get C whole; a job
given up on ignores its late tiles and a fetch gets C whole; a node killed between two pushed
tiles loses nothing: matmul raises ConnectionLostError, the tiles already in `out` are the ones the
restarted node hands back whole, bit for bit, and nothing else was written into `out`; a "stream"
that is not a boolean is refused with a clear error. TileStream refuses a tile off the
grid, of the wrong shape or dtype, twice, and a product with a tile missing."""

import json
import threading

import numpy as np
import pytest
from limited_node import assert_float32_product
from test_integration import (JOB_TIMEOUT, assert_node_still_serves,
                              assert_one_accepted_result_per_task, open_raw)

from goblin import matmul as goblin_matmul
from goblin.errors import ConnectionLostError, ProtocolError
from goblin.protocol.session import TileReceived
from goblin.streamed_tiles import TileStream
from goblin.wire import encode_tensor_frame

pytestmark = pytest.mark.integration  # starts a lab node and volunteers

M, K, N = 1024, 256, 1024
TILE = [512, 512]  # 1 MiB of f32: the smallest tile the node streams


def inputs(seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((M, K)).astype(np.float32),
            rng.standard_normal((K, N)).astype(np.float32))


@pytest.fixture(scope="module")
def client(shared_cluster):
    return shared_cluster.connect(shared_cluster.token, timeout=120)


def count_tiles(client, monkeypatch):
    """How many result_tile messages the client files, as they are filed (the session's
    TileReceived events)."""
    seen = []
    original = client.session.events_received

    def events_received():
        events = original()
        seen.extend((e.row0, e.col0) for e in events if isinstance(e, TileReceived))
        return events

    monkeypatch.setattr(client.session, "events_received", events_received)
    return seen


def test_tiles_of_a_mib_stream_while_the_job_runs(client, monkeypatch):
    A, B = inputs(seed=1)
    seen = count_tiles(client, monkeypatch)
    C = client.matmul(A, B, tile=TILE, timeout=120)
    assert client.last_summary["delivery"] == "tiles"
    assert sorted(seen) == [(0, 0), (0, 512), (512, 0), (512, 512)]
    assert not C.flags.writeable  # like a product received whole
    assert_float32_product(C, A, B)


def test_streamed_tiles_go_straight_into_out(client):
    A, B = inputs(seed=2)
    out = np.full((M, N), np.nan, np.float32)
    assert client.matmul(A, B, tile=TILE, out=out, timeout=120) is out
    assert client.last_summary["delivery"] == "tiles"
    assert_float32_product(out, A, B)


def test_small_tiles_and_job_handles_get_the_product_whole(client, monkeypatch):
    A, B = inputs(seed=3)
    seen = count_tiles(client, monkeypatch)
    C = client.matmul(A, B, tile=[128, 128], timeout=120)  # 64 KiB tiles: not streamed
    assert "delivery" not in client.last_summary and seen == []
    assert_float32_product(C, A, B)
    job = client.submit_matmul(A, B, tile=TILE)  # nobody waits on a handle: not streamed
    assert_float32_product(job.result(timeout=120), A, B)
    assert seen == []


def test_a_job_given_up_on_is_fetched_whole(client):
    A, B = inputs(seed=4)
    job = goblin_matmul.submit(client.connection, A, B, TILE, stream_into=None)
    assert client.session.job(job).stream is not None
    client.session.job(job).stream = None  # what matmul does when its wait times out
    C = client.fetch(job, timeout=120)
    assert "delivery" not in client.last_summary
    assert_float32_product(C, A, B)


def test_a_node_killed_between_two_pushed_tiles_loses_nothing(cluster, monkeypatch):
    # A hoarder (2 slots) holds two leases for the whole test, so the job cannot finish: the
    # node is killed once the other 14 tiles were accepted and pushed, never racing the last one.
    token = cluster.add_researcher()
    cluster.start_node(lease_seconds=3600)
    cluster.start_adversary("hoarder", extra_args=["--slots", "2"])
    honest = cluster.start_volunteer(threads=1, slots=2)
    rng = np.random.default_rng(6)
    A = rng.standard_normal((2048, 128)).astype(np.float32)
    B = rng.standard_normal((128, 2048)).astype(np.float32)
    total = (2048 // 512) ** 2
    out = np.full((2048, 2048), np.nan, np.float32)
    client = cluster.connect(token, timeout=JOB_TIMEOUT)
    seen = count_tiles(client, monkeypatch)
    raised = []

    def researcher():
        try:
            client.matmul(A, B, tile=TILE, out=out, timeout=JOB_TIMEOUT)
        except Exception as exc:  # noqa: BLE001 (what it raised is asserted below)
            raised.append(exc)

    waiting = threading.Thread(target=researcher)
    waiting.start()
    cluster.wait_until(lambda: len(seen) == total - 2, JOB_TIMEOUT, "all tiles but the hoarded 2")
    job = client.last_job
    before = cluster.accepted_tasks(job)
    assert len(before) == total - 2, "the hoarder answered or its tiles went elsewhere"
    cluster.node.kill9()
    waiting.join(JOB_TIMEOUT)
    assert not waiting.is_alive(), "matmul kept waiting on a dead node"
    assert len(raised) == 1 and isinstance(raised[0], ConnectionLostError), raised

    # The restarted node leases the hoarded tiles again (leases live in memory); the honest
    # volunteer reconnects by itself, the hoarder is gone with its connection.
    cluster.start_node(port=cluster.port)
    C = cluster.connect(token).fetch(job, timeout=JOB_TIMEOUT)
    assert_float32_product(C, A, B)
    pushed = np.zeros((4, 4), bool)
    for row0, col0 in seen:
        pushed[row0 // 512, col0 // 512] = True
        cell = np.s_[row0:row0 + 512, col0:col0 + 512]
        np.testing.assert_array_equal(out[cell], C[cell])  # the very results the node accepted
    assert pushed.sum() == total - 2, "a tile was pushed twice"
    untouched = np.kron(~pushed, np.ones((512, 512), bool))
    assert np.isnan(out[untouched]).all(), "out holds something that was never pushed"
    assert honest.alive()
    changed = {task: row for task, row in before.items()
               if cluster.accepted_tasks(job).get(task) != row}
    assert not changed, "tiles accepted before the kill were redone: %s" % changed
    assert_one_accepted_result_per_task(cluster, job, total)


def test_a_stream_wish_that_is_not_a_boolean_is_refused(shared_cluster):
    ws = open_raw(shared_cluster)
    try:
        ws.send(json.dumps({"type": "hello", "id": 1, "protocol": 6, "catalog": 1,
                            "token": shared_cluster.token}))
        assert json.loads(ws.recv(timeout=10))["type"] == "welcome"
        A, B = inputs(seed=5)
        ws.send(json.dumps({"type": "submit_matmul", "id": 2, "stream": "yes", "tensors": 2}))
        ws.send(encode_tensor_frame(A))
        ws.send(encode_tensor_frame(B))
        reply = json.loads(ws.recv(timeout=30))
        assert reply["type"] == "error" and reply["id"] == 2, reply
        assert reply["code"] == "invalid_message", reply
        assert "'stream' must be true or false" in reply["message"], reply
    finally:
        ws.close()
    assert_node_still_serves(shared_cluster)


ACCEPTED = {"shape": [5, 7], "tile": [2, 4], "dtype": "f32", "delivery": "tiles"}


def tile_message(row0, col0):
    return {"type": "result_tile", "job": "j-1", "row0": row0, "col0": col0, "tensors": 1}


def fill(stream, skip=None):
    C = np.arange(35, dtype=np.float32).reshape(5, 7)
    for row0 in range(0, 5, 2):
        for col0 in range(0, 7, 4):
            if (row0, col0) != skip:
                stream.add(tile_message(row0, col0), [C[row0:row0 + 2, col0:col0 + 4].copy()])
    return C


def test_a_tile_stream_assembles_the_grid_and_refuses_what_breaks_it():
    stream = TileStream(ACCEPTED)
    C = fill(stream)
    np.testing.assert_array_equal(stream.product(), C)
    with pytest.raises(ProtocolError, match="came twice"):
        stream.add(tile_message(0, 0), [C[0:2, 0:4].copy()])
    with pytest.raises(ProtocolError, match="not a cell"):
        TileStream(ACCEPTED).add(tile_message(1, 0), [C[1:3, 0:4].copy()])
    with pytest.raises(ProtocolError, match="not a cell"):
        TileStream(ACCEPTED).add(tile_message(6, 0), [C[0:2, 0:4].copy()])
    with pytest.raises(ProtocolError, match=r"is \(2, 4\) float64"):
        TileStream(ACCEPTED).add(tile_message(0, 0), [C[0:2, 0:4].astype(np.float64)])
    with pytest.raises(ProtocolError, match=r"is \(2, 3\) float32, not \(2, 4\)"):
        TileStream(ACCEPTED).add(tile_message(0, 0), [C[0:2, 0:3].copy()])
    with pytest.raises(ProtocolError, match="integer 'row0'"):
        TileStream(ACCEPTED).add(dict(tile_message(0, 0), row0="0"), [C[0:2, 0:4].copy()])
    partial = TileStream(ACCEPTED)
    fill(partial, skip=(4, 4))
    with pytest.raises(ProtocolError, match="5 of 6 came"):
        partial.product()
    with pytest.raises(ProtocolError, match="needs 'shape', 'tile' and 'dtype'"):
        TileStream(dict(ACCEPTED, tile=[0, 4]))
