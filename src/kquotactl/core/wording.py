"""How what kquotactl prints is worded, pure so the core, the readers and the renderers share one home: plurals, names
shown escaped (one entity reads as one entity), and parse errors (bytes that are not UTF-8, JSON, YAML) said in the
user's words: which byte or character, where, and what was expected."""

from __future__ import annotations


def counted(n: int, singular: str, plural: str | None = None) -> str:
    """``1 entity``, ``2 entities``, ``0 warnings``: the one home of plurals in what kquotactl prints."""
    if n == 1:
        return f"{n} {singular}"
    if plural is None:
        plural = singular[:-1] + "ies" if singular.endswith("y") and singular[-2:-1] not in "aeiou" else singular + "s"
    return f"{n} {plural}"


def escaped(text: str) -> str:
    """``text`` with each character a terminal would not show as itself escaped, as Python writes it (``\\n``,
    ``\\x1b``, ``\\u200b``, ``\\u202e``; a byte that was not UTF-8 as ``\\xe9``): the one escaping of what
    kquotactl prints, so a name holding a newline, a colour code or a right-to-left override cannot redraw a line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escape(c) for c in text)


def _escape(c: str) -> str:
    if "\udc80" <= c <= "\udcff":  # a byte that was not UTF-8 (surrogateescape): the byte, as bytes show it
        return f"\\x{ord(c) - 0xDC00:02x}"
    return repr(c)[1:-1]


def shown_name(name: str) -> str:
    """A name as one readable token: itself when it is plain; quoted, with :func:`escaped`'s escapes, when it is
    blank, holds whitespace or a character that is not printable, or starts with a quote (so that a quoted name is
    never mistaken for a plain one). A user named ``' '`` shows as ``' '``, never as nothing."""
    if name and name.isprintable() and " " not in name and name[0] not in "'\"":  # (a space: the printable blank)
        return name
    quote = "'" if "'" not in name or '"' in name else '"'
    body = escaped(name.replace("\\", "\\\\"))
    return quote + (body.replace(quote, "\\" + quote) if quote == "'" else body) + quote


def not_utf8(text: str) -> str | None:
    """Where a word read from the command line or the environment holds a byte that is not UTF-8 (Python keeps such
    a byte as a lone surrogate, ``'caf\\udce9'``): ``byte 0xE9 at character 4``; None when it is all UTF-8."""
    for i, c in enumerate(text):
        if "\udc80" <= c <= "\udcff":
            return f"byte 0x{ord(c) - 0xDC00:02X} at character {i + 1}"
    return None


def undecodable(data: bytes, start: int) -> str:
    """Where file contents stop being UTF-8 (``start``: :attr:`UnicodeDecodeError.start` over ``data``):
    ``byte 0xE9 on line 2, column 5 is not UTF-8``."""
    line = data.count(b"\n", 0, start) + 1
    column = start - (data.rfind(b"\n", 0, start) + 1) + 1
    return f"byte 0x{data[start]:02X} on line {line}, column {column} is not UTF-8 (save the file as UTF-8)"


#: what Python's JSON parser says -> what was expected, in the user's words
_JSON_WORDS = (
    ("Expecting value", "expected a value (a number, a string in double quotes, true, false, null, [ or {)"),
    ("Expecting property name enclosed in double quotes", "expected a key in double quotes"),
    ("Unterminated string", "a string has no closing double quote"),
    ("Invalid control character", "a control character inside a string (write it as \\n, \\t ...)"),
    ("Invalid \\uXXXX escape", "a \\u escape needs 4 hexadecimal digits"),
    ("Invalid \\escape", "a backslash in a string starts no valid escape (write \\\\ for a backslash)"),
    ("Extra data", "more text after the end of the JSON document"),
    ("Illegal trailing comma", "a comma before a closing bracket"),
)


def json_problem(msg: str, doc: str, line: int, column: int) -> str:
    """A JSON parse error (:class:`json.JSONDecodeError`'s ``msg``, ``doc``, ``lineno``, ``colno``) in words:
    ``line 3, column 7: expected ','``; an empty document is said to be empty."""
    if not doc.strip():
        return "the file is empty (expected a JSON document)"
    words = next((w for head, w in _JSON_WORDS if msg.startswith(head)), None)
    if words is None:
        words = "expected " + msg[len("Expecting ") :] if msg.startswith("Expecting ") else msg[:1].lower() + msg[1:]
        words = words.replace(" delimiter", "")
    return f"line {line}, column {column}: {words}"


def decoded(data: bytes) -> str:
    """``data`` (a file's contents) as UTF-8 text; a :class:`ValueError` saying which byte, on which line and column,
    when it is not UTF-8 (never Python's ``'utf-8' codec can't decode byte 0xe9 in position 5``)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(undecodable(data, e.start)) from None


def record_problem(e: Exception) -> str:
    """What is wrong with a JSON record a file holds (a saved plan, a log line), from the exception reading it raised:
    ``line 1, column 9: expected ','``, ``the field 'changes' is missing``, never a Python exception's name."""
    import json

    if isinstance(e, json.JSONDecodeError):
        return json_problem(e.msg, e.doc, e.lineno, e.colno)
    if isinstance(e, KeyError):
        return f"the field {e.args[0]!r} is missing" if e.args else "a field is missing"
    if isinstance(e, (TypeError, AttributeError)):
        return "a field holds the wrong kind of value (a list, an object, a number or a string)"
    if isinstance(e, ValueError) and ("could not convert" in str(e) or "invalid literal" in str(e)):
        return "a field that holds a number holds something else"
    return str(e)


#: the YAML parser's words (its problem and context, joined) -> what is wrong, in the user's words
_YAML_WORDS = (
    ("expected ',' or '}'", "expected ',' or '}': a '{' is not closed, or a value holds ': ' unquoted"),
    ("expected ',' or ']'", "expected ',' or ']': a '[' is not closed, or a value holds ', ' unquoted"),
    ("expected node content", "a value is missing (a '[' or '{' not closed, or a document that stops early)"),
    ("expected the node content", "a value is missing (a '[' or '{' not closed, or a document that stops early)"),
    ("mapping values are not allowed", "a ': ' where no key can start (quote a value that holds ': ')"),
    ("found character '\\t' that cannot start any token", "a tab: YAML indents with spaces"),
    ("that cannot start any token", "a value starts with a character YAML reserves (quote the value)"),
    ("scanning a quoted scalar", "a quoted value is not closed"),
    ("undefined alias", "an alias '*NAME' that refers to no anchor '&NAME' (quote a value starting with '*')"),
    ("expected <block end>", "the indentation does not line up with the lines above"),
    ("did not find expected key", "the indentation does not line up with the lines above"),
    ("did not find expected '-' indicator", "the indentation of a list does not line up"),
    ("could not find expected ':'", "a key without ':' (or a multi-line key)"),
    ("expected a single document", "more than one document ('---') where one is expected"),
)


def yaml_problem(context: str | None, problem: str | None) -> str:
    """A YAML parse error (PyYAML's ``context`` and ``problem``) in the user's words, the parser's own text when no
    wording is known (its ``'<stream end>'`` said as the end of the file)."""
    text = " ".join(x for x in (context, problem) if x)
    words = next((w for head, w in _YAML_WORDS if head in text), None)
    return words or text.replace("'<stream end>'", "the end of the file").replace("<stream end>", "the end of the file")
