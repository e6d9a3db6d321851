"""goblin.mapped_pages: the pages of a researcher's memmap that the client read or wrote block by
block leave this process's resident memory, and nothing written or read is lost."""

from pathlib import Path

import numpy as np

from goblin.mapped_pages import release_rows


def mapped_rss(path):
    """Resident bytes of this process's mappings of `path` (from /proc/self/smaps)."""
    total, inside = 0, False
    name = str(Path(path).resolve())
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and len(fields) >= 5:
            inside = len(fields) >= 6 and fields[5] == name
        elif inside and fields[0] == "Rss:":
            total += int(fields[1]) * 1024
    return total


def test_written_rows_leave_the_process_and_stay_in_the_file(tmp_path):
    path = tmp_path / "C.npy"
    rows, cols = 512, 1024  # 2 MiB of float32
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, cols))
    expected = np.random.default_rng(3).standard_normal((rows, cols)).astype(np.float32)
    for row0 in range(0, rows, 100):  # blocks that end inside a page
        out[row0:row0 + 100] = expected[row0:row0 + 100]
        assert release_rows(out, row0, min(100, rows - row0))
    assert mapped_rss(path) <= 4 * 4096  # before: all 2 MiB were resident in this process
    np.testing.assert_array_equal(out, expected)  # mapped again from the page cache
    del out
    np.testing.assert_array_equal(np.load(path), expected)  # and in the file


def test_read_rows_leave_the_process(tmp_path):
    path = tmp_path / "A.npy"
    data = np.arange(256 * 2048, dtype=np.float32).reshape(256, 2048)
    np.save(path, data)
    A = np.load(path, mmap_mode="r")
    assert float(A.sum(dtype=np.float64)) == float(data.sum(dtype=np.float64))  # all pages read
    assert mapped_rss(path) >= data.nbytes
    assert release_rows(A, 0, 256)
    assert mapped_rss(path) <= 4096
    np.testing.assert_array_equal(A[17], data[17])


def test_copy_on_write_memmaps_and_plain_arrays_are_left_alone(tmp_path):
    path = tmp_path / "A.npy"
    np.save(path, np.zeros((64, 1024), dtype=np.float32))
    private = np.load(path, mmap_mode="c")
    private[3] = 7.0  # a change only this process holds
    assert not release_rows(private, 0, 64)
    assert (private[3] == 7.0).all()
    assert not release_rows(np.ones((64, 1024), dtype=np.float32), 0, 64)
    assert not release_rows(np.load(path, mmap_mode="r")[:, ::2], 0, 64)  # not contiguous
