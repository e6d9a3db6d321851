"""Lowering of a traced aten graph (torch.fx) to catalog ops: the values, the constants, the dtype
promotion and the walk over the nodes. The per-op handlers live in capture_ops.py.

Imported by goblin.capture only after torch imported, so `import goblin` never needs torch.
"""

import operator
from collections import Counter

import numpy as np
import torch
from torch.fx.node import map_aggregate

from .graph import CATALOG_VERSION, OPS, Graph

TORCH_TO_WIRE = {torch.float32: "f32", torch.float64: "f64", torch.int32: "i32",
                 torch.int64: "i64", torch.bool: "bool"}

# Ops whose result changes from one call to the next: never folded into a constant.
RANDOM_OPS = frozenset(("bernoulli", "native_dropout", "rand", "rand_like", "randn", "randn_like",
                        "randint", "randint_like", "randperm", "normal", "uniform", "multinomial",
                        "exponential", "_fused_dropout", "rrelu_with_noise", "poisson"))

# Folding a constant-only call is skipped (the call is mapped instead) when its result has more
# elements than this and than its inputs, so that inline constants stay small.
FOLD_LIMIT = 4096


class Unmappable(Exception):
    """A handler cannot express this call in the catalog; the message says why."""


class Sym:
    """A value of the goblin graph under construction, with its torch dtype and static shape."""

    __slots__ = ("value", "dtype", "shape")

    def __init__(self, value, dtype, shape):
        self.value = value
        self.dtype = dtype
        self.shape = tuple(int(d) for d in shape)

    @property
    def ndim(self):
        return len(self.shape)


class Poison:
    """The result of an op that could not be mapped and whose dtype the catalog lacks."""


class _Poisoned(Exception):
    pass


class Multi:
    """The several results of one aten op; each is emitted only when a getitem reads it."""

    def __init__(self, makers):
        self._makers = list(makers)
        self._made = {}

    def __getitem__(self, index):
        if index not in self._made:
            self._made[index] = self._makers[index]()
        return self._made[index]

    def __len__(self):
        return len(self._makers)


def wire(dtype):
    if dtype not in TORCH_TO_WIRE:
        raise Unmappable("dtype %s is not in the catalog" % dtype)
    return TORCH_TO_WIRE[dtype]


def op_name(target):
    """"aten.add.Tensor" for an OpOverload, the function's name for anything else."""
    if isinstance(target, torch._ops.OpOverload):
        return str(target)
    return getattr(target, "__name__", str(target))


