"""The shape of the package: no import cycles, and a pure core that never reaches the CLI, backends or renderers.

The import graph is read from the sources with :mod:`ast` (nothing is imported): every ``import`` and
``from ... import`` anywhere in a module (function bodies and ``TYPE_CHECKING`` blocks included), relative imports
resolved, and ``from pkg import name`` counted as importing ``pkg.name`` when that is a module.
"""

from __future__ import annotations

import ast
import pkgutil
from collections.abc import Iterable
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src" / "kquotactl"

#: The layers (a module's layer is its first name under ``kquotactl``) and what each may import; see
#: docs/architecture.md. Imports inside one layer are free, but never in a cycle; ``kquotactl`` itself (only
#: ``__version__``) may be imported by any layer.
ALLOWED: dict[str, set[str]] = {
    "core": set(),  # pure: entities, keys, precedence, throttle, plan, lint...
    "manifests": {"core"},
    "connection": {"core"},
    "inputs": {"core"},
    "impact": {"core", "manifests"},
    "backends": {"core", "connection", "manifests"},
    "render": {"core", "manifests", "impact"},
    "observe": {"core", "connection", "impact"},  # top, impact --from-prometheus: the brokers' quota sensors
    "services": {
        "core",
        "manifests",
        "connection",
        "backends",
        "inputs",
        "impact",
        "render",
        "observe",
    },  # observe: apply --stages
    "cli": {
        "core",
        "manifests",
        "connection",
        "backends",
        "inputs",
        "impact",
        "render",
        "services",
        "observe",
        "<root>",
    },
    "testing": {"core", "manifests", "connection", "backends", "cli", "<root>"},
    "api": {
        "core",
        "manifests",
        "connection",
        "backends",
        "observe",
        "services",
    },  # the public Python API: re-exports only
    "__main__": {"cli"},
    "<root>": set(),
}

#: Pure modules (no I/O, no CLI wording): the whole core and the manifest model. Checked transitively.
PURE_PACKAGES = ("kquotactl.core",)
PURE_MODULES = ("kquotactl.core.manifest",)

Graph = dict[str, dict[str, int]]  # module -> {imported module: first line}


def modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is a package), for every module under the package directory ``root``."""
    out: dict[str, tuple[Path, bool]] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


def import_graph(root: Path) -> Graph:
    mods = modules(root)
    top = root.name
    graph: Graph = {}
    for name, (path, is_package) in mods.items():
        here = name.split(".") if is_package else name.split(".")[:-1]  # the package relative imports start from
        found: list[tuple[str, int]] = []  # (dotted name, line); names that are not our modules are dropped below
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    found.append((alias.name, node.lineno))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[: len(here) - (node.level - 1)]
                    module = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    module = node.module or ""
                if module.split(".")[0] != top:
                    continue
                found.append((module, node.lineno))
                for alias in node.names:
                    found.append((f"{module}.{alias.name}", node.lineno))  # counts when that is a submodule
        edges: dict[str, int] = {}
        for target, line in sorted(found, key=lambda f: f[1]):
            if target in mods and target != name:
                edges.setdefault(target, line)
        graph[name] = edges
    return graph


def find_cycle(graph: Graph) -> list[str] | None:
    """One import cycle as ``[a, b, ..., a]``, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(v: str) -> list[str] | None:
        state[v] = 1
        path.append(v)
        for w in sorted(graph[v]):
            if state.get(w) == 1:
                return [*path[path.index(w) :], w]
            if w not in state and (found := visit(w)):
                return found
        path.pop()
        state[v] = 2
        return None

    for v in sorted(graph):
        if v not in state and (found := visit(v)):
            return found
    return None


def path_to(graph: Graph, start: str, wanted: Iterable[str]) -> list[str] | None:
    """The shortest import chain from ``start`` to any module in ``wanted``, or None."""
    goals = set(wanted)
    previous: dict[str, str | None] = {start: None}
    queue = [start]
    for v in queue:
        for w in sorted(graph[v]):
            if w in previous:
                continue
            previous[w] = v
            if w in goals:
                chain = [w]
                while (p := previous[chain[-1]]) is not None:
                    chain.append(p)
                return chain[::-1]
            queue.append(w)
    return None


