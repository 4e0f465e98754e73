"""Java number formatting and collection order, for byte-compatible output.

kafka-configs prints quota values with ``java.lang.Double.toString`` and iterates Java hash maps, so
matching its output means emulating both. Pure functions, no I/O.
"""

from __future__ import annotations

import functools
import math
import sys
from array import array
from collections.abc import Callable, Iterable
from typing import TypeVar

from kquotactl.core.javahashmap import java_hashmap_layout, java_string_compare

K = TypeVar("K")
_UTF16_NATIVE = "utf-16-le" if sys.byteorder == "little" else "utf-16-be"


def java_digit(ch: str, radix: int) -> int:
    """``Character.digit(char, radix)`` for radix 10 or 16: any Unicode decimal digit of the Basic Multilingual Plane
    (Java's parsers read UTF-16 ``char``s, so a supplementary character is two surrogates, never a digit), plus the
    ASCII and full-width letters for radix 16; -1 otherwise."""
    import unicodedata

    if ch <= "9" and ch >= "0":
        return ord(ch) - 48
    if radix == 16:
        if "a" <= ch.lower() <= "f" and ch.isascii():
            return ord(ch.lower()) - 87
        if "\uff21" <= ch <= "\uff26" or "\uff41" <= ch <= "\uff46":  # full-width A-F / a-f
            return (ord(ch) & 0x1F) + 9
    if ord(ch) > 0xFFFF:
        return -1
    return unicodedata.decimal(ch, -1)


def double_to_string(x: float) -> str:
    """``Double.toString``: plain decimal for 1e-3 <= |x| < 1e7, otherwise ``d.dddE±n``.

    Uses Python's shortest round-trip digits, which equal JDK 19+ and nearly always JDK 8-17.
    """
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    ax = abs(x)
    digits, exp = _shortest_digits(ax)  # ax = 0.d1d2d3... x 10^exp
    if 1e-3 <= ax < 1e7:
        if exp <= 0:
            text = "0." + "0" * (-exp) + digits
        elif exp >= len(digits):
            text = digits + "0" * (exp - len(digits)) + ".0"
        else:
            text = digits[:exp] + "." + digits[exp:]
        return sign + text
    mantissa = digits[0] + "." + (digits[1:] or "0")
    return f"{sign}{mantissa}E{exp - 1}"


def _shortest_digits(ax: float) -> tuple[str, int]:
    r = repr(ax)  # shortest round-trip
    if "e" in r or "E" in r:
        m, e = r.lower().split("e")
        exp10 = int(e)
    else:
        m, exp10 = r, 0
    if "." in m:
        ip, fp = m.split(".")
    else:
        ip, fp = m, ""
    if fp == "0":
        fp = ""
    digits = (ip + fp).lstrip("0")
    lead_zeros = len(ip + fp) - len((ip + fp).lstrip("0"))
    exp = len(ip) + exp10 - lead_zeros
    digits = digits.rstrip("0") or "0"
    return digits, exp


@functools.lru_cache(maxsize=4096)  # called for the same few key names for every entity written
def java_string_hash(s: str) -> int:
    """``String.hashCode`` as a signed 32-bit int (UTF-16 code units)."""
    h = 0
    if s.isascii():  # one UTF-16 code unit per character
        for c in s.encode("ascii"):
            h = (31 * h + c) & 0xFFFFFFFF
    else:
        for c in array("H", s.encode(_UTF16_NATIVE)):
            h = (31 * h + c) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _spread(h: int) -> int:
    h &= 0xFFFFFFFF
    return h ^ (h >> 16)


def _table_size(n: int, initial: int) -> int:
    cap = initial
    while n > cap * 0.75:
        cap *= 2
    return cap


def java_hashmap_order(
    items: Iterable[tuple[K, int]], initial_capacity: int, compare: Callable[[K, K], int] | None = None
) -> list[K]:
    """Iteration order of ``new java.util.HashMap<>(initial_capacity)`` after ``put`` of each distinct
    (key, hashCode) in turn (:mod:`kquotactl.core.javahashmap` emulates the table, resizes and tree bins)."""
    return java_hashmap_layout(items, initial_capacity, compare)[0]


def client_quota_entity_hash(parts: Iterable[tuple[str, str | None]]) -> int:
    """``ClientQuotaEntity.hashCode()``: ``Objects.hash(entries)`` = 31 + the map's hash, i.e. the sum over its
    entries of ``type.hashCode() ^ (name == null ? 0 : name.hashCode())``, as a signed 32-bit int."""
    h = 31
    for entity_type, name in parts:
        h += java_string_hash(entity_type) ^ (java_string_hash(name) if name is not None else 0)
    h &= 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def hashmap_order(keys: Iterable[str], expected_size: int | None = None) -> list[str]:
    """Iteration order of a ``java.util.HashMap<String, _>(n)`` filled with ``keys`` in this order."""
    ks = list(dict.fromkeys(keys))
    n = len(ks) if expected_size is None else expected_size
    return java_hashmap_order(((k, java_string_hash(k)) for k in ks), n, java_string_compare)


def properties_order(keys: Iterable[str]) -> list[str]:
    """Iteration order of ``java.util.Properties`` on JDK 9+ (a ConcurrentHashMap of 16 bins)."""
    ks = list(dict.fromkeys(keys))
    cap = _table_size(len(ks), 16)
    return sorted(ks, key=lambda k: (_spread(java_string_hash(k)) & 0x7FFFFFFF) & (cap - 1))
