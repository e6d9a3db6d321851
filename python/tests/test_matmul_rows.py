"""Products in row blocks (docs/protocol.md, "Products in row blocks") on a real lab node whose
tensor limit is 1 MiB and real volunteers: a 4 MiB product comes in blocks and equals the float64
product within float32's error, also written block by block into a numpy.memmap; `out` of the
wrong shape, dtype or read-only is refused before anything is submitted; fetch_rows outside C,
over the limit or for another researcher's job is refused; a failed write into `out` leaves the
job at the node to fetch again."""

import numpy as np
import pytest
from limited_node import assert_float32_product, client, node  # noqa: F401 (fixtures)

from goblin.errors import DTypeError, InputError, LimitExceededError, RemoteError, ShapeError

pytestmark = pytest.mark.integration  # starts a lab node and volunteers

M, K, N = 1024, 128, 1024  # A and B 512 KiB each, C 4 MiB: over the node's 1 MiB limit


def inputs(seed=3):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((M, K)).astype(np.float32),
            rng.standard_normal((K, N)).astype(np.float32))


assert_product = assert_float32_product


def jobs(node):
    return node.query("SELECT COUNT(*) FROM jobs")[0][0]


def test_a_product_over_the_limit_comes_in_row_blocks(node, client):
    A, B = inputs()
    C = client.matmul(A, B, timeout=120)
    assert client.last_summary["delivery"] == "rows"
    assert_product(C, A, B)
    assert node.query("SELECT state FROM jobs WHERE id = ?", (client.last_job,)) == [("released",)]


def test_the_product_is_written_into_a_memmap_block_by_block(node, client, tmp_path):
    A, B = inputs(seed=4)
    out = np.lib.format.open_memmap(tmp_path / "C.npy", mode="w+", dtype=np.float32, shape=(M, N))
    assert client.matmul(A, B, out=out, timeout=120) is out
    out.flush()
    assert_product(np.load(tmp_path / "C.npy"), A, B)
    small = np.empty((64, 32), np.float32)  # delivered whole: written into out all the same
    got = client.matmul(A[:64], B[:, :32], out=small, timeout=120)
    assert got is small and "delivery" not in client.last_summary
    np.testing.assert_allclose(small, A[:64] @ B[:, :32], rtol=1e-4, atol=1e-4)


def read_only_memmap(path):
    np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(M, N)).flush()
    return np.load(path, mmap_mode="r")


@pytest.mark.parametrize("make_out, error, message", [
    (lambda path: np.empty((M, N + 1), np.float32), ShapeError, r"out has shape \(1024, 1025\)"),
    (lambda path: np.empty((M, N), np.float64), DTypeError, "out is float64; C is float32"),
    (lambda path: read_only_memmap(path), InputError, "read-only"),
    (lambda path: [[0.0] * N] * M, InputError, "array-like with shape, dtype"),
])
def test_a_bad_out_is_refused_before_anything_is_submitted(node, client, tmp_path, make_out,
                                                           error, message):
    A, B = inputs()
    before = jobs(node)
    with pytest.raises(error, match=message):
        client.matmul(A, B, out=make_out(tmp_path / "C.npy"))
    assert jobs(node) == before


def test_fetch_rows_refuses_rows_outside_c_over_the_limit_or_of_another_researcher(node, client):
    A, B = inputs(seed=5)
    job = client.submit_matmul(A, B)
    client.connection.wait(lambda: client.session.job(job).done is not None, None,
                           "the job never finished")

    def fetch_rows(row0, rows, who=client):
        return who.connection.request({"type": "fetch_rows", "job": str(job), "row0": row0,
                                       "rows": rows}, [])

    with pytest.raises(InputError, match="outside C's 1024 rows"):
        fetch_rows(1000, 25)
    with pytest.raises(LimitExceededError, match="over the tensor limit"):
        fetch_rows(0, 257)  # 257 rows of 4 KiB: over 1 MiB
    other = node.connect(node.add_researcher("bob@example.org"), timeout=60)
    with pytest.raises(RemoteError) as foreign:
        fetch_rows(0, 1, who=other)
    assert foreign.value.code == "not_found"
    C = client.fetch(job, timeout=120)  # the job is whole again from the start
    assert_product(C, A, B)
    with pytest.raises(RemoteError) as released:
        fetch_rows(0, 1)
    assert released.value.code == "not_found"


class FailsAfterOneBlock:
    """An `out` whose second block cannot be written (a full disk, say)."""

    def __init__(self):
        self.shape, self.dtype, self.blocks = (M, N), np.dtype(np.float32), 0

    def __setitem__(self, rows, value):
        self.blocks += 1
        if self.blocks == 2:
            raise OSError("no space left on the researcher's disk")


def test_a_failed_write_into_out_leaves_the_job_to_fetch_again(node, client):
    A, B = inputs(seed=6)
    with pytest.raises(OSError, match="no space left"):
        client.matmul(A, B, out=FailsAfterOneBlock(), timeout=120)
    job = client.last_job
    assert node.query("SELECT state FROM jobs WHERE id = ?", (job,)) == [("done",)]
    assert_product(client.fetch(job, timeout=120), A, B)
