"""goblin.capture: a PyTorch program captured at the aten level as a catalog graph.

    captured = goblin.capture(model, torch.randn(8, 16))   # a module or a function, example inputs
    captured.graph                        # goblin.graph.Graph; parameters and buffers are constants
    captured.input_names                  # the graph inputs, in order (one per example input)
    [y] = captured.run_reference(x)       # numpy outputs computed by goblin.reference
    client.run(captured.graph, [x])

Tracing: torch >= 2.1 uses torch.export; older torch (1.13) uses make_fx on the functionalized
program. Both apply the aten-level decompositions of torch._decomp.decompositions for the ops the
mapping does not handle itself (silu, logsumexp, nll_loss, group norm, backward ops...). Every aten
op is then mapped to catalog ops (the table is capture_ops.HANDLERS); calls whose tensor arguments
are all constants are folded into constants by PyTorch itself (a causal mask built with
torch.triu costs nothing). The ops that cannot be mapped are reported together in one
UnsupportedOperator. Before returning, the graph runs in goblin.reference on the example inputs
and must agree with PyTorch's own output (see check_outputs for the tolerance).

Torch is optional: it is imported only when capture() is called.
"""

from __future__ import annotations

import copy
import inspect
from typing import TYPE_CHECKING, Any, Callable, List, Mapping, Optional, Sequence, Union

import numpy as np

from . import reference
from .capture_trace import opaque_ops, trace, trace_failure_hint
from .errors import (CaptureError, CaptureMismatchError, GoblinError, TorchRequiredError,
                     UnsupportedOperator)

if TYPE_CHECKING:
    import torch
    from numpy.typing import ArrayLike, DTypeLike, NDArray

    from .graph import Graph

    #: An example input or an input of the captured program: a torch tensor or a numpy array.
    InputLike = Union[NDArray[Any], torch.Tensor]

# Element error allowed by the capture check: |got - want| <= rtol * (|want| + max |want|), per
# output. Scaling by the largest element as well as the element itself covers the cancellation
# of sums and products (matmul, layer norm) whose bound depends on the inputs, not on the result.
DEFAULT_RTOL = {"f32": 1e-4, "f64": 1e-9}


def require_torch() -> Any:
    try:
        import torch
    except ImportError as missing:
        raise TorchRequiredError("goblin.capture needs PyTorch, an optional dependency of goblin: "
                                 "install it (pip install torch, or apt install python3-torch) "
                                 "and try again (%s)" % missing) from missing
    return torch


