"""The goblin package's layers, read from its source with the ast module (nothing is imported).

Imports go one way: the goblin-internal import graph (module level, function level and
TYPE_CHECKING imports alike) has no cycle. No private name crosses a module: nothing imports a
`_name` from another goblin module, and `x._name` is read or written only on `self` or `cls`.
Only the transport module imports websockets (docs: the python-websockets shape, a Sans-I/O
protocol layer below one thin transport).
"""

import ast
import subprocess
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set, Tuple

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "goblin"
TRANSPORT = "goblin.transport"
# Underscore names that are public by convention: namedtuple's API.
PUBLIC_UNDERSCORE = {"_replace", "_asdict", "_fields", "_make", "_field_defaults"}
# Private names of other libraries the package reads on purpose, each with its reason: the rule
# is about goblin's own privates, and a new foreign one must be added here knowingly.
FOREIGN_PRIVATES = {
    ("goblin.capture_lowering", "torch._ops"): "torch has no public name for OpOverload",
    ("goblin.capture_lowering", "getattr(target, '_schema', None)"):
        "torch has no public name for an OpOverload's schema (its alias annotations)",
    ("goblin.mapped_pages", "getattr(X, '_mmap', None)"):
        "numpy.memmap has no public way to tell that it still holds its mapping",
}


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path = PACKAGE) -> Dict[str, Tuple[Path, ast.Module]]:
    """Every module of the package: name → (path, syntax tree)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        found[module_name(path, root)] = (path, ast.parse(path.read_text(encoding="utf-8"),
                                                         filename=str(path)))
    return found


def resolve(current: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module a `from ... import` names (relative imports resolved)."""
    if node.level == 0:
        return node.module or ""
    base = current.split(".") if is_package else current.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def goblin_imports(name: str, path: Path, tree: ast.Module,
                   known: Set[str]) -> Iterator[Tuple[ast.AST, str, List[str]]]:
    """(node, imported goblin module, names taken from it) for every import of a goblin module,
    wherever it stands (module level, in a function, under TYPE_CHECKING)."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "goblin" or alias.name.startswith("goblin."):
                    yield node, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            target = resolve(name, is_package, node)
            if target != "goblin" and not target.startswith("goblin."):
                continue
            names = [alias.name for alias in node.names]
            submodules = [target + "." + n for n in names if target + "." + n in known]
            rest = [n for n in names if target + "." + n not in known]
            for submodule in submodules:  # `from . import jobs`: the module jobs
                yield node, submodule, []
            if rest or not submodules:
                yield node, target, rest


def private_attributes(tree: ast.Module) -> Iterator[Tuple[int, str]]:
    """(line, text) of every `x._name` where x is not self or cls, and of getattr/setattr/
    hasattr/delattr with a literal private name on anything but self or cls."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and is_private(node.attr) \
                and node.attr not in PUBLIC_UNDERSCORE:
            owner = node.value
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue
            yield node.lineno, "%s.%s" % (ast.unparse(owner), node.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("getattr", "setattr", "hasattr", "delattr") \
                and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) \
                and isinstance(node.args[1].value, str) and is_private(node.args[1].value):
            owner = node.args[0]
            if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
                continue
            yield node.lineno, ast.unparse(node)


def import_graph(found: Dict[str, Tuple[Path, ast.Module]]) -> Dict[str, Set[str]]:
    known = set(found)
    graph: Dict[str, Set[str]] = {name: set() for name in found}
    for name, (path, tree) in found.items():
        for _, target, _ in goblin_imports(name, path, tree, known):
            if target in known and target != name:
                graph[name].add(target)
    return graph


def find_cycle(graph: Dict[str, Set[str]]) -> Optional[List[str]]:
    """One cycle of `graph` as [a, b, ..., a], or None (depth-first search, three colours)."""
    state: Dict[str, int] = {}  # 1: on the current path, 2: done
    path: List[str] = []

    def visit(node: str) -> Optional[List[str]]:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


FOUND = modules()


def test_the_package_is_found():
    assert {"goblin", "goblin.client", "goblin.wire", TRANSPORT} <= set(FOUND)