class Lowering:
    """Emits catalog nodes into one Graph; `handlers` maps aten names to functions (capture_ops)."""

    def __init__(self, handlers):
        self.graph = Graph()
        self.handlers = handlers
        self.unsupported: "Counter[str]" = Counter()
        self.reasons = {}
        self.notes = {}  # id(Sym) -> provenance a later handler needs (a layer norm's eps)
        self.permuted = {}  # value id of a permute's result -> (its argument's Sym, its dims)
        self._constants = {}
        self._kept = []
        self._blamed = set()

    # ---- values -------------------------------------------------------------------------------
    def input(self, dtype, shape):
        return Sym(self.graph.input(wire(dtype), list(shape)), dtype, shape)

    def constant(self, tensor):
        key = id(tensor)
        if key not in self._constants:
            array = tensor.detach().cpu().contiguous()
            wire(array.dtype)
            self._kept.append(tensor)
            self._constants[key] = Sym(self.graph.constant(array.numpy()), array.dtype,
                                       array.shape)
        return self._constants[key]

    def scalar(self, number, dtype):
        value = np.array(number).astype(torch.empty((), dtype=dtype).numpy().dtype)
        return Sym(self.graph.constant(value), dtype, ())

    def sym(self, x, dtype=None):
        """x (Sym, constant tensor or Python number) as a Sym, cast to dtype when given."""
        if isinstance(x, Poison):
            raise _Poisoned()
        if isinstance(x, Sym):
            return self.cast(x, dtype) if dtype is not None else x
        if isinstance(x, torch.Tensor):
            return self.cast(self.constant(x), dtype) if dtype is not None else self.constant(x)
        if dtype is None:
            dtype = torch.result_type(torch.empty(()), x) if isinstance(x, float) else \
                torch.bool if isinstance(x, bool) else torch.int64
        return self.scalar(x, dtype)

    def cast(self, x, dtype):
        if x.dtype == dtype:
            return x
        return self.emit("cast", [x], dtype, x.shape, dtype=wire(dtype))

    def emit(self, op, args, dtype, shape, /, **attrs):
        if op not in OPS:
            raise Unmappable("needs catalog op %s, which catalog version %d lacks"
                             % (op, CATALOG_VERSION))
        args = [self.sym(a) for a in args]
        return Sym(self.graph.op(op, *[a.value for a in args], **attrs), dtype, shape)

    def reshape(self, x, shape):
        x = self.sym(x)
        if tuple(shape) == x.shape:
            return x
        return self.emit("reshape", [x], x.dtype, shape, shape=[int(d) for d in shape])

    @staticmethod
    def result_type(a, b):
        """torch's promotion of two operands (Sym, tensor or Python number)."""
        def operand(x):
            if isinstance(x, Poison):
                raise _Poisoned()
            if isinstance(x, Sym):
                return torch.empty((1,) if x.shape else (), dtype=x.dtype)
            return x
        return torch.result_type(operand(a), operand(b))

    # ---- the walk -----------------------------------------------------------------------------
    def run(self, module, placeholders):
        """Lowers every node of `module` (a torch.fx GraphModule).

        `placeholders` lists, in placeholder order, either a torch.Tensor example input (becomes a
        graph input) or ("constant", tensor) (a lifted parameter). Returns (outputs, real outputs):
        the Syms of the program's flattened outputs and the torch values the walk computed.
        """
        # fx keeps a getitem for every result of a multi-output op; unused ones (a pooling's
        # indices, a layer norm's mean) would otherwise become catalog nodes.
        module.graph.eliminate_dead_code()
        self._position = {node: i for i, node in enumerate(module.graph.nodes)}
        real, low = {}, {}
        placeholder_index = 0
        for node in module.graph.nodes:
            if node.op == "placeholder":
                item = placeholders[placeholder_index]
                placeholder_index += 1
                if isinstance(item, tuple):
                    real[node] = item[1]
                    low[node] = item[1]
                else:
                    real[node] = item
                    low[node] = self.input(item.dtype, item.shape)
            elif node.op == "get_attr":
                value = module
                for part in node.target.split("."):
                    value = getattr(value, part)
                real[node] = low[node] = value
            elif node.op == "call_function":
                args = _replace_nodes(node.args, real)
                kwargs = _replace_nodes(node.kwargs, real)
                real[node] = node.target(*args, **kwargs)
                low[node] = self._lower(node, _replace_nodes(node.args, low),
                                        _replace_nodes(node.kwargs, low), real[node])
            elif node.op == "output":
                return _replace_nodes(node.args[0], low), _replace_nodes(node.args[0], real)
            else:
                raise Unmappable("fx node kind %s" % node.op)
        raise Unmappable("the traced graph has no output")

    def _lower(self, node, args, kwargs, real):
        if node.target is operator.getitem:
            # A multi-output op emits the selected result now: blame that op if it cannot.
            source = node.args[0]
            name = op_name(source.target) if isinstance(source, torch.fx.Node) else "getitem"
            if isinstance(args[0], Poison):
                return args[0]
            return self._guarded(name, source, real, lambda: args[0][args[1]])
        name = op_name(node.target)
        overload = isinstance(node.target, torch._ops.OpOverload)
        packet = name.rsplit(".", 1)[0] if overload else name
        random = packet.split(".", 1)[-1].rstrip("_") in RANDOM_OPS
        drawn = packet == "goblin_capture.dropout_mask"  # a mask the node re-seeds: never folded
        if not random and not drawn and _all_constant(args, kwargs) and \
                self._foldable(args, kwargs, real, name):
            return real
        handler = self.handlers.get(name) or self.handlers.get(packet)

        def lower():
            if packet == "aten.copy_" and not self._overwrites_a_private_value(node):
                raise Unmappable("an in-place write to a tensor that is read again afterwards, "
                                 "an input or a view of another tensor (write it out of place)")
            if random:
                raise Unmappable("random numbers cannot match PyTorch's generator (use eval(); "
                                 "F.dropout and nn.Dropout are captured with the catalog's "
                                 "dropout_mask)")
            if handler is None:
                raise Unmappable("no catalog mapping")
            try:
                return handler(self, real, *args, **kwargs)
            except TypeError as unexpected:
                raise Unmappable("a call form the mapping does not know (%s)" % unexpected)
        return self._guarded(name, node, real, lower)

    def _guarded(self, name, node, real, lower):
        try:
            return lower()
        except _Poisoned:
            return _poison_like(self, real)
        except Unmappable as why:
            if node not in self._blamed:
                self._blamed.add(node)
                self.unsupported[name] += 1
            self.reasons.setdefault(name, str(why))
            return _poison_like(self, real)

    def _overwrites_a_private_value(self, node):
        """True when copy_(destination, source) may be lowered as a new value: the destination
        is a tensor an op made (no input, no view of another tensor), no view of it was taken,
        and nothing reads it after the write (as `h += x` on a fresh `h` traces when autograd
        keeps torch 1.13 from functionalizing)."""
        destination = node.args[0]
        if not isinstance(destination, torch.fx.Node) or destination.op != "call_function":
            return False
        rewritten = op_name(destination.target) == "aten.copy_.default"  # `h += x; relu_(h)`
        if rewritten and not self._overwrites_a_private_value(destination) or \
                not rewritten and _returns_an_alias(destination.target):
            return False
        return all(user is node or (not _returns_an_alias(user.target)
                                    and self._position[user] < self._position[node])
                   for user in destination.users)

    def _foldable(self, args, kwargs, real, name):
        if not isinstance(real, torch.Tensor):
            return isinstance(real, (tuple, list))
        if real.dtype not in TORCH_TO_WIRE:
            return True
        handler = self.handlers.get(name) or self.handlers.get(name.rsplit(".", 1)[0])
        if handler is None or real.numel() <= FOLD_LIMIT:
            return True
        sizes = [t.numel() for t in _tensors(args) + _tensors(kwargs)]
        return real.numel() <= max(sizes, default=0)


