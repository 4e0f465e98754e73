"""No user-facing text names a file of the repository: a pip user has no ``docs/``, README or Makefile.

Scanned: every string literal in ``src/kquotactl`` that is not a docstring (error messages, warnings, printed
text), every command's ``--help`` (docstrings of commands, option help, epilogs) and every man page as rendered.
Not scanned: ``docsgen.py``, the generator that writes the repository's own files (``man/``, ``docs/cli.md``).
Point users at ``kquotactl ... --help`` or ``man kquotactl-...`` instead.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from kquotactl.cli import docsgen

SRC = Path(__file__).resolve().parent.parent / "src" / "kquotactl"
REPO_PATH = re.compile(
    r"(?<![\w.~/-])(?:docs|man|tests|scripts|bench|completions|changelog\.d|src)/"
    r"|README|CHANGELOG|Makefile|\bmake (?:setup|docs|docs-check|test|demo|lint|lock)\b|\b[\w-]+\.md\b"
)
SKIP = {"docsgen.py"}


def _literals(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


def test_the_pattern_catches_repository_paths() -> None:
    for bad in ("see docs/contexts.md", "(see README)", "make setup installs one", "contexts.md", "man/x.1"):
        assert REPO_PATH.search(bad), bad
    for fine in ("man kquotactl-config", "kquotactl config --help", "~/.config/kquotactl/config.yaml", "10MiB/s"):
        assert not REPO_PATH.search(fine), fine


def test_no_message_in_the_sources_names_a_repository_file() -> None:
    hits = [
        f"{path.relative_to(SRC)}:{line}: {text[:80]!r}"
        for path in sorted(SRC.rglob("*.py"))
        if path.name not in SKIP
        for line, text in _literals(path)
        if REPO_PATH.search(text)
    ]
    assert not hits, "user-facing text names a repository file (point at `kquotactl ... --help` or man):\n" + "\n".join(
        hits
    )


@pytest.mark.parametrize("page", docsgen.pages(), ids=lambda p: p.name)
def test_no_help_or_man_page_names_a_repository_file(page: docsgen.Page) -> None:
    texts = {"--help": docsgen.help_text(page), "man page": docsgen.man_page(page, docsgen.pages())}
    for where, text in texts.items():
        m = REPO_PATH.search(text)
        assert m is None, (
            f"{page.name} {where} names a repository file: ...{text[max(0, m.start() - 60) : m.end() + 20]}..."
        )
