"""Help text that fits the terminal: click's paragraph wrapping, without breaking words at hyphens (an option
name such as ``--bootstrap-server`` is never cut in two) and with over-long example lines folded the way a shell
reads them (`` \\`` continuations; a trailing ``# comment`` moves to its own line above the command).

:class:`HelpFormatter` is click's formatter with :func:`wrap_text` in place of ``click.formatting.wrap_text`` while
it writes (click's formatter calls that module function for every paragraph, option description and usage line);
kquotactl's commands use it through their context class (:class:`kquotactl.cli.groups.AppContext`), so importing
kquotactl never changes the help of another click program in the same process.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import click.formatting

CONTINUATION_INDENT = "    "


def fold_command_line(line: str, width: int) -> list[str]:
    """An example command line of more than ``width`` columns as several lines a shell runs the same."""
    if len(line) <= width:
        return [line]
    indent = line[: len(line) - len(line.lstrip())]
    code, comment = line, ""
    hash_at = line.find("  # ")
    if hash_at > 0:
        code, comment = line[:hash_at].rstrip(), line[hash_at:].strip()
    out = [indent + comment] if comment else []
    words = _shell_words(code.strip())
    current = indent
    for word in words:
        candidate = word if current.strip() == "" else f"{current} {word}"
        if current.strip() and len(candidate) + 2 > width:
            out.append(current + " \\")
            current = indent + CONTINUATION_INDENT + word
        else:
            current = candidate if current.strip() else indent + word
    out.append(current)
    return out


def _shell_words(code: str) -> list[str]:
    """Split at spaces outside quotes (the pieces keep their quotes)."""
    words, current, quote = [], "", ""
    for c in code:
        if quote:
            quote = "" if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c == " ":
            if current:
                words.append(current)
            current = ""
            continue
        current += c
    if current:
        words.append(current)
    return words


def wrap_text(
    text: str,
    width: int = 78,
    initial_indent: str = "",
    subsequent_indent: str = "",
    preserve_paragraphs: bool = False,
) -> str:
    """``click.formatting.wrap_text`` with words kept whole and example blocks folded (see the module doc)."""
    from click._textwrap import TextWrapper

    text = text.expandtabs()
    wrapper = TextWrapper(
        width,
        initial_indent=initial_indent,
        subsequent_indent=subsequent_indent,
        replace_whitespace=False,
        break_on_hyphens=False,
        break_long_words=False,
    )
    if not preserve_paragraphs:
        return wrapper.fill(text)
    paragraphs: list[tuple[int, bool, list[str]]] = []
    lines: list[str] = []
    indent = 0

    def flush() -> None:
        if lines:
            raw = lines[0].strip() == "\b"
            paragraphs.append((indent, raw, lines[1:] if raw else list(lines)))
            lines.clear()

    for line in text.splitlines():
        if not line:
            flush()
            continue
        if not lines:
            indent = len(line) - len(line.lstrip())
            line = line.lstrip()
        lines.append(line)
    flush()
    out = []
    for par_indent, raw, par in paragraphs:
        with wrapper.extra_indent(" " * par_indent):
            if raw:
                room = width - len(wrapper.initial_indent)
                folded = [piece for line in par for piece in fold_command_line(line, room)]
                out.append(wrapper.indent_only("\n".join(folded)))
            else:
                out.append(wrapper.fill(" ".join(par)))
    return "\n\n".join(out)


@contextmanager
def _our_wrapping() -> Iterator[None]:
    saved = click.formatting.wrap_text
    click.formatting.wrap_text = wrap_text
    try:
        yield
    finally:
        click.formatting.wrap_text = saved


class HelpFormatter(click.HelpFormatter):
    """click's help formatter with kquotactl's wrapping (words whole, example lines folded), for its own commands."""

    def write_usage(self, prog: str, args: str = "", prefix: str | None = None) -> None:
        with _our_wrapping():
            super().write_usage(prog, args, prefix)

    def write_text(self, text: str) -> None:
        with _our_wrapping():
            super().write_text(text)

    def write_dl(self, rows: Iterable[tuple[str, str]], col_max: int = 30, col_spacing: int = 2) -> None:
        with _our_wrapping():
            super().write_dl(rows, col_max, col_spacing)
