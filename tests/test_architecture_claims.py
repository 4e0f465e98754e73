"""docs/architecture.md's claims, each held by a test that reads the sources (ast; nothing is imported).

The import layers, cycles and the backend interface are in ``test_architecture.py``; the core's flag-free wording
in ``test_core_wording.py``; start-up imports in ``test_cli_core.py``; the key registry in
``test_keys_registry.py``. This file holds the rest: a pure core, services that neither print nor name a flag,
thin commands, each check in one place, and each third-party library in its one home.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from test_architecture import SRC, layer, modules

MODULES = modules(SRC)


def _tree(name: str) -> ast.Module:
    path, _ = MODULES[name]
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def _in(prefix: str) -> list[str]:
    return sorted(n for n in MODULES if n == prefix or n.startswith(prefix + "."))


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string constants that are docstrings (module, class, function) or bare comments-as-strings."""
    out: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for stmt in body:
                if (
                    isinstance(stmt, ast.Expr)
                    and isinstance(stmt.value, ast.Constant)
                    and isinstance(stmt.value.value, str)
                ):
                    out.add(id(stmt.value))
    return out


def _imported_roots(tree: ast.AST) -> Iterator[tuple[str, int]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name.split(".")[0], node.lineno
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            yield node.module.split(".")[0], node.lineno


# -- core: pure -----------------------------------------------------------------------------------------------------

#: Standard-library modules whose use is I/O or process state, which the core never touches.
IO_MODULES = frozenset(
    {"os", "subprocess", "socket", "shutil", "pathlib", "tempfile", "io", "urllib", "http", "select"}
)
IO_CALLS = frozenset({"open", "print", "input"})
IO_METHODS = frozenset({"read_text", "read_bytes", "write_text", "write_bytes", "mkdir", "unlink", "iterdir"})


def core_io(tree: ast.AST) -> list[tuple[int, str]]:
    """Where a module imports a third-party or I/O module, or calls something that reads or writes."""
    found = [
        (line, f"imports {root}")
        for root, line in _imported_roots(tree)
        if root != "kquotactl" and (root not in sys.stdlib_module_names or root in IO_MODULES)
    ]
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in IO_CALLS:
                found.append((node.lineno, f"calls {f.id}()"))
            elif isinstance(f, ast.Attribute) and f.attr in IO_METHODS:
                found.append((node.lineno, f"calls .{f.attr}()"))
    return sorted(found)


def test_the_core_does_no_io_and_imports_only_the_standard_library() -> None:
    """ "core: pure: no I/O, no third-party imports beyond the standard library" (a file the user names is read by
    the layer that knows where it came from: connection/, inputs.py, manifests/)."""
    found = [f"{name}:{line}: {what}" for name in _in("kquotactl.core") for line, what in core_io(_tree(name))]
    assert not found, "the core reaching outside itself:\n" + "\n".join(found)


def test_the_core_io_finder_finds_each_kind() -> None:
    source = """
import os
from jproperties import Properties
from pathlib import Path
import re, math
def f(p):
    open(p)
    p.read_bytes()
    print("x")
    return re.sub("a", "b", p)
"""
    assert [line for line, _ in core_io(ast.parse(source))] == [2, 3, 4, 7, 8, 9]


# -- services: no printing, no flags ---------------------------------------------------------------------------------

FLAG = re.compile(r"(?<![\w-])--[a-z][a-z-]+")


def service_wording(tree: ast.AST) -> list[tuple[int, str]]:
    """Where a service prints, imports a CLI or terminal library, or holds a string (not a docstring) naming a flag."""
    docs = _docstrings(tree)
    found = [(line, f"imports {root}") for root, line in _imported_roots(tree) if root in ("click", "rich")]
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("print", "input"):
            found.append((node.lineno, f"calls {node.func.id}()"))
        elif isinstance(node, ast.Attribute) and node.attr in ("stdout", "stderr"):
            found.append((node.lineno, f"uses {node.attr}"))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            found.extend((node.lineno, f"names the flag {m.group(0)}") for m in FLAG.finditer(node.value))
    return sorted(found)


def test_a_service_never_prints_and_never_names_a_flag() -> None:
    """ "A service never prints and never names a flag": a Python caller has no flags, and the CLI words errors
    (cli/errorwords.py) from the data they carry."""
    found = [
        f"{name}:{line}: {what}" for name in _in("kquotactl.services") for line, what in service_wording(_tree(name))
    ]
    assert not found, "services speaking the command line's language:\n" + "\n".join(found)


def test_the_service_wording_finder_finds_each_kind() -> None:
    source = '''
"""Mentions --log in a docstring: allowed."""
import click
import sys
def f(x):
    """--resume here too."""
    print(x)
    sys.stderr.write("y")
    raise ValueError("use --max-deletions to allow it")
'''
    assert [line for line, _ in service_wording(ast.parse(source))] == [3, 7, 8, 9]


# -- commands: parse, call one service, render -------------------------------------------------------------------

MAX_COMMAND_LINES = 60


def _is_command(fn: ast.FunctionDef) -> bool:
    """A click command: decorated ``@<group>.command(...)``, ``@click.command(...)`` or ``@<group>.group(...)``."""
    for d in fn.decorator_list:
        call = d.func if isinstance(d, ast.Call) else d
        if isinstance(call, ast.Attribute) and call.attr in ("command", "group"):
            return True
    return False


def command_sizes() -> dict[str, int]:
    """``module:function`` -> lines of each click command's body, its docstring left out."""
    out: dict[str, int] = {}
    for name in _in("kquotactl.cli"):
        for node in ast.walk(_tree(name)):
            if isinstance(node, ast.FunctionDef) and _is_command(node):
                body = node.body
                if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                    body = body[1:]
                lines = (body[-1].end_lineno or body[-1].lineno) - body[0].lineno + 1 if body else 0
                out[f"{name}:{node.name}"] = lines
    return out


def test_the_command_finder_sees_every_command() -> None:
    sizes = command_sizes()
    for command in ("kquotactl.cli.app:alter", "kquotactl.cli.app:describe", "kquotactl.cli.commands.apply:apply"):
        assert command in sizes, sorted(sizes)
    assert len(sizes) >= 20, sorted(sizes)


def test_every_command_is_thin() -> None:
    """ "The click layer only parses, calls one service and renders": no command body over ~60 lines. A longer one
    is orchestration that belongs to a service, callable from Python."""
    long = {c: n for c, n in command_sizes().items() if n > MAX_COMMAND_LINES}
    assert not long, f"commands over {MAX_COMMAND_LINES} lines (docstring excluded): {long}"


# -- each check in one place -----------------------------------------------------------------------------------------

#: docs/architecture.md "Each check in one place": the modules that may call each check (besides its definition).
CHECK_HOMES = {
    "check_live_changes": {"kquotactl.backends.base", "kquotactl.services.quotas", "kquotactl.services.plans"},
    "check_cluster_key": {"kquotactl.services.quotas", "kquotactl.manifests.loader", "kquotactl.core.budget"},
    "check_deletions": {"kquotactl.services.plans", "kquotactl.cli.commands.plan"},
}


def callers(function: str) -> set[str]:
    found = set()
    for name in MODULES:
        for node in ast.walk(_tree(name)):
            if isinstance(node, ast.Call):
                f = node.func
                called = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
                if called == function:
                    found.add(name)
    return found


@pytest.mark.parametrize("check", sorted(CHECK_HOMES))
def test_each_check_runs_in_one_layer(check: str) -> None:
    found = callers(check)
    assert found, f"{check} is never called: the finder is broken or the check is gone"
    assert found <= CHECK_HOMES[check], f"{check} also called from {sorted(found - CHECK_HOMES[check])}"


# -- each third-party library in its home ------------------------------------------------------------------------

#: "the one Kafka admin client", "the only confluent-kafka import", kazoo inside backends/zookeeper/...
LIBRARY_HOMES = {
    "kazoo": {"kquotactl.backends.zookeeper", "kquotactl.testing"},
    "puresasl": {"kquotactl.backends.zookeeper"},
    "kafka": {"kquotactl.backends.kafka.client"},
    "confluent_kafka": {"kquotactl.backends.kafka.drive", "kquotactl.testing"},
    "pyspark": {"kquotactl.impact.spark"},
    "jproperties": {"kquotactl.connection.clientprops"},
    "requests": {"kquotactl.observe"},
    "prometheus_client": {"kquotactl.observe", "kquotactl.services.exporter"},
    "click": {"kquotactl.cli"},
    "grafana_foundation_sdk": {"kquotactl.observe.dashboard"},
    "duckdb": set(),  # a test and bench baseline only: the product never imports it
}


def _home_of(module: str, homes: set[str]) -> bool:
    return any(module == h or module.startswith(h + ".") for h in homes)


def test_each_library_is_imported_only_in_its_home() -> None:
    """One module (or package) per library: swapping the admin client, say, is one module's change."""
    found = [
        f"{name}:{line}: imports {root} (its home: {', '.join(sorted(LIBRARY_HOMES[root]))})"
        for name in MODULES
        for root, line in _imported_roots(_tree(name))
        if root in LIBRARY_HOMES and not _home_of(name, LIBRARY_HOMES[root])
    ]
    assert not found, "\n".join(found)


def test_every_library_home_exists() -> None:
    """A home that names no module any more would let the rule above pass for nothing."""
    for library, homes in LIBRARY_HOMES.items():
        used = {name for name in MODULES for root, _ in _imported_roots(_tree(name)) if root == library}
        assert used or not homes, f"{library} is imported nowhere: drop it from LIBRARY_HOMES"
        for home in homes - {"kquotactl.testing", "kquotactl.services.exporter"}:
            assert any(_home_of(n, {home}) for n in MODULES), f"{home} is no module"


def test_layer_names_match_the_documented_tree() -> None:
    """docs/architecture.md's tree lists every top-level package and module (the layers the tests above use)."""
    doc = (Path(__file__).resolve().parent.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    tree = doc.split("```", 2)[1]
    listed = {line.split()[0].rstrip("/").removesuffix(".py") for line in tree.splitlines()[2:] if line.strip()}
    actual = {layer(n) for n in MODULES} - {"<root>", "__main__", "__init__"}
    assert actual == listed, f"undocumented: {sorted(actual - listed)}; gone: {sorted(listed - actual)}"
