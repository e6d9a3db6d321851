"""goblin.protocol.session without a socket: frames in, state and events out (the Sans-I/O
layer the client is built on)."""

import json

import numpy as np
import pytest

from goblin.errors import FrameError, ProtocolError, RemoteError, VersionMismatchError
from goblin.protocol import PROTOCOL_VERSION, ResearcherSession
from goblin.protocol.session import JobFinished, ProgressReported, ReplyReceived, WaitingChanged
from goblin.graph import CATALOG_VERSION
from goblin.wire import encode_tensor_frame


def welcomed(**limits):
    session = ResearcherSession(max_tensor_bytes=1 << 20)
    hello_id = session.send_hello(" token \n")
    sent = session.data_to_send()
    assert [json.loads(m) for m in sent] == [{"type": "hello", "id": hello_id,
                                              "protocol": PROTOCOL_VERSION,
                                              "catalog": CATALOG_VERSION, "token": "token"}]
    session.receive_frame(json.dumps({"type": "welcome", "id": hello_id,
                                      "protocol": PROTOCOL_VERSION, "catalog": CATALOG_VERSION,
                                      "limits": limits}))
    assert session.welcomed and session.data_to_send() == []
    return session


def test_the_welcome_sets_the_limits_and_other_versions_are_refused():
    assert welcomed(max_tiles=7).limits["max_tiles"] == 7
    session = ResearcherSession(max_tensor_bytes=1 << 20)
    hello_id = session.send_hello(None)
    with pytest.raises(VersionMismatchError):
        session.receive_frame(json.dumps({"type": "welcome", "id": hello_id, "protocol": 99,
                                          "catalog": CATALOG_VERSION}))


def test_replies_are_matched_to_requests_and_errors_raise_there():
    session = welcomed()
    first = session.send_request({"type": "list_jobs"})
    second = session.send_request({"type": "cancel", "job": "j-1"})
    assert [json.loads(m)["id"] for m in session.data_to_send()] == [first, second]
    session.receive_frame(json.dumps({"type": "error", "id": second, "code": "not_found",
                                      "message": "no such job"}))
    session.receive_frame(json.dumps({"type": "job_list", "id": first, "jobs": []}))
    assert session.events_received() == [ReplyReceived(second, "error"),
                                         ReplyReceived(first, "job_list")]
    assert session.answered(first) and session.take_reply(first)["jobs"] == []
    with pytest.raises(RemoteError) as caught:
        session.take_reply(second)
    assert caught.value.code == "not_found"


def test_one_state_per_job_progress_waiting_and_result():
    session = welcomed()
    session.receive_frame(json.dumps({"type": "progress", "job": "j-1", "done": 1, "total": 4,
                                      "waiting": "no volunteer is connected"}))
    C = np.arange(6, dtype=np.float64).reshape(2, 3)
    session.receive_frame(json.dumps({"type": "job_done", "job": "j-1", "tensors": 1,
                                      "summary": {"tiles": 4}}))
    assert session.expecting_tensors and not session.job("j-1").finished
    session.receive_frame(encode_tensor_frame(C))
    state = session.job("j-1")
    assert state.progress == (1, 4) and state.waiting == "no volunteer is connected"
    assert state.finished and state.done[0] == {"tiles": 4}
    np.testing.assert_array_equal(state.done[1][0], C)
    assert session.events_received() == [
        ProgressReported("j-1", 1, 4), WaitingChanged("j-1", "no volunteer is connected"),
        JobFinished("j-1", False)]
    session.release("j-1")
    session.receive_frame(json.dumps({"type": "job_failed", "job": "j-1", "code": "internal"}))
    assert not session.job("j-1").finished  # late news of a released job


@pytest.mark.parametrize("frame, error", [
    (b"\x00" * 16, ProtocolError),  # binary, announced by nothing
    ("not json", ProtocolError),
    (json.dumps({"no": "type"}), ProtocolError),
    (json.dumps({"type": "x", "tensors": 65}), ProtocolError),
    (json.dumps({"type": "job_done", "job": "j-2", "summary": {}}), ProtocolError),
    (json.dumps({"type": "error", "code": "internal", "message": "boom"}), RemoteError),
])
def test_hostile_frames_are_refused(frame, error):
    with pytest.raises(error):
        welcomed().receive_frame(frame)


def test_a_tensor_frame_that_does_not_decode_is_a_frame_error():
    session = welcomed()
    session.receive_frame(json.dumps({"type": "job_done", "job": "j-1", "tensors": 1}))
    with pytest.raises(FrameError):
        session.receive_frame(b"\x01" * 80)
