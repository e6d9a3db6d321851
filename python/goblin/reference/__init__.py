"""Local numpy reference interpreter of catalog graphs: the semantics of docs/ops.md, used to check a
built or captured graph before upload and to cross-check the C++ reference executor through the
shared vectors in tests/vectors/graphs/.

    outputs = goblin.reference.run(graph, [x])   # graph: graph.Graph, dict or JSON text

One module per op family (elementwise, reductions, indexing, conv, philox) below the entry points
in interpreter; common holds what they share.
"""

from .common import Attrs, GraphError
from .elementwise import ANY_DTYPE, FLOAT_ONLY, INTEGER_OR_BOOL
from .interpreter import CATALOG3, run, run_op
from .philox import PHILOX_M0, PHILOX_M1, PHILOX_W0, PHILOX_W1, dropout_mask, philox4x32_10

__all__ = [
    "ANY_DTYPE", "Attrs", "CATALOG3", "FLOAT_ONLY", "GraphError", "INTEGER_OR_BOOL", "PHILOX_M0",
    "PHILOX_M1", "PHILOX_W0", "PHILOX_W1", "dropout_mask", "philox4x32_10", "run", "run_op",
]