def describe_chain(graph: Graph, chain: list[str]) -> str:
    return " -> ".join(f"{a} (line {graph[a][b]})" if b else a for a, b in zip(chain, [*chain[1:], None], strict=True))


def layer(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "<root>"


def pure(name: str) -> bool:
    return name in PURE_MODULES or any(name == p or name.startswith(p + ".") for p in PURE_PACKAGES)


GRAPH = import_graph(SRC)


def test_no_import_cycles() -> None:
    cycle = find_cycle(GRAPH)
    assert cycle is None, f"import cycle: {describe_chain(GRAPH, cycle)}"


def test_every_module_is_in_a_known_layer() -> None:
    unknown = sorted(m for m in GRAPH if layer(m) not in ALLOWED)
    assert not unknown, f"modules outside the layers of docs/architecture.md (add them to ALLOWED): {unknown}"


def test_layers_import_only_what_they_may() -> None:
    wrong = [
        f"{a} (line {line}) imports {b}: {layer(a)} may import only {sorted(ALLOWED[layer(a)]) or 'itself'}"
        for a, edges in sorted(GRAPH.items())
        for b, line in edges.items()
        if layer(b) not in (layer(a), "<root>") and layer(b) not in ALLOWED.get(layer(a), set())
    ]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("module", sorted(m for m in GRAPH if pure(m)))
def test_pure_modules_reach_only_pure_modules(module: str) -> None:
    chain = path_to(GRAPH, module, [m for m in GRAPH if not pure(m) and layer(m) != "<root>"])
    assert chain is None, f"pure module {module} reaches an impure one: {describe_chain(GRAPH, chain)}"


def test_the_pure_set_is_not_empty() -> None:
    assert sum(map(pure, GRAPH)) >= 15 and "kquotactl.core.precedence" in GRAPH


def test_no_dynamic_imports() -> None:
    """importlib.import_module / __import__ would hide edges from the graph above."""
    found = []
    for name, (path, _) in modules(SRC).items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                f = node.func
                called = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
                if called in ("import_module", "__import__"):
                    found.append(f"{name}:{node.lineno}")
    assert not found, f"dynamic import (invisible to the import-cycle test): {', '.join(found)}"


def test_every_command_module_is_registered() -> None:
    from kquotactl.cli import commands

    on_disk = sorted(
        m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_") and m.name != "summaries"
    )  # summaries: generated, the --help listing of the commands not loaded
    assert commands.module_names() == on_disk, "give every module of kquotactl/commands a loader in commands.LOADERS"


# -- the checker itself finds what it must ----------------------------------------------------------------------


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pkg"
    for rel, text in {"__init__.py": "", **files}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_checker_sees_relative_local_and_submodule_imports(tmp_path: Path) -> None:
    root = _package(
        tmp_path,
        {
            "a.py": "from . import b\n",  # from pkg import submodule
            "b.py": "def f():\n    from .sub.c import x\n",  # function-local, relative, two levels
            "sub/__init__.py": "",
            "sub/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..d import y\n",
            "d.py": "import pkg.a\n",
            "e.py": "from pkg.sub import nothing_here\nimport os\n",
        },
    )
    graph = import_graph(root)
    assert graph["pkg.a"] == {"pkg": 1, "pkg.b": 1}
    assert graph["pkg.b"] == {"pkg.sub.c": 2}
    assert graph["pkg.sub.c"] == {"pkg.d": 3}
    assert graph["pkg.e"] == {"pkg.sub": 1}
    assert find_cycle(graph) == ["pkg.a", "pkg.b", "pkg.sub.c", "pkg.d", "pkg.a"]
    assert path_to(graph, "pkg.b", ["pkg.a"]) == ["pkg.b", "pkg.sub.c", "pkg.d", "pkg.a"]


def test_checker_passes_an_acyclic_package(tmp_path: Path) -> None:
    root = _package(tmp_path, {"a.py": "from pkg import b\n", "b.py": "from .c import z\n", "c.py": "z = 1\n"})
    assert find_cycle(import_graph(root)) is None


def test_every_package_directory_has_an_init() -> None:
    """A namespace package cannot be imported from a zip (``spark-submit --py-files kquotactl.zip``)."""
    missing = [
        str(d.relative_to(SRC))
        for d in [SRC, *SRC.rglob("*")]
        if d.is_dir() and d.name != "__pycache__" and any(d.glob("*.py")) and not (d / "__init__.py").exists()
    ]
    assert not missing, f"package directories without __init__.py: {missing}"


# -- callers use the backend interface, never the concrete backend ------------------------------------------------

#: what a backend is called (``QuotaBackend.name``); a test of it outside backends/ is a branch on the concrete class
BACKEND_NAMES = frozenset({"zookeeper", "admin", "manifest"})


def _mentions_backend(node: ast.AST) -> bool:
    """Whether an expression names a backend: a name or attribute (``state.backend(ctx)`` too) spelled *backend*."""
    for sub in ast.walk(node):
        spelled = sub.id if isinstance(sub, ast.Name) else sub.attr if isinstance(sub, ast.Attribute) else ""
        if "backend" in spelled.lower():
            return True
    return False


def backend_probes(source: str) -> list[tuple[int, str]]:
    """Where ``source`` reaches past the backend interface: getattr/hasattr on a backend, isinstance against a
    backend class, a comparison of a ``.name`` with a backend's name (``source.name == "admin"``)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            if node.func.id in ("getattr", "hasattr") and _mentions_backend(node.args[0]):
                found.append((node.lineno, f"{node.func.id}() on a backend"))
            elif node.func.id in ("isinstance", "issubclass") and len(node.args) == 2:
                classes = [
                    n.id if isinstance(n, ast.Name) else n.attr
                    for n in ast.walk(node.args[1])
                    if isinstance(n, ast.Name | ast.Attribute)
                ]
                if any(c.endswith("Backend") for c in classes):
                    found.append((node.lineno, f"{node.func.id}() against a backend class"))
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            named = any(isinstance(s, ast.Attribute) and s.attr == "name" for s in sides)
            literal = any(isinstance(s, ast.Constant) and s.value in BACKEND_NAMES for s in sides)
            if named and (literal or any(_mentions_backend(s) for s in sides)):
                found.append((node.lineno, "a backend's name compared"))
    return found


def test_callers_use_only_the_backend_interface() -> None:
    """Outside backends/, a backend is used through QuotaBackend's members alone: a capability a caller needs is
    declared there (with its default), so a new backend is a class mypy checks, not a search through callers."""
    found = [
        f"{name}:{line}: {what}"
        for name, (path, _) in modules(SRC).items()
        if layer(name) != "backends"
        for line, what in backend_probes(path.read_text(encoding="utf-8"))
    ]
    assert not found, "reaching past kquotactl.backends.base.QuotaBackend:\n" + "\n".join(found)


def test_the_backend_probe_finder_finds_each_kind() -> None:
    source = """
from kquotactl.backends.kafka.quotas import AdminBackend
def f(backend, source, state, ctx):
    if isinstance(backend, AdminBackend) and backend.controller: pass
    if getattr(backend, "wait_visible", False): pass
    if hasattr(state.backend(ctx), "entity_names"): pass
    if source.name == "admin": pass
    if backend.name != other: pass
    if isinstance(value, str) and getattr(log, "name", "") == "<stdin>": pass
"""
    assert sorted(line for line, _ in backend_probes(source)) == [4, 5, 6, 7, 8]


def test_a_new_backend_is_one_class_with_the_interface_defaults() -> None:
    """What a new backend must implement is abstract (mypy and Python both refuse an incomplete one); every optional
    capability has the default of a backend without it."""
    from kquotactl.backends.base import QuotaBackend
    from kquotactl.core.entities import EntityType

    class Partial(QuotaBackend):
        name = "partial"

        def describe(self, flt=None, *, broker=None):  # type: ignore[no-untyped-def]
            return []

    with pytest.raises(TypeError, match="abstract"):
        Partial()  # type: ignore[abstract]

    class Minimal(Partial):
        def alter(self, changes, **kw):  # type: ignore[no-untyped-def]
            return []

        def broker_ids(self) -> list[int]:
            return []

        def close(self) -> None:
            pass

    b = Minimal()
    assert (b.can_describe, b.asks_each_broker, b.per_key_levels) == (True, False, False)
    assert (b.read_after_write_settle, b.kafka_configs_mode, b.described_from) == (
        0.0,
        "bootstrap",
        "the partial backend",
    )
    assert b.broker_settings(["super.users"]) is None and b.entity_names(EntityType.USER) is None
    b.check_writable()  # nothing to refuse
