"""Runs a one-op graph on a backend of the op suite (test_ops_vs_torch.py) and compares a result
with PyTorch's under the op's tolerance class.

Backends: "numpy-reference" (goblin.reference, in process) and the C++ executors through
$GOBLIN_BUILD_DIR/app/graph-runner/goblin-run-graph ("cpu", "opencl:0"), which read the graph
JSON and the inputs as concatenated tensor frames and write the outputs the same way.
"""

import json
import os
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from goblin import reference
from goblin.wire import data_offset, decode_tensor_frame, encode_tensor_frame

REPO = Path(__file__).resolve().parents[2]
_build = Path(os.environ.get("GOBLIN_BUILD_DIR", str(REPO / "build" / "ci")))
BUILD_DIR = _build if _build.is_absolute() else REPO / _build
RUNNER = BUILD_DIR / "app" / "graph-runner" / "goblin-run-graph"
BACKENDS = ["numpy-reference", "cpu", "opencl:0"]
# The C++ backends run goblin-run-graph, a process: their tests are integration tests.
CPP_BACKENDS = [pytest.param(b, marks=pytest.mark.integration) for b in BACKENDS[1:]]
BACKEND_PARAMS = [BACKENDS[0]] + CPP_BACKENDS
UNIT_ROUNDOFF = {np.dtype(np.float32): 2.0 ** -24, np.dtype(np.float64): 2.0 ** -53}


class BackendError(Exception):
    """A backend refused the graph or failed; `code` is the catalog error code."""

    def __init__(self, code, message):
        super().__init__("%s: %s" % (code, message))
        self.code = code


def split_frames(data):
    """The tensors of a file of concatenated tensor frames."""
    tensors, offset = [], 0
    while offset < len(data):
        (header_length,) = struct.unpack_from("<Q", data, offset)
        header = json.loads(bytes(data[offset + 8:offset + 8 + header_length]))
        end = offset + data_offset(header_length) + header["nbytes"]
        tensors.append(np.array(decode_tensor_frame(data[offset:end])))
        offset = end
    return tensors


def run_graph(backend, graph, inputs, workdir):
    """The graph's outputs on `backend`; BackendError with the catalog code when it refuses."""
    if backend == "numpy-reference":
        try:
            return reference.run(graph.to_json(), inputs)
        except reference.GraphError as error:
            raise BackendError(error.code, str(error)) from error
    if not os.access(RUNNER, os.X_OK):
        pytest.fail("backend %s needs %s; build the target "
                    "goblin-run-graph or point GOBLIN_BUILD_DIR at a build that has it"
                    % (backend, RUNNER), pytrace=False)
    workdir = Path(workdir)
    (workdir / "g.json").write_text(graph.to_json())
    (workdir / "in.bin").write_bytes(b"".join(encode_tensor_frame(x) for x in inputs))
    done = subprocess.run([str(RUNNER), "--backend", backend, "--graph", str(workdir / "g.json"),
                           "--inputs", str(workdir / "in.bin"),
                           "--outputs", str(workdir / "out.bin")],
                          capture_output=True, text=True, timeout=120)
    if done.returncode == 2:
        line = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "error: ?: ?"
        parts = line.split(": ", 2)
        code = parts[1] if len(parts) > 1 else "?"
        if backend.startswith("opencl") and _no_device(code, line):
            pytest.skip("no OpenCL device: %s" % line)
        raise BackendError(code, parts[2] if len(parts) > 2 else line)
    assert done.returncode == 0, "goblin-run-graph exited %d: %s" % (done.returncode, done.stderr)
    return split_frames((workdir / "out.bin").read_bytes())


def _no_device(code, line):
    text = line.lower()
    return code in ("device_unavailable", "no_device", "not_found") and "device" in text or \
        "no opencl" in text or "no device" in text


# ---- comparison ---------------------------------------------------------------------------------
def gamma(n, u):
    return n * u / (1.0 - n * u) if n * u < 1.0 else np.inf


def assert_matches(got, want, tolerance, scale=None):
    """Asserts that `got` (a backend's output) matches `want` (PyTorch's) under `tolerance`:

    ("exact",): equal values (floats: both NaN, -0 == +0); ("ulp", k, input-scaled |x| or None):
    |got - want| <= k·u·(|want| + |x|); ("bound", b): |got - want| <= b elementwise (b from the
    sum-bound or matmul-bound of the op, already doubled because PyTorch and the backend each
    carry an error of up to the bound). NaN must meet NaN and an infinity the same infinity.
    """
    want = np.asarray(want)
    assert got.dtype == want.dtype, "dtype %s, PyTorch gives %s" % (got.dtype, want.dtype)
    assert got.shape == want.shape, "shape %s, PyTorch gives %s" % (got.shape, want.shape)
    if got.dtype.kind != "f" or tolerance[0] == "exact":
        same = (got == want) | (np.isnan(got) & np.isnan(want)) if got.dtype.kind == "f" \
            else got == want
        assert np.all(same), _first_difference(got, want, ~same)
        return
    u = UNIT_ROUNDOFF[got.dtype]
    g, w = got.astype(np.float64), want.astype(np.float64)
    special = ~np.isfinite(w)
    bad = special & ~((np.isnan(g) & np.isnan(w)) | (g == w))
    assert not np.any(bad), _first_difference(got, want, bad)
    if tolerance[0] == "ulp":
        extra = np.abs(np.asarray(tolerance[2], np.float64)) if tolerance[2] is not None else 0.0
        allowed = tolerance[1] * u * (np.abs(w) + np.broadcast_to(extra, w.shape))
    else:
        allowed = np.broadcast_to(np.asarray(tolerance[1], np.float64), w.shape)
    with np.errstate(invalid="ignore"):
        wrong = ~special & ~(np.abs(g - w) <= allowed) & ~(np.isinf(allowed))
    assert not np.any(wrong), _first_difference(got, want, wrong, allowed)


def _first_difference(got, want, mask, allowed=None):
    at = tuple(np.argwhere(mask)[0]) if mask.ndim else ()
    text = "%d of %d elements differ; at %s: got %r, PyTorch %r" % (
        int(np.count_nonzero(mask)), mask.size, list(at), got[at], want[at])
    if allowed is not None:
        text += " (allowed error %.3g)" % np.asarray(allowed)[at]
    return text
