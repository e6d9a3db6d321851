"""The client's message flow against a small in-process stand-in for the lab node.

The stand-in speaks the researcher side of docs/protocol.md just well enough to drive every branch
of the client (progress, job_done pushed before fetch, errors, job_failed, close codes) without the
C++ build. test_integration.py checks the same client against the real node.
"""

import json
import threading

import numpy as np
import pytest
from websockets.sync.server import serve

import goblin
from goblin.protocol import messages as protocol_messages
from goblin.errors import (AuthenticationError, ConnectionLostError, ProtocolError, RemoteError,
                           ShapeError, VersionMismatchError)
from goblin.wire import decode_tensor_frame, encode_tensor_frame

TOKEN = "tok-good"


class FakeNode:
    """Researcher endpoint: computes C with numpy; `mode` picks a failure to act out."""

    def __init__(self, mode="normal"):
        self.mode = mode
        self.jobs = {}
        self.released = []
        self.received = []
        self._server = serve(self._handle, "127.0.0.1", 0, compression=None, max_size=1 << 26)
        self.port = self._server.socket.getsockname()[1]
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self):
        return "ws://127.0.0.1:%d" % self.port

    def stop(self):
        self._server.shutdown()
        self._thread.join(10)

    def _handle(self, ws):
        if ws.request.path != "/v1/researcher":
            ws.close(1002, "invalid_message: wrong path")
            return
        hello = json.loads(ws.recv(timeout=10))
        self.received.append(hello)
        if hello.get("protocol") != 8:
            ws.close(4002, "version_mismatch: protocol 8 only")
            return
        if hello.get("token") != TOKEN:
            ws.close(4001, "unauthenticated: wrong token")
            return
        ws.send(json.dumps({"type": "welcome", "id": hello["id"], "protocol": 8, "catalog": 3,
                            "limits": {"max_control_bytes": 65536,
                                       "max_tensor_bytes": 1 << 30, "max_tiles": 1000000}}))
        while True:
            try:
                message = json.loads(ws.recv(timeout=30))
            except Exception:
                return
            self.received.append(message)
            tensors = [decode_tensor_frame(ws.recv(timeout=10))
                       for _ in range(message.get("tensors", 0))]
            getattr(self, "_on_" + message["type"])(ws, message, tensors)

    def _on_check_quota(self, ws, message, tensors):
        if self.mode == "over-quota":
            ws.send(json.dumps({"type": "error", "id": message["id"], "code": "limit_exceeded",
                                "message": "the job uploads 448 bytes, over your quota "
                                           "max_bytes of 100 bytes"}))
            return
        ws.send(json.dumps({"type": "quota", "id": message["id"], "max_bytes": 1 << 36,
                            "max_flops": 1e16, "max_running_jobs": 16, "running_jobs": 0}))

    def _on_submit_matmul(self, ws, message, tensors):
        A, B = tensors
        if self.mode == "error":
            ws.send(json.dumps({"type": "error", "id": message["id"], "code": "shape_mismatch",
                                "message": "A is %s, B is %s" % (A.shape, B.shape)}))
            return
        if self.mode == "drop":
            ws.close(1011, "internal: the node fell over")
            return
        job = "j-%d" % (len(self.jobs) + 1)
        self.jobs[job] = A.astype(np.float64) @ B.astype(np.float64)
        ws.send(json.dumps({"type": "job_accepted", "id": message["id"], "job": job, "tiles": 4,
                            "tile": message.get("tile", [2, 2]), "shape": [A.shape[0], B.shape[1]],
                            "dtype": "f32" if A.dtype == np.float32 else "f64"}))
        if self.mode == "fail":
            ws.send(json.dumps({"type": "job_failed", "job": job, "code": "internal",
                                "message": "disk full"}))
            return
        for done in range(1, 5):
            ws.send(json.dumps({"type": "progress", "job": job, "done": done, "total": 4}))
        self._send_done(ws, job, A.dtype)

    def _send_done(self, ws, job, dtype):
        summary = {"shape": list(self.jobs[job].shape), "tiles": 4,
                   "verdicts": {"accepted": 4, "rejected": 0}, "volunteers": 1}
        ws.send(json.dumps({"type": "job_done", "job": job, "tensors": 1, "summary": summary}))
        ws.send(encode_tensor_frame(self.jobs[job].astype(dtype)))

    def _on_fetch(self, ws, message, tensors):
        job = message["job"]
        if job not in self.jobs or job in self.released:
            ws.send(json.dumps({"type": "error", "id": message["id"], "code": "not_found",
                                "message": "no job " + job}))
            return
        ws.send(json.dumps({"type": "job_status", "id": message["id"], "job": job,
                            "state": "done", "done": 4, "total": 4}))
        self._send_done(ws, job, np.float64)

    def _on_audit(self, ws, message, tensors):
        job = message["job"]
        if self.mode == "bad-audit":
            ws.send(json.dumps({"type": "audit_report", "id": message["id"], "job": job,
                                "state": "corrected", "audits": [{"volunteer": "v-1"}]}))
            return
        if job not in self.jobs:
            ws.send(json.dumps({"type": "error", "id": message["id"], "code": "not_found",
                                "message": "no job " + job}))
            return
        audit = {"volunteer": "v-1", "reason": "caught", "state": "corrected", "tasks": 2,
                 "corrected": 1, "at": 1.5e9}
        # A push as an audit ends (id 0), then the reply with the corrected outputs.
        ws.send(json.dumps({"type": "audit_report", "id": 0, "job": job, "state": "corrected",
                            "audits": [audit]}))
        ws.send(json.dumps({"type": "audit_report", "id": message["id"], "job": job,
                            "state": "corrected", "audits": [audit], "tensors": 1}))
        ws.send(encode_tensor_frame(self.jobs[job]))

    def _on_release(self, ws, message, tensors):
        self.released.append(message["job"])
        ws.send(json.dumps({"type": "released", "id": message["id"], "job": message["job"]}))