def _returns_an_alias(target):
    """Whether an fx call target's result may share memory with an argument (a view, an in-place
    op), from its schema's alias annotations; unknown targets are taken to alias."""
    if target is operator.getitem:
        return False  # an element of a multi-output op's results
    schema = getattr(target, "_schema", None)
    if schema is None:
        return True
    return any(result.alias_info is not None for result in schema.returns)


def _replace_nodes(tree, values):
    return map_aggregate(tree, lambda x: values[x] if isinstance(x, torch.fx.Node) else x)


def _tensors(tree):
    found = []
    map_aggregate(tree, lambda x: found.append(x) if isinstance(x, torch.Tensor) else None)
    return found


def _all_constant(args, kwargs):
    symbolic = []
    map_aggregate((args, kwargs), lambda x: symbolic.append(x)
                  if isinstance(x, (Sym, Poison, Multi)) else None)
    return not symbolic


def _poison_like(lowering, real):
    """Stands in for an unmapped result so that the walk goes on and finds every unmapped op."""
    if isinstance(real, torch.Tensor):
        if real.dtype in TORCH_TO_WIRE:
            return lowering.input(real.dtype, real.shape)
        return Poison()
    if isinstance(real, (tuple, list)):
        return [_poison_like(lowering, r) for r in real]
    return Poison()
