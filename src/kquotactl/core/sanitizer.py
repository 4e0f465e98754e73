"""Kafka's ``org.apache.kafka.common.utils.Sanitizer``, exactly.

Users and client-ids are stored in ZooKeeper paths sanitized: UTF-8 bytes in ``[A-Za-z0-9._-]`` stay,
every other byte becomes ``%XX`` with upper-case hex (``URLEncoder`` then ``*``->``%2A``, ``+``->``%20``).
This is *not* :func:`urllib.parse.quote` (which keeps ``~``). The result can never contain ``/``, so a
name cannot escape its entity's znode.
"""

from __future__ import annotations

import re

_ALL_SAFE = re.compile(r"[A-Za-z0-9._-]*")
_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_HEX = "0123456789ABCDEF"


def sanitize(name: str) -> str:
    """Encode ``name`` as Kafka does for znode names and metric tags."""
    if _ALL_SAFE.fullmatch(name):
        return name  # the common case: nothing to escape
    out: list[str] = []
    for byte in name.encode("utf-8"):
        if byte in _SAFE:
            out.append(chr(byte))
        else:
            out.append("%" + _HEX[byte >> 4] + _HEX[byte & 15])
    return "".join(out)


def desanitize(sanitized: str) -> str:
    """Decode like ``URLDecoder.decode(s, "UTF-8")``: ``%XX`` escapes, and ``+`` is a space.

    Each run of consecutive escapes is one byte string, decoded as Java decodes UTF-8 (see :func:`java_utf8`);
    the two characters after ``%`` are read by ``Integer.parseInt(.., 16)``, which takes a sign and any Unicode
    digit (``%+F`` is byte 15). Raises :class:`ValueError` for a malformed escape, as Java raises
    ``IllegalArgumentException``.
    """
    if "%" not in sanitized and "+" not in sanitized:
        return sanitized
    out: list[str] = []
    run = bytearray()
    i, n = 0, len(sanitized)
    while i < n:
        ch = sanitized[i]
        if ch == "%":
            if i + 2 >= n:
                raise ValueError("URLDecoder: Incomplete trailing escape (%) pattern")
            run.append(_escape_byte(sanitized[i + 1 : i + 3]))
            i += 3
            continue
        if run:
            out.append(java_utf8(bytes(run)))
            run.clear()
        out.append(" " if ch == "+" else ch)
        i += 1
    if run:
        out.append(java_utf8(bytes(run)))
    return "".join(out)


_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def _escape_byte(pair: str) -> int:
    """The byte ``Integer.parseInt(pair, 16)`` gives for the two characters after a ``%``."""
    if pair[0] in _HEX_DIGITS and pair[1] in _HEX_DIGITS:
        return int(pair, 16)
    sign, digits = (-1 if pair[0] == "-" else 1, pair[1:]) if pair[0] in "+-" else (1, pair)
    from kquotactl.core.javafmt import java_digit

    values = [java_digit(c, 16) for c in digits]
    if any(v < 0 for v in values):
        raise ValueError(f"URLDecoder: Illegal hex characters in escape (%) pattern - {pair}")
    value = 0
    for v in values:
        value = value * 16 + v
    value *= sign
    if value < 0:
        raise ValueError("URLDecoder: Illegal hex characters in escape (%) pattern - negative value")
    return value


def _continuation(b: int) -> bool:
    return b & 0xC0 == 0x80


def java_utf8(data: bytes) -> str:
    """``new String(data, UTF_8)``: valid UTF-8 as Python decodes it; malformed input replaced by U+FFFD per
    *Java's* malformed lengths, which differ from Python's (``ED AD`` is one replacement in Java, two in Python)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    out: list[str] = []
    i, n = 0, len(data)
    while i < n:
        b1 = data[i]
        if b1 < 0x80:
            out.append(chr(b1))
            i += 1
        elif b1 >> 5 == 0b110 and b1 & 0x1E:  # two bytes, C2..DF
            if i + 1 < n and _continuation(data[i + 1]):
                out.append(bytes(data[i : i + 2]).decode("utf-8"))
                i += 2
            else:
                out.append(_REPLACEMENT)
                i += 1
        elif b1 >> 4 == 0b1110:  # three bytes
            b2 = data[i + 1] if i + 1 < n else None
            b3 = data[i + 2] if i + 2 < n else None
            if b2 is None or (b1 == 0xE0 and b2 & 0xE0 == 0x80) or not _continuation(b2):
                out.append(_REPLACEMENT)
                i += 1
            elif b3 is None or not _continuation(b3):
                out.append(_REPLACEMENT)  # a valid two-byte prefix, then the end or a non-continuation
                i += 2
            else:
                c = ((b1 & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
                out.append(_REPLACEMENT if 0xD800 <= c <= 0xDFFF else chr(c))
                i += 3
        elif b1 >> 3 == 0b11110:  # four bytes
            length = 1
            if b1 <= 0xF4 and i + 1 < n:
                b2 = data[i + 1]
                if _continuation(b2) and not (b1 == 0xF0 and b2 < 0x90) and not (b1 == 0xF4 and b2 >= 0x90):
                    length = 2
                    if i + 2 < n and _continuation(data[i + 2]):
                        length = 3
                        if i + 3 < n and _continuation(data[i + 3]):
                            length = 4
            if length == 4:
                out.append(bytes(data[i : i + 4]).decode("utf-8"))
            else:
                out.append(_REPLACEMENT)
            i += length
        else:
            out.append(_REPLACEMENT)
            i += 1
    return "".join(out)


_REPLACEMENT = "\ufffd"