@pytest.fixture
def node():
    fake = FakeNode()
    yield fake
    fake.stop()


def matrices(m=5, k=7, n=3, dtype=np.float32):
    rng = np.random.default_rng(3)
    return rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)


def test_matmul_round_trip_with_progress(node, capsys):
    A, B = matrices()
    with goblin.connect(node.url, token=TOKEN + "\n", timeout=10) as client:
        C = client.matmul(A, B, progress=True, tile=[2, 2], timeout=10)
        assert C.dtype == np.float32 and C.shape == (5, 3)
        np.testing.assert_allclose(C, A.astype(np.float64) @ B, rtol=1e-6)
        assert client.last_summary["verdicts"]["accepted"] == 4
        assert node.released == [client.last_job]
    err = capsys.readouterr().err  # tqdm's bar when installed, else the plain line
    assert ("4/4 [" in err and "tile/s" in err) or "4/4 tiles" in err, err
    submit = [m for m in node.received if m["type"] == "submit_matmul"][0]
    assert submit["tensors"] == 2 and submit["tile"] == [2, 2]
    hello = node.received[0]
    assert hello == {"type": "hello", "id": 1, "protocol": 8, "catalog": 3, "token": TOKEN}


def test_submit_then_fetch_uses_the_pushed_result(node):
    A, B = matrices(dtype=np.float64)
    with goblin.connect(node.url, token=TOKEN, timeout=10) as client:
        job = client.submit_matmul(A, B)
        C = client.fetch(job, timeout=10)
        np.testing.assert_allclose(C, A @ B)
        # job_done may come twice (pushed, then fetched): nothing of it may linger.
        assert not any(state.done or state.progress for state in client.session.jobs.values())
        np.testing.assert_allclose(client.matmul(A, B, timeout=10), A @ B)
    assert node.released == ["j-1", "j-2"]


def test_fetch_on_a_new_connection(node):
    A, B = matrices(dtype=np.float64)
    with goblin.connect(node.url, token=TOKEN, timeout=10) as client:
        job = client.submit_matmul(A, B)
    with goblin.connect(node.url, token=TOKEN, timeout=10) as client:
        np.testing.assert_allclose(client.fetch(job, timeout=10), A @ B)
        with pytest.raises(RemoteError) as caught:
            client.fetch(job, timeout=10)
        assert caught.value.code == "not_found"
        np.testing.assert_allclose(client.matmul(A, B, timeout=10), A @ B)  # still usable