class CapturedGraph:
    """A captured program: the catalog graph plus what is needed to feed and check it."""

    def __init__(self, graph: Graph, input_names: Sequence[str], program: Callable[..., Any],
                 rtol: Mapping[str, float]) -> None:
        self.graph = graph
        self.input_names = list(input_names)
        self.inputs = [(spec["dtype"], list(spec["shape"])) for spec in graph.inputs]
        self.output_count = len(graph.outputs)
        self.rtol = dict(rtol)
        self._program = program

    def to_json(self) -> str:
        return self.graph.to_json()

    def run_reference(self, *inputs: InputLike) -> List[NDArray[Any]]:
        """The graph's outputs (a list of numpy arrays) computed by goblin.reference."""
        return reference.run(self.graph, [_as_numpy(x) for x in inputs])

    def run_torch(self, *inputs: InputLike) -> List[NDArray[Any]]:
        """The original program's outputs on the same inputs, flattened to numpy arrays."""
        torch = require_torch()
        tensors = [torch.from_numpy(np.array(_as_numpy(x))) for x in inputs]
        with opaque_ops(torch):  # dropout draws the masks the graph draws
            result = self._program(*tensors)
        return [t.detach().cpu().numpy() for t in _flatten(result)]

    def check(self, *inputs: InputLike) -> float:
        """Runs both on `inputs`; returns the worst error / allowed ratio (<= 1), or raises
        CaptureMismatchError.

        PyTorch's float32 kernels are not always the more accurate side (its CPU convolution
        weight gradient, for one, can be off by 1e-3 of the gradient's scale where the reference
        is exact to 1e-7). So when the graph disagrees with PyTorch's float32 outputs, the
        program is run once more in float64 (floating inputs, and a module's parameters, promoted):
        the graph passes if it agrees with that, at the same tolerance."""
        got = self.run_reference(*inputs)
        try:
            return check_outputs(got, self.run_torch(*inputs), self.rtol)
        except CaptureMismatchError as mismatch:
            truth = self._run_torch_float64(inputs, [np.asarray(g).dtype for g in got])
            if truth is None:
                raise
            try:
                return check_outputs(got, truth, self.rtol)
            except CaptureMismatchError:
                raise mismatch from None

    def _run_torch_float64(self, inputs: Sequence[InputLike],
                           dtypes: Sequence[np.dtype[Any]]) -> Optional[List[NDArray[Any]]]:
        """The program's outputs computed in float64 and rounded to the graph's dtypes, or None
        when the program does not run in float64."""
        torch = require_torch()
        program = self._program
        if isinstance(program, torch.nn.Module):
            program = copy.deepcopy(program).double()
        tensors = []
        for x in inputs:
            tensor = torch.from_numpy(np.array(_as_numpy(x)))
            tensors.append(tensor.double() if tensor.is_floating_point() else tensor)
        try:
            with opaque_ops(torch):
                outputs = [t.detach().cpu().numpy() for t in _flatten(program(*tensors))]
        except Exception:  # a program tied to float32 (a float32 buffer, a dtype check ...)
            return None
        if len(outputs) != len(dtypes):
            return None
        return [out.astype(dtype) if out.dtype.kind == "f" and np.dtype(dtype).kind == "f"
                else out for out, dtype in zip(outputs, dtypes)]


def capture(fn_or_module: Union[torch.nn.Module, Callable[..., Any]], *example_inputs: InputLike,
            rtol: Optional[Mapping[str, float]] = None, check: bool = True) -> CapturedGraph:
    """Captures `fn_or_module(*example_inputs)` as a CapturedGraph.

    example_inputs are torch tensors or numpy arrays (f32, f64, i32, i64 or bool); their dtypes
    and shapes become the graph's inputs (shapes are static). Raises UnsupportedOperator listing
    every aten op the catalog cannot express, CaptureMismatchError when the mapped graph disagrees
    with PyTorch on the example inputs (skipped with check=False), TorchRequiredError when torch
    is missing.
    """
    torch = require_torch()
    from . import capture_ops, capture_ops_grad, capture_ops_nn, capture_ops_shape
    del capture_ops_grad, capture_ops_nn, capture_ops_shape  # imported for their @aten handlers
    from .capture_lowering import Lowering, Unmappable

    tensors = [x if isinstance(x, torch.Tensor) else torch.from_numpy(np.array(_as_numpy(x)))
               for x in example_inputs]
    try:
        module, placeholders, skipped = trace(torch, fn_or_module, tensors, capture_ops.HANDLERS)
    except GoblinError:
        raise
    except Exception as failure:  # the program itself, or PyTorch's tracer, refused
        raise CaptureError("PyTorch could not trace the program on its example inputs: %s: %s%s"
                           % (type(failure).__name__, failure, trace_failure_hint(failure))) \
            from failure
    lowering = Lowering(capture_ops.HANDLERS)
    try:
        outputs, _ = lowering.run(module, placeholders)
        if not lowering.unsupported:
            for leaf in _flatten(outputs)[skipped:]:
                lowering.graph.output(lowering.sym(leaf).value)
    except Unmappable as why:  # an input or output the catalog cannot carry (float16 ...)
        raise UnsupportedOperator({"(program inputs/outputs)": 1},
                                  {"(program inputs/outputs)": str(why)}) from why
    except GoblinError:
        raise
    except Exception as failure:
        raise CaptureError("goblin could not map the traced program: %s: %s"
                           % (type(failure).__name__, failure)) from failure
    if lowering.unsupported:
        raise UnsupportedOperator(lowering.unsupported, lowering.reasons)
    _drop_unread_nodes(lowering.graph)
    rtol = dict(DEFAULT_RTOL, **(rtol or {}))
    captured = CapturedGraph(lowering.graph, _input_names(fn_or_module, len(tensors)),
                             fn_or_module, rtol)
    if check:
        captured.check(*[t.detach().cpu().numpy() for t in tensors])
    return captured


