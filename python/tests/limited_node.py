"""Shared by the row-block tests (test_matmul_rows.py, test_matmul_blocks.py): a real lab node whose
tensor limit is 1 MiB, with two honest volunteers, and the float32 error bound of a product."""

import numpy as np
import pytest

from conftest import Cluster

TENSOR_LIMIT_MB = 1


def start_limited_node(folder):
    """A Cluster with `serve --max-tensor-mb 1`, two volunteers and a researcher token."""
    cluster = Cluster(folder)
    cluster.token = cluster.add_researcher()
    cluster.start_node(extra_args=["--max-tensor-mb", str(TENSOR_LIMIT_MB)])
    for _ in range(2):
        cluster.start_volunteer(threads=1, slots=2)
    return cluster


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    """The limited node of a test module (import it there, with `client`)."""
    cluster = None
    try:
        cluster = start_limited_node(tmp_path_factory.mktemp("limited"))
        yield cluster
    finally:
        if cluster is not None:
            cluster.shutdown()
            print(cluster.logs())


@pytest.fixture(scope="module")
def client(node):
    return node.connect(node.token, timeout=120)


def assert_float32_product(C, A, B):
    """C is A·B within float32's worst-case error 2·K·ε·(|A|·|B|), element by element, against
    the float64 product."""
    exact = A.astype(np.float64) @ B.astype(np.float64)
    bound = 2 * A.shape[1] * np.finfo(np.float32).eps * (np.abs(A).astype(np.float64) @ np.abs(B))
    assert C.shape == exact.shape and C.dtype == np.float32
    assert (np.abs(C - exact) <= bound).all()