@pytest.mark.parametrize("token", ["wrong", "", None])
def test_bad_tokens_raise_authentication_error(node, token):
    with pytest.raises(AuthenticationError):
        goblin.connect(node.url, token=token, timeout=10)


def test_version_mismatch(node, monkeypatch):
    monkeypatch.setattr(protocol_messages, "PROTOCOL_VERSION", 9)  # what hello() sends
    with pytest.raises(VersionMismatchError):
        goblin.connect(node.url, token=TOKEN, timeout=10)


def test_audit_returns_the_corrected_outputs_and_keeps_pushed_reports(node):
    A, B = matrices(dtype=np.float64)
    with goblin.connect(node.url, token=TOKEN, timeout=10) as client:
        C = client.matmul(A, B, timeout=10)
        report = client.audit(client.last_job)
        assert report.state == "corrected" and report.needs_attention
        assert report.audits[0]["corrected"] == 1
        np.testing.assert_allclose(report.outputs[0], C)
        assert [(n.job, n.state, n.outputs) for n in client.audit_notices] == [
            (client.last_job, "corrected", None)]
        with pytest.raises(RemoteError) as caught:
            client.audit("j-missing")
        assert caught.value.code == "not_found"


def test_malformed_audit_report_is_a_protocol_error(node):
    node.mode = "bad-audit"
    with goblin.connect(node.url, token=TOKEN, timeout=10) as client:
        with pytest.raises(ProtocolError):
            client.audit("j-1")


@pytest.mark.parametrize("url", ["http://127.0.0.1:1", "127.0.0.1:7000", "ws://", "ws://[::1"])
def test_bad_urls_raise_a_goblin_error(url):
    with pytest.raises(goblin.GoblinError):
        goblin.connect(url, token=TOKEN, timeout=2)


def test_node_and_token_from_the_environment(node, monkeypatch):
    monkeypatch.setenv("GOBLIN_NODE", node.url)
    monkeypatch.setenv("GOBLIN_TOKEN", TOKEN)
    A, B = matrices(dtype=np.float64)
    with goblin.connect(timeout=10) as client:
        np.testing.assert_allclose(client.matmul(A, B, timeout=10), A @ B)
    monkeypatch.delenv("GOBLIN_NODE")
    with pytest.raises(goblin.InputError, match="GOBLIN_NODE"):
        goblin.connect(timeout=2)


def test_error_reply_maps_to_shape_error():
    fake = FakeNode("error")
    try:
        with goblin.connect(fake.url, token=TOKEN, timeout=10) as client:
            with pytest.raises(ShapeError) as caught:
                client.matmul(*matrices(), timeout=10)
            assert caught.value.code == "shape_mismatch"
    finally:
        fake.stop()


def test_job_failed_raises_remote_error():
    fake = FakeNode("fail")
    try:
        with goblin.connect(fake.url, token=TOKEN, timeout=10) as client:
            with pytest.raises(RemoteError) as caught:
                client.matmul(*matrices(), timeout=10)
            assert caught.value.code == "internal" and "disk full" in str(caught.value)
    finally:
        fake.stop()


def test_dropped_connection_raises_connection_lost():
    fake = FakeNode("drop")
    try:
        client = goblin.connect(fake.url, token=TOKEN, timeout=10)
        with pytest.raises(ConnectionLostError) as caught:
            client.matmul(*matrices(), timeout=10)
        assert caught.value.close_code == 1011 and caught.value.code == "internal"
        with pytest.raises(ConnectionLostError):
            client.matmul(*matrices(), timeout=10)
        client.close()
    finally:
        fake.stop()


def test_nothing_listening_raises_connection_lost():
    import socket
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(ConnectionLostError):
        goblin.connect("ws://127.0.0.1:%d" % port, token=TOKEN, timeout=5)


def test_unannounced_binary_frame_is_a_protocol_error(node, monkeypatch):
    def rogue(self, ws, message, tensors):
        ws.send(b"\x00" * 16)
    monkeypatch.setattr(FakeNode, "_on_submit_matmul", rogue)
    with goblin.connect(node.url, token=TOKEN, timeout=10) as client:
        with pytest.raises(ProtocolError):
            client.matmul(*matrices(), timeout=10)


