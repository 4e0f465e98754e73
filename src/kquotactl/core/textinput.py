"""Where a text input file breaks, in the user's words: the first byte that is not UTF-8, a value quoted short.

Shared by the readers of ``impact`` (traffic tables) and ``explain`` (connection files), so a bad byte reads the
same in both: which byte, on which line, at which byte of that line, and that UTF-8 was expected.
"""

from __future__ import annotations

SHOWN_CHARS = 40  # a value quoted in a message is cut to this many characters


def utf8_error(data: bytes, start: int = 0) -> tuple[int, int, int] | None:
    """``(offset, line, column)`` of the first byte of ``data[start:]`` that is not UTF-8 (offset into ``data``,
    line and column 1-based, the column counted in bytes), or None."""
    try:
        data[start:].decode("utf-8")
    except UnicodeDecodeError as e:
        offset = start + e.start
        line_start = data.rfind(b"\n", 0, offset) + 1
        return offset, data.count(b"\n", 0, offset) + 1, offset - line_start + 1
    return None


def utf8_message(data: bytes, offset: int, column: int) -> str:
    """What is wrong at a bad byte: ``byte 5 (0xE9) is not UTF-8; expected UTF-8 text``."""
    return f"byte {column} (0x{data[offset]:02X}) is not UTF-8; expected UTF-8 text"


def decode_line(raw: bytes) -> str | int:
    """A line's text, or the 1-based byte column of its first byte that is not UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return e.start + 1


def shown(value: object) -> str:
    """A value as a message quotes it: text in quotes (control characters escaped), cut to
    :data:`SHOWN_CHARS` characters; numbers as they are."""
    if isinstance(value, str):
        text = value if len(value) <= SHOWN_CHARS else value[:SHOWN_CHARS] + "…"
        return repr(text)
    return str(value)
