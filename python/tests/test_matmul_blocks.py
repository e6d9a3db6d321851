"""Matrices in row blocks (docs/protocol.md, "Matrices in row blocks") on a real lab node whose
tensor limit is 1 MiB and real volunteers: A and B over the limit, read from a numpy.memmap and
an array-like block by block, give the float64 product within float32's error, written into a
memmap; an array-like that fails mid-read, or NaN in a later block, submits nothing and leaves no
upload behind; the node refuses rows out of order, of the wrong shape, another connection's
upload and an incomplete one, and deletes the uploads of a connection that closes."""

import numpy as np
import pytest
from limited_node import assert_float32_product, client, node  # noqa: F401 (fixtures)
from test_mapped_pages import mapped_rss

from goblin.errors import InputError, LimitExceededError, RemoteError, ShapeError
from goblin.wire import encode_tensor_frame

pytestmark = pytest.mark.integration  # starts a lab node and volunteers

M, K, N = 1536, 256, 1280  # A 1.5 MiB, B 1.25 MiB, C 7.5 MiB: all over the node's 1 MiB


def inputs(seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((M, K)).astype(np.float32),
            rng.standard_normal((K, N)).astype(np.float32))


assert_product = assert_float32_product


def staged_files(node):
    return sorted((node.data_dir / "uploads").iterdir())


def jobs(node):
    return node.query("SELECT COUNT(*) FROM jobs")[0][0]


class RowReader:
    """An array-like that reads rows on demand (like an h5py dataset) and counts the reads."""

    def __init__(self, array, fail_at=None):
        self.array, self.fail_at, self.reads = array, fail_at, 0
        self.shape, self.dtype = array.shape, array.dtype

    def __getitem__(self, rows):
        self.reads += 1
        if self.reads == self.fail_at:
            raise OSError("the researcher's disk stopped answering")
        return self.array[rows]


def test_inputs_over_the_limit_travel_in_row_blocks_from_disk(node, client, tmp_path):
    A, B = inputs(1)
    np.save(tmp_path / "A.npy", A)
    A_disk = np.load(tmp_path / "A.npy", mmap_mode="r")
    B_rows = RowReader(B)
    out = np.lib.format.open_memmap(tmp_path / "C.npy", mode="w+", dtype=np.float32, shape=(M, N))
    assert client.matmul(A_disk, B_rows, out=out, timeout=300) is out
    # The memmaps' pages read and written went back as each block was done: neither 1.5 MiB of
    # A nor 7.5 MiB of C stays resident in the client (a 4 GiB memmap would count whole).
    assert mapped_rss(tmp_path / "A.npy") <= 2 * 4096
    assert mapped_rss(tmp_path / "C.npy") <= 2 * 4096
    assert B_rows.reads > 1  # B came in several blocks
    assert client.last_summary["delivery"] == "rows"
    assert_product(np.load(tmp_path / "C.npy"), A, B)
    assert staged_files(node) == []  # the uploads became the job's blobs
    # A small in-memory product is sent whole as before, and agrees.
    C = client.matmul(A[:64], B[:, :64], timeout=120)
    assert_product(C, A[:64], B[:, :64])


def test_an_array_like_that_fails_mid_read_submits_nothing_and_leaves_no_upload(node, client):
    A, B = inputs(2)
    before = jobs(node)
    with pytest.raises(OSError, match="stopped answering"):
        client.matmul(RowReader(A, fail_at=2), B, timeout=120)
    assert jobs(node) == before and staged_files(node) == []
    A[M - 3, 7] = np.nan  # in A's last block
    with pytest.raises(InputError, match=r"A holds NaN or Inf \(first at index \(1533, 7\)\)"):
        client.matmul(RowReader(A), B, timeout=120)
    assert jobs(node) == before and staged_files(node) == []


