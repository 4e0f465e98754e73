"""The core raises errors that carry data; only the CLI names flags (cli/errorwords.py words them)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from kquotactl.cli.errorwords import worded
from kquotactl.core.errors import InputValueError, InvalidConfigs, MalformedInput, NotAPlan, NothingToChange
from kquotactl.core.explain import parse_observed
from kquotactl.core.grammar import parse_add_config

CORE = Path(__file__).resolve().parent.parent / "src" / "kquotactl" / "core"
FLAG = re.compile(r"--[A-Za-z]")


def _docstrings(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def test_no_string_in_the_core_names_a_flag() -> None:
    """Every string constant in core/ (f-string pieces included; docstrings are documentation, not output)."""
    found = []
    for path in sorted(CORE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docs
                and FLAG.search(node.value)
            ):
                found.append(f"{path.relative_to(CORE.parent)}:{node.lineno}: {node.value!r}")
    assert not found, (
        "core strings naming a flag (raise an error with data; word it in cli/errorwords.py):\n" + "\n".join(found)
    )


def test_the_scan_sees_f_string_pieces() -> None:
    tree = ast.parse('x = f"give --add-config {y}"')
    assert any(isinstance(n, ast.Constant) and FLAG.search(str(n.value)) for n in ast.walk(tree))


@pytest.mark.parametrize(
    ("call", "kind", "source", "value", "cli_text"),
    [
        (
            lambda: parse_add_config("a=="),
            MalformedInput,
            "add_config",
            None,
            "--add-config: bad entry 'a=='.",
        ),
        (
            lambda: parse_add_config("k=1,k=2"),
            MalformedInput,
            "add_config",
            None,
            "--add-config: k given twice ('1', then '2'): give each key once",
        ),
        (
            lambda: parse_observed(["producer_byte_rate=fast"]),
            InputValueError,
            "observed",
            "producer_byte_rate=fast",
            "--observed 'producer_byte_rate=fast': 'fast' is not a rate",
        ),
        (
            lambda: parse_observed(["request_rate"]),
            MalformedInput,
            "observed",
            "request_rate",
            "--observed 'request_rate': expected KEY=RATE, e.g. producer_byte_rate=12MiB",
        ),
    ],
)
def test_input_errors_carry_the_input_and_value_and_the_cli_names_the_flag(
    call: object, kind: type, source: str, value: str | None, cli_text: str
) -> None:
    with pytest.raises(kind) as e:
        call()  # type: ignore[operator]
    assert (e.value.source, e.value.value) == (source, value)
    assert "--" not in str(e.value)
    assert worded(e.value).startswith(cli_text)


def test_the_other_worded_errors() -> None:
    assert worded(InvalidConfigs(["a", "b"], "user alice")) == (
        "Invalid config(s): a,b (not set on user alice; use --if-exists to ignore)"
    )
    assert worded(NothingToChange()) == "nothing to change: give --add-config, --add-config-file or --delete-config"
    assert (
        worded(NotAPlan("p.json"))
        == "p.json is not a kquotactl plan (write one with: kquotactl plan -o json --out FILE)"
    )