def test_no_private_name_is_imported_from_another_goblin_module():
    known = set(FOUND)
    bad = ["%s:%d imports %s from %s" % (path.name, node.lineno, n, target)
           for name, (path, tree) in FOUND.items()
           for node, target, names in goblin_imports(name, path, tree, known)
           for n in names if is_private(n)]
    bad += ["%s:%d imports the private module %s" % (path.name, node.lineno, target)
            for name, (path, tree) in FOUND.items()
            for node, target, _ in goblin_imports(name, path, tree, known)
            if any(is_private(part) for part in target.split("."))]
    assert bad == []


def test_private_attributes_are_touched_only_on_self_or_cls():
    bad = ["%s:%d %s" % (name, line, text)
           for name, (_, tree) in FOUND.items() for line, text in private_attributes(tree)
           if (name, text) not in FOREIGN_PRIVATES]
    assert bad == []


def test_the_goblin_import_graph_has_no_cycle():
    assert find_cycle(import_graph(FOUND)) is None


def test_only_the_transport_imports_websockets():
    importers = set()
    for name, (_, tree) in FOUND.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.Import) and any(
                    a.name == "websockets" or a.name.startswith("websockets.")
                    for a in node.names):
                importers.add(name)
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and (
                    node.module == "websockets" or node.module.startswith("websockets.")):
                importers.add(name)
    assert importers == {TRANSPORT}


def test_tests_touch_no_private_attribute():
    """Tests use the public API or the protocol layer, never a client's (or module's) privates."""
    tests = Path(__file__).resolve().parent
    bad = ["%s:%d %s" % (path.name, line, text) for path in sorted(tests.rglob("*.py"))
           for line, text in private_attributes(ast.parse(path.read_text(encoding="utf-8")))]
    assert bad == []


def test_an_unmarked_test_cannot_start_a_process():
    """conftest.py keeps the split true: without pytest.mark.integration, no process starts."""
    with pytest.raises(AssertionError, match="has no pytest.mark.integration"):
        subprocess.run(["true"], check=False)


# The checks themselves, on small made-up packages: each one can fail.

def write_package(tmp_path: Path, files: Dict[str, str]) -> Path:
    root = tmp_path / "goblin"
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_a_cycle_through_a_function_level_import_is_found(tmp_path):
    root = write_package(tmp_path, {
        "__init__.py": "",
        "a.py": "from .b import f\n",
        "b.py": "def f():\n    from . import c\n",
        "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from goblin.a import X\n",
    })
    cycle = find_cycle(import_graph(modules(root)))
    assert cycle is not None and set(cycle) == {"goblin.a", "goblin.b", "goblin.c"}


def test_an_acyclic_package_passes_and_relative_imports_resolve(tmp_path):
    root = write_package(tmp_path, {
        "__init__.py": "from .client import Client\n",
        "client.py": "from .protocol.session import Session\n",
        "protocol/__init__.py": "from .session import Session\n",
        "protocol/session.py": "from ..errors import E\nfrom . import frames\n",
        "protocol/frames.py": "from ..errors import E\n",
        "errors.py": "class E(Exception): pass\n",
    })
    graph = import_graph(modules(root))
    assert graph["goblin.protocol.session"] == {"goblin.errors", "goblin.protocol.frames"}
    assert find_cycle(graph) is None


@pytest.mark.parametrize("source, found", [
    ("x = other._field\n", True),
    ("client._request({})\n", True),
    ("a.b._c = 1\n", True),
    ("getattr(client, '_done')\n", True),
    ("self._x = 1\ncls._y\n", False),
    ("x.__class__\nt._replace(a=1)\n", False),
])
def test_private_attributes_outside_self_are_found(source, found):
    assert bool(list(private_attributes(ast.parse(source)))) == found


def test_a_private_import_is_found(tmp_path):
    root = write_package(tmp_path, {"__init__.py": "", "a.py": "from .b import _helper, ok\n",
                                    "b.py": "def _helper(): pass\ndef ok(): pass\n"})
    found = modules(root)
    names = [n for name, (path, tree) in found.items()
             for _, _, taken in goblin_imports(name, path, tree, set(found)) for n in taken]
    assert [n for n in names if is_private(n)] == ["_helper"]