def _drop_unread_nodes(graph: Graph) -> None:
    """Drops the nodes no output depends on (a transpose whose only reader folded it away), but
    never a dropout mask: the masks' draws number the random streams."""
    needed = set(graph.outputs)
    for node in reversed(graph.nodes):
        if node["id"] in needed or node["op"] == "dropout_mask":
            needed.add(node["id"])
            needed.update(node["args"])
    graph.nodes = [node for node in graph.nodes if node["id"] in needed]


def check_outputs(got: Sequence[ArrayLike], want: Sequence[ArrayLike],
                  rtol: Optional[Mapping[str, float]] = None) -> float:
    """Compares reference outputs with PyTorch's; returns the worst error / allowed ratio.

    Shapes and dtypes must be equal; integers and bools exactly; floats may differ by
    rtol[dtype] * (|want| + max |want|); NaN must meet NaN and an infinity the same infinity.
    """
    rtol = dict(DEFAULT_RTOL, **(rtol or {}))
    if len(got) != len(want):
        raise CaptureMismatchError("the graph has %d outputs, PyTorch returned %d"
                                   % (len(got), len(want)))
    worst = 0.0
    for index, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape or g.dtype != w.dtype:
            raise CaptureMismatchError("output %d: graph gives %s%s, PyTorch %s%s"
                                       % (index, g.dtype, list(g.shape), w.dtype, list(w.shape)))
        worst = max(worst, _output_ratio(index, g, w, rtol))
    return worst


def _output_ratio(index: int, got: NDArray[Any], want: NDArray[Any],
                  rtol: Mapping[str, float]) -> float:
    if got.dtype.kind != "f":
        wrong = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
        if wrong.size:
            raise CaptureMismatchError("output %d: %d of %d elements differ (first at flat index "
                                       "%d: %r, PyTorch %r)" % (index, wrong.size, got.size,
                                                                wrong[0], got.reshape(-1)[wrong[0]],
                                                                want.reshape(-1)[wrong[0]]))
        return 0.0
    g, w = got.astype(np.float64).reshape(-1), want.astype(np.float64).reshape(-1)
    special = ~np.isfinite(w) | ~np.isfinite(g)
    bad_special = special & ~((np.isnan(g) & np.isnan(w)) | (g == w))
    finite = w[~special]
    scale = float(np.max(np.abs(finite))) if finite.size else 0.0
    allowed = rtol[_wire(got.dtype)] * (np.abs(w) + scale)
    with np.errstate(invalid="ignore", divide="ignore"):
        error = np.where(special, 0.0, np.abs(g - w))
        ratio = np.where(allowed > 0, error / np.where(allowed > 0, allowed, 1.0),
                         np.where(error > 0, np.inf, 0.0))
    ratio = np.where(bad_special, np.inf, ratio)
    worst = float(np.max(ratio)) if ratio.size else 0.0
    if worst > 1.0:
        at = int(np.argmax(ratio))
        raise CaptureMismatchError(
            "output %d disagrees with PyTorch: element %d is %r, PyTorch says %r (allowed error "
            "%.3g, rtol %g)" % (index, at, g[at], w[at], allowed[at], rtol[_wire(got.dtype)]))
    return worst


def _wire(dtype: DTypeLike) -> str:
    return {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}[np.dtype(dtype)]


def _as_numpy(x: InputLike) -> NDArray[Any]:
    if hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def _flatten(tree: Any) -> List[Any]:
    from torch.utils._pytree import tree_flatten
    return tree_flatten(tree)[0]


def _input_names(fn: Callable[..., Any], count: int) -> List[str]:
    target = fn.forward if hasattr(fn, "forward") else fn
    try:
        names = [p.name for p in inspect.signature(target).parameters.values()
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        names = []
    return (names + ["input%d" % i for i in range(len(names), count)])[:count]
