"""Help text that fits the terminal: click's paragraph wrapping, without breaking words at hyphens (an option
name such as ``--bootstrap-server`` is never cut in two) and with over-long example lines folded the way a shell
reads them (`` \\`` continuations; a trailing ``# comment`` moves to its own line above the command).

:func:`install` puts :func:`wrap_text` in place of ``click.formatting.wrap_text``, which click's help formatter
calls for every paragraph and option description.
"""

from __future__ import annotations

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


def install() -> None:
    click.formatting.wrap_text = wrap_text
