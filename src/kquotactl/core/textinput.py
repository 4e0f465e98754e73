"""Where a text input file breaks, in the user's words: the first byte that is not UTF-8, a value quoted short.

Shared by the readers of ``impact`` (traffic tables) and ``explain`` (connection files), so a bad byte reads the
same in both: which byte, on which line, at which byte of that line, and that UTF-8 was expected.
"""

from __future__ import annotations

SHOWN_CHARS = 40  # a value quoted in a message is cut to this many characters


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


# A number as the readers accept it in text: digits, an optional fraction and exponent; no sign (a minus is
# "negative", said apart), no spaces, no NaN or infinity, no 1_000 or 0x10.
NUMBER = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"

CSV_ERRORS = {
    "unexpected end of data": "a quoted field is never closed (it runs to the end of the file)",
    "',' expected after '\"'": 'a quote inside a quoted field must be doubled ("")',
    "new-line character seen in unquoted field": "a carriage return (\\r) inside a field; put the field in quotes",
    "field larger than field limit": "a field longer than 131,072 characters",
}


def csv_problem(error: Exception) -> str:
    """What Python's CSV reader refused, in words about the file (not about the parser)."""
    text = str(error)
    return next((words for start, words in CSV_ERRORS.items() if text.startswith(start)), "not valid CSV")


def json_problem(error: Exception) -> str:
    """A JSON syntax error in words about the line: where in it, and what the parser expected there."""
    msg = getattr(error, "msg", "") or "not JSON"
    col = getattr(error, "colno", None)
    at = f" at character {col}" if col else ""
    return f"not valid JSON{at}: {msg[0].lower()}{msg[1:]}"
