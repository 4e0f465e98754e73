"""Kafka's ``org.apache.kafka.common.utils.Sanitizer``, exactly.

Users and client-ids are stored in ZooKeeper paths sanitized: UTF-8 bytes in ``[A-Za-z0-9._-]`` stay,
every other byte becomes ``%XX`` with upper-case hex (``URLEncoder`` then ``*``->``%2A``, ``+``->``%20``).
This is *not* :func:`urllib.parse.quote` (which keeps ``~``). The result can never contain ``/``, so a
name cannot escape its entity's znode.
"""

from __future__ import annotations

_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")
_HEX = "0123456789ABCDEF"


def sanitize(name: str) -> str:
    """Encode ``name`` as Kafka does for znode names and metric tags."""
    out: list[str] = []
    for byte in name.encode("utf-8"):
        if byte in _SAFE:
            out.append(chr(byte))
        else:
            out.append("%" + _HEX[byte >> 4] + _HEX[byte & 15])
    return "".join(out)


def desanitize(sanitized: str) -> str:
    """Decode like ``URLDecoder.decode(s, "UTF-8")``: ``%XX`` escapes, and ``+`` is a space.

    Raises :class:`ValueError` for a malformed escape, as Java raises ``IllegalArgumentException``.
    """
    if "%" not in sanitized and "+" not in sanitized:
        return sanitized
    out = bytearray()
    i, n = 0, len(sanitized)
    while i < n:
        ch = sanitized[i]
        if ch == "%":
            if i + 2 >= n:
                raise ValueError("URLDecoder: Incomplete trailing escape (%) pattern")
            pair = sanitized[i + 1 : i + 3]
            if not all(c in "0123456789abcdefABCDEF" for c in pair):
                raise ValueError(f"URLDecoder: Illegal hex characters in escape (%) pattern - {pair}")
            out.append(int(pair, 16))
            i += 3
        elif ch == "+":
            out.append(0x20)
            i += 1
        else:
            out.extend(ch.encode("utf-8"))
            i += 1
    return out.decode("utf-8", errors="replace")
