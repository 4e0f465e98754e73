"""Docs that cannot drift: the generated files match the CLI, every command and option is documented (in
the style of sqlite-utils' docs tests), every command's help has examples, and the man pages render
without a groff warning."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kquotactl.cli import docsgen

ROOT = Path(__file__).resolve().parent.parent
PAGES = docsgen.pages()
CLI_MD = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")


def _handwritten_docs() -> str:
    """README and the user docs, without the generated reference."""
    texts = [(ROOT / "README.md").read_text(encoding="utf-8")]
    texts += [p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md")) if p.name != "cli.md"]
    return "\n".join(texts)


def test_generated_files_match_the_cli(tmp_path: Path) -> None:
    """Regenerate everything in a temp dir and compare with what is checked in."""
    docsgen.write(tmp_path)
    generated = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert generated, "nothing generated"
    stale = []
    for rel in generated:
        if (ROOT / rel).read_text(encoding="utf-8") != (tmp_path / rel).read_text(encoding="utf-8"):
            stale.append(rel)
    extra = sorted(p.name for p in (ROOT / "man").glob("*.1") if not (tmp_path / "man" / p.name).exists())
    assert not stale, f"out of date (run `make docs`): {stale}"
    assert not extra, f"man pages of commands that no longer exist (run `make docs`): {extra}"
    assert docsgen.check(ROOT) == []


def test_check_reports_drift(tmp_path: Path) -> None:
    docsgen.write(tmp_path)
    (tmp_path / "man" / "kquotactl-alter.1").write_text("old\n")
    (tmp_path / "man" / "kquotactl-gone.1").write_text("old\n")
    assert docsgen.check(tmp_path) == ["man/kquotactl-alter.1", "man/kquotactl-gone.1 (stale)"]
    assert docsgen.main(["--check", "--out", str(tmp_path)]) == 1
    docsgen.write(tmp_path)
    assert docsgen.check(tmp_path) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_command_is_in_the_reference_and_has_a_man_page(page: docsgen.Page) -> None:
    assert f"\n## {page.name}\n" in CLI_MD
    assert (ROOT / "man" / f"{page.man_name}.1").exists()


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_command_is_described_in_the_handwritten_docs(page: docsgen.Page) -> None:
    """README or docs/*.md mention ``kquotactl ... <command path>`` (options may sit in between)."""
    if not page.path:
        return
    pattern = r"kquotactl\b[^\n`]*?\b" + r"\s+".join(re.escape(p) for p in page.path) + r"\b"
    assert re.search(pattern, _handwritten_docs()), f"`{page.name}` is not described in README.md or docs/*.md"


@pytest.mark.parametrize(("page", "option"), list(docsgen.iter_options(PAGES)), ids=lambda x: getattr(x, "name", x))
def test_every_option_is_documented(page: docsgen.Page, option: str) -> None:
    section = CLI_MD.split(f"\n## {page.name}\n", 1)[1].split("\n## ", 1)[0]
    assert re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", section), f"{page.name} {option} not in docs/cli.md"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_command_help_has_examples(page: docsgen.Page) -> None:
    help_ = page.command.get_help(page.ctx)
    assert "Examples:" in help_, f"{page.name} --help has no Examples: block"
    _, examples = docsgen.split_help(page.command.help)
    assert examples and all(
        e.split()[0] in ("kquotactl", "eval", "KQUOTACTL_CONTEXT=") or "kquotactl" in e for e in examples
    )


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.man_name)
def test_man_pages_have_the_sections_and_render_without_warnings(page: docsgen.Page) -> None:
    text = (ROOT / "man" / f"{page.man_name}.1").read_text(encoding="utf-8")
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "EXAMPLES", "EXIT STATUS", "ENVIRONMENT", "FILES"):
        assert f".SH {section}\n" in text or f'.SH "{section}"\n' in text, section
    groff = shutil.which("groff")
    if groff is None:
        pytest.fail("groff not installed: run scripts/bootstrap.sh (make setup)")
    p = subprocess.run(
        [groff, "-man", "-ww", "-Tutf8", "-z", str(ROOT / "man" / f"{page.man_name}.1")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0 and p.stderr == "", p.stderr


def test_man_page_escapes_roff() -> None:
    assert docsgen._line(".starts with a dot") == "\\&.starts with a dot"
    assert docsgen._line("a\\b --x") == "a\\eb \\-\\-x"
    paragraphs, examples = docsgen.split_help("Title.\n\n  Body\n  text.\n\n  \b\n  Examples:\n    kquotactl a\n")
    assert paragraphs == [(False, "Title."), (False, "Body text.")]
    assert examples == ["kquotactl a"]


def _doc_examples() -> list[tuple[str, list[str]]]:
    """Every ``kquotactl ...`` line in the code blocks of README.md and docs/*.md (hand-written ones)."""
    import shlex

    out = []
    for path in [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "cli.md")]:
        in_code = python = False
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.startswith("```"):
                in_code, python = not in_code, line == "```pycon"  # Python sessions (python-api.md): no commands
                continue
            if python:
                continue
            m = re.search(r"(?:^|[\s(])kquotactl((?:\s.*)?)$", line)
            if not in_code or not m or "<Tab>" in line:
                continue
            text = re.split(r"\s#", m.group(1))[0]
            text = re.split(r"&&|\||;|\s\d?>", text)[0].strip().rstrip(')"')
            if not text:  # "pip install kquotactl" and the like
                continue
            out.append((f"{path.name}:{n}", shlex.split(text)))
    return out


@pytest.mark.parametrize(("where", "args"), _doc_examples(), ids=lambda x: x if isinstance(x, str) else "")
def test_examples_in_the_docs_parse_with_the_current_cli(where: str, args: list[str]) -> None:
    """A renamed option or command breaks this test, not the reader."""
    import click

    from kquotactl.cli.app import cli
    from kquotactl.cli.argv import normalize_argv

    argv, _ = normalize_argv(args, cli)
    try:
        ctx = cli.make_context("kquotactl", list(argv))
        group: click.Command = cli
        rest = [*ctx._protected_args, *ctx.args]
        while rest and isinstance(group, click.Group):
            name, cmd, rest = group.resolve_command(ctx, rest)
            if cmd is None:
                pytest.fail(f"{where}: no command {rest[:1]}")
            ctx = cmd.make_context(name, rest, parent=ctx)
            group = cmd
            rest = [*ctx._protected_args, *ctx.args] if isinstance(cmd, click.Group) else []
    except click.exceptions.Exit:
        pass
    except click.BadParameter as e:  # file names in examples are illustrative; a choice must still be valid
        if isinstance(getattr(e.param, "type", None), click.Choice):
            pytest.fail(f"{where}: kquotactl {' '.join(args)}: {e.format_message()}")
    except click.UsageError as e:
        pytest.fail(f"{where}: kquotactl {' '.join(args)}: {e.format_message()}")
