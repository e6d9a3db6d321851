"""How goblin.capture traces a PyTorch program to an aten-level torch.fx graph: torch.export
(torch >= 2.1) or make_fx on the functionalized program (torch 1.13), with the decompositions of
the ops the mapping does not handle, and goblin_capture ops in place of what tracing cannot keep
(F.one_hot, F.dropout in training mode). Torch is imported by the caller and passed in."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from . import reference

if TYPE_CHECKING:
    #: (fx GraphModule, placeholders as Lowering.run takes them, leading outputs to skip).
    Traced = Tuple[Any, List[Any], int]


def decompositions(handlers: Mapping[str, Any]) -> Dict[Any, Any]:
    """torch._decomp's aten-to-aten decompositions of the ops the mapping does not handle.

    Only those of torch._decomp.decompositions: the torch._refs entries of the same table lower to
    prims (broadcast_in_dim, as_strided ...), which the catalog does not have.
    """
    from torch._decomp import decomposition_table
    chosen = {}
    for op, fn in decomposition_table.items():
        if getattr(fn, "__module__", "") != "torch._decomp.decompositions":
            continue
        if str(op) in handlers or "aten." + op.overloadpacket.__name__ in handlers:
            continue
        chosen[op] = fn
    return chosen


_LIBRARY: List[Any] = []


def opaque_ops(torch: Any) -> Any:
    """A TorchFunctionMode that, while tracing (and while the capture check runs PyTorch), puts
    goblin_capture ops in place of what tracing cannot keep:

    - F.one_hot, which checks its values (tracing cannot read values), by goblin_capture.one_hot,
      mapped to the catalog's one_hot;
    - F.dropout in training mode, by x · goblin_capture.dropout_mask(x, p, offset): the catalog's
      counter-based dropout_mask (docs/ops.md), so every replica of a task draws the same mask and
      the node can give each micro-batch and round its own streams (docs/training.md). Each
      dropout of one run starts its stream where the previous one ended (offset = elements drawn
      so far); the seed is 0 here and set by the node per round.
    """
    functional = torch.nn.functional
    if not _LIBRARY:
        library = torch.library.Library("goblin_capture", "DEF")
        library.define("one_hot(Tensor x, int num_classes=-1) -> Tensor")
        library.impl("one_hot", lambda x, num_classes=-1: functional.one_hot(x, num_classes),
                     "CPU")
        library.define("dropout_mask(Tensor like, float p, int offset) -> Tensor")
        library.impl("dropout_mask", lambda like, p, offset: torch.from_numpy(
            reference.dropout_mask(list(like.shape), p, seed=0, offset=offset,
                                   dtype="f64" if like.dtype == torch.float64 else "f32")),
            "CPU")
        _LIBRARY.append(library)

    class OpaqueOps(torch.overrides.TorchFunctionMode):
        drawn = 0

        def __torch_function__(self, func: Any, types: Any, args: Sequence[Any] = (),
                               kwargs: Optional[Dict[str, Any]] = None) -> Any:
            kwargs = kwargs or {}
            if func is functional.one_hot:
                return torch.ops.goblin_capture.one_hot(*args, **kwargs)
            if func is functional.dropout:
                return self.dropout(func, *args, **kwargs)
            return func(*args, **kwargs)

        def dropout(self, func: Any, x: Any, p: float = 0.5, training: bool = True,
                    inplace: bool = False) -> Any:
            if not training or p == 0 or not x.dtype.is_floating_point:
                return func(x, p, training, inplace)
            if not 0 < p < 1:
                return func(x, p, training, inplace)  # PyTorch's own error for p outside [0, 1]
            mask = torch.ops.goblin_capture.dropout_mask(x.detach(), float(p), self.drawn)
            self.drawn += x.numel()
            return x.mul_(mask) if inplace else x * mask
    return OpaqueOps()


# What PyTorch's tracers say when a program reads a tensor's values to decide what to run.
_DATA_DEPENDENT = ("value out of a tracing tensor", "data-dependent", "data dependent")


def trace_failure_hint(failure: Exception) -> str:
    """Advice for the tracer failures a researcher can fix in the call."""
    if any(words in str(failure) for words in _DATA_DEPENDENT):
        return (" (the program reads a tensor's values to decide what to run, which a graph "
                "cannot do: compute both branches with torch.where, or pass the input that "
                "settles the branch: a Hugging Face model whose padding check reads the token "
                "ids wants its attention_mask)")
    return ""


def trace(torch: Any, program: Any, inputs: List[Any],
           handlers: Mapping[str, Any]) -> Traced:
    """(fx GraphModule, placeholders as Lowering.run takes them, leading outputs to skip)."""
    with opaque_ops(torch):
        return _trace_with(torch, program, inputs, handlers)


def _trace_with(torch: Any, program: Any, inputs: List[Any],
                handlers: Mapping[str, Any]) -> Traced:
    version = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
    if version >= (2, 1):
        return _trace_export(torch, program, inputs, handlers)
    from torch.fx.experimental.proxy_tensor import make_fx
    try:
        from torch.func import functionalize
    except ImportError:
        from functorch import functionalize
    table = decompositions(handlers)

    def call(*args: Any) -> Any:  # a plain signature: tracing binds the example inputs, not the defaults
        return program(*args)
    try:
        module = make_fx(functionalize(call), decomposition_table=table)(*inputs)
    except RuntimeError:
        # torch 1.13's functionalization cannot trace through torch.autograd.grad; programs that
        # do not mutate tensors trace the same without it (in-place ops stay unmapped).
        module = make_fx(call, decomposition_table=table)(*inputs)
    return module, list(inputs), 0


def _trace_export(torch: Any, program: Any, inputs: List[Any],
                  handlers: Mapping[str, Any]) -> Traced:
    """torch.export (torch >= 2.1): lifted parameters, buffers and constants become constants."""
    if not isinstance(program, torch.nn.Module):
        program = _FunctionModule(torch, program)
    exported = torch.export.export(program, tuple(inputs))
    exported = exported.rundecompositions(decompositions(handlers))
    signature = exported.graph_signature
    state = dict(exported.state_dict)
    state.update(getattr(exported, "constants", {}) or {})
    lifted = dict(signature.inputs_to_parameters)
    lifted.update(signature.inputs_to_buffers)
    lifted.update(getattr(signature, "inputs_to_lifted_tensor_constants", {}) or {})
    user = iter(inputs)
    placeholders = [("constant", state[lifted[node.name]]) if node.name in lifted else next(user)
                    for node in exported.graph_module.graph.nodes if node.op == "placeholder"]
    # The graph returns the mutated buffers (and inputs) first, then the program's outputs.
    skipped = len(signature.buffers_to_mutate) + len(getattr(signature, "user_inputs_to_mutate",
                                                             {}) or {})
    return exported.graph_module, placeholders, skipped


def _FunctionModule(torch: Any, fn: Callable[..., Any]) -> Any:
    class FunctionModule(torch.nn.Module):
        def forward(self, *args: Any) -> Any:
            return fn(*args)
    return FunctionModule()
