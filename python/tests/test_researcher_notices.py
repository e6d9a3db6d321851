"""The researcher's notices and checks against a fake node: the data notice once per process on
connect and on every submission with progress=True, the job's size stated and checked against
the quota before any upload, Ctrl-C during an upload, the same NaN/Inf refusal for matmul, run and
train, JobInfo.created as a datetime and a short repr(TrainResult)."""

from datetime import timezone

import numpy as np
import pytest

import goblin
from goblin import graph as goblin_graph
from goblin import notices, optim
from goblin.training_result import RoundRecord, TrainResult
from test_client_fake import TOKEN, FakeNode, matrices  # noqa: F401

NOTICE_LINE = "goblin: " + goblin.DATA_WARNING


@pytest.fixture
def node():
    fake = FakeNode()
    yield fake
    fake.stop()


@pytest.fixture
def fresh_process(monkeypatch):
    """As if this process had not connected yet."""
    monkeypatch.setattr(notices.NOTICE, "shown_on_connect", False)


def test_connect_prints_the_data_notice_once_per_process(node, capsys, fresh_process):
    goblin.connect(node.url, token=TOKEN, timeout=10).close()
    goblin.connect(node.url, token=TOKEN, timeout=10).close()
    assert capsys.readouterr().err.count(NOTICE_LINE) == 1


def test_every_submission_with_progress_prints_the_notice_and_the_size(node, capsys,
                                                                        fresh_process):
    A, B = matrices()
    with goblin.connect(node.url, token=TOKEN, timeout=10) as client:
        capsys.readouterr()
        client.matmul(A, B, tile=[2, 2], timeout=10)
        assert NOTICE_LINE not in capsys.readouterr().err  # progress=False: silent
        for _ in range(2):
            client.matmul(A, B, progress=True, tile=[2, 2], timeout=10)
            err = capsys.readouterr().err
            assert err.count(NOTICE_LINE) == 1
            assert "matmul job: uploads 224 bytes, 6 tiles, 210 FLOPs" in err
        estimate = client.last_estimate
    assert estimate == goblin.Estimate("matmul", (5 * 7 + 7 * 3) * 4, 6, "tiles", 2.0 * 5 * 7 * 3)
    checks = [m for m in node.received if m["type"] == "check_quota"]
    assert checks[-1] == {"type": "check_quota", "id": checks[-1]["id"], "kind": "matmul",
                          "bytes": 224, "flops": 210.0}


def test_a_job_over_the_quota_is_refused_before_its_upload(node):
    node.mode = "over-quota"
    A, B = matrices()
    with goblin.connect(node.url, token=TOKEN, timeout=10) as client:
        with pytest.raises(goblin.LimitExceededError, match="max_bytes"):
            client.matmul(A, B, timeout=10)
    assert [m["type"] for m in node.received] == ["hello", "check_quota"]  # no submit, no tensor


def test_ctrl_c_during_an_upload_says_nothing_was_submitted(node, capsys, monkeypatch):
    A, B = matrices()
    with goblin.connect(node.url, token=TOKEN, timeout=10) as client:
        real_send = client.transport.send

        def interrupted(data):
            if isinstance(data, (bytes, bytearray, memoryview, list, tuple)) \
                    and not isinstance(data, str):
                raise KeyboardInterrupt  # Ctrl-C while a tensor frame goes out
            real_send(data)

        monkeypatch.setattr(client.transport, "send", interrupted)
        with pytest.raises(KeyboardInterrupt):
            client.matmul(A, B, timeout=10)
    err = capsys.readouterr().err
    assert "interrupted while uploading submit_matmul: nothing was submitted" in err
    assert node.jobs == {}  # the node got the control frame alone: half a message, no job


def single_input_graph():
    g = goblin_graph.Graph()
    x = g.input("f32", [2, 3])
    g.output(g.relu(x))
    return g


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_and_inf_are_refused_alike_by_matmul_and_run(node, bad):
    A, B = matrices()
    A[1, 2] = bad
    x = np.zeros((2, 3), np.float32)
    x[1, 2] = bad
    with goblin.connect(node.url, token=TOKEN, timeout=10) as client:
        with pytest.raises(goblin.InputError,
                           match=r"A holds NaN or Inf \(first at index \(1, 2\)\): .*; matmul"):
            client.matmul(A, B, timeout=10)
        with pytest.raises(goblin.InputError,
                           match=r"input 0 holds NaN or Inf \(first at index \(1, 2\)\): .*; "
                                 r"run\(\) refuses non-finite values unless allow_nonfinite=True"):
            client.run(single_input_graph(), [x], timeout=10)
    assert not [m for m in node.received if m["type"].startswith("submit")]


def test_run_takes_non_finite_inputs_when_asked(node, monkeypatch):
    x = np.full((2, 3), np.nan, np.float32)
    with goblin.connect(node.url, token=TOKEN, timeout=10) as client:
        sent = []
        monkeypatch.setattr(client.connection, "submit_request",
                            lambda request, frames: sent.append(request) or
                            {"type": "job_accepted", "job": "g-1", "tasks": 1})
        job = client.submit_graph(single_input_graph(), [x], allow_nonfinite=True)
    assert job == "g-1" and sent[0]["type"] == "submit_graph"


def test_train_refuses_non_finite_data_like_run(node):
    torch = pytest.importorskip("torch")
    model = torch.nn.Linear(3, 2)
    x = torch.randn(8, 3)
    x[4, 1] = float("nan")
    y = torch.randint(0, 2, (8,))
    with goblin.connect(node.url, token=TOKEN, timeout=10) as client:
        with pytest.raises(goblin.InputError,
                           match=r"x holds NaN or Inf \(first at index \(4, 1\)\): nan; train\(\) "
                                 r"refuses non-finite values unless allow_nonfinite=True"):
            client.train(model, torch.nn.functional.cross_entropy, (x, y), rounds=1,
                         batch_size=4, progress=False)


def test_job_info_created_is_a_utc_datetime(node, monkeypatch):
    with goblin.connect(node.url, token=TOKEN, timeout=10) as client:
        monkeypatch.setattr(client.connection, "request", lambda message, frames, timeout=None: {
            "type": "job_list", "jobs": [{"job": "j-1", "kind": "matmul", "state": "done",
                                          "done": 4, "total": 4, "created": 1.5e9}]})
        [info] = client.jobs()
    assert info.created.tzinfo is timezone.utc
    assert info.created.year == 2017 and info.created_epoch == 1.5e9


def test_train_result_repr_is_short():
    params = {"weight": np.zeros((512, 1024), np.float32), "bias": np.zeros(512, np.float32)}
    record = RoundRecord(0, 0.693, 32, 4, 4, 0, 0, 0, 1.0, 0.1, 0.01, "g-1")
    result = TrainResult({"weight": "tensor(...)" * 1000}, [record], params, optim.AdamW(), 1,
                         "t-1", np.zeros(512 * 1025, np.float32))
    text = repr(result)
    assert len(text) < 200, text
    assert "t-1" in text and "0.693" in text and "weight: 512x1024 float32" in text
    assert "tensor" not in text and "0., 0." not in text