def test_the_node_refuses_bad_blocks_and_deletes_a_closed_connections_uploads(node, client):
    A, _ = inputs(3)

    def request(message, frames=(), who=client):
        return who.connection.request(message, list(frames))

    def request_and_id(message, frames=(), who=client):
        request_id = who.connection.send_request(message, list(frames))
        return who.connection.reply(request_id, message["type"]), request_id

    ready = request({"type": "upload", "dtype": "f32", "rows": M, "cols": K})
    upload = ready["upload"]
    assert ready["type"] == "upload_ready" and upload.startswith("u-")
    rows = lambda row0, block: request({"type": "upload_rows", "upload": upload, "row0": row0},
                                       [encode_tensor_frame(block)])
    stored, request_id = request_and_id({"type": "upload_rows", "upload": upload, "row0": 0},
                                        [encode_tensor_frame(A[:512])])
    assert stored == {"type": "rows_stored", "id": request_id, "upload": upload, "rows": 512}
    with pytest.raises(InputError, match="expects row 512, not row 1024"):
        rows(1024, A[1024:1536])
    with pytest.raises(ShapeError, match="takes f32 rows of 256 columns"):
        rows(512, A[512:1024, :128].copy())
    with pytest.raises(ShapeError):
        rows(512, A[512:1024].astype(np.float64))
    with pytest.raises(InputError, match="has 512 of its 1536 rows"):
        request({"type": "submit_matmul", "inputs": [upload, upload]})
    other = node.connect(node.token, timeout=60)  # the same researcher, another connection
    with pytest.raises(RemoteError) as foreign:
        request({"type": "upload_rows", "upload": upload, "row0": 512},
                [encode_tensor_frame(A[512:1024])], who=other)
    assert foreign.value.code == "not_found"
    staged = [request({"type": "upload", "dtype": "f64", "rows": 2, "cols": 2}, who=other)
              for _ in range(4)]
    with pytest.raises(LimitExceededError, match="at most 4 uploads"):
        request({"type": "upload", "dtype": "f64", "rows": 2, "cols": 2}, who=other)
    dropped, request_id = request_and_id({"type": "drop_upload", "upload": staged[0]["upload"]},
                                         who=other)
    assert dropped == {"type": "upload_dropped", "id": request_id, "upload": staged[0]["upload"]}
    # 4 TiB: over the default quota too; lab staff raise it so that the disk check speaks.
    node.staff("researchers", "quota", "alice@example.org", "--max-bytes", "8TiB")
    with pytest.raises(LimitExceededError, match="disk has"):
        request({"type": "upload", "dtype": "f64", "rows": 1 << 20, "cols": 1 << 19})
    assert len(staged_files(node)) == 4  # this connection's one, the other's three
    other.close()
    node.wait_until(lambda: len(staged_files(node)) == 1, 60, "the closed connection's uploads")
    assert rows(512, A[512:1536])["rows"] == M  # this connection's upload is untouched
    assert request({"type": "drop_upload", "upload": upload})["type"] == "upload_dropped"
    assert staged_files(node) == []


def test_staged_inputs_the_node_refuses_leave_no_blob(node, client):
    # Inner sizes that differ, sent raw (the client checks them before uploading): the node takes
    # the uploads, refuses the job, and deletes what they became.
    rng = np.random.default_rng(7)
    blobs = sorted((node.data_dir / "blobs").iterdir())
    uploads = []
    for rows, cols in ((8, 3), (4, 2)):
        upload = client.connection.request({"type": "upload", "dtype": "f64", "rows": rows,
                                            "cols": cols})["upload"]
        client.connection.request({"type": "upload_rows", "upload": upload, "row0": 0},
                                  [encode_tensor_frame(rng.standard_normal((rows, cols)))])
        uploads.append(upload)
    with pytest.raises(ShapeError, match="inner sizes differ: A is 8x3, B is 4x2"):
        client.connection.request({"type": "submit_matmul", "inputs": uploads}, [])
    assert sorted((node.data_dir / "blobs").iterdir()) == blobs
    assert staged_files(node) == []
    # A row over the tensor limit cannot travel at all: refused before anything is sent.
    with pytest.raises(LimitExceededError, match="one row of A"):
        client.matmul(RowReader(np.ones((2, 300_000), np.float32)),
                      np.ones((300_000, 2), np.float32))
