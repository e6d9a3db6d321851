"""Canonical answers from the project's own graph runner (`goblin-run-graph --backend cpu`), as a
patient adversary would get them: the runner is a program any volunteer can build from the
project's sources; the adversary only writes its files and reads its output (frames, as
docs/protocol.md defines them), never importing the goblin package."""

import json
import subprocess
import tempfile
from pathlib import Path

from . import frame


def split_frames(data: bytes) -> list:
    """Concatenated tensor frames → arrays (each frame's length read from its own header)."""
    arrays, at = [], 0
    while at < len(data):
        header_length = int.from_bytes(data[at:at + 8], "little")
        header = json.loads(data[at + 8:at + 8 + header_length])
        end = at + frame.padded(header_length) + int(header["nbytes"])
        arrays.append(frame.decode(data[at:end]))
        at = end
    return arrays


def run(runner: str, graph: dict, inputs) -> list:
    """The graph's outputs for `inputs`, bit for bit as the project's CPU reference computes them."""
    with tempfile.TemporaryDirectory(prefix="adversary-") as folder:
        where = Path(folder)
        (where / "graph.json").write_text(json.dumps(graph))
        (where / "inputs").write_bytes(b"".join(frame.encode(a) for a in inputs))
        subprocess.run([runner, "--backend", "cpu", "--graph", str(where / "graph.json"),
                        "--inputs", str(where / "inputs"), "--outputs", str(where / "outputs")],
                       check=True, capture_output=True, timeout=600)
        return split_frames((where / "outputs").read_bytes())
