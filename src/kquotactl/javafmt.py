"""Java number formatting and collection order, for byte-compatible output.

kafka-configs prints quota values with ``java.lang.Double.toString`` and iterates Java hash maps, so
matching its output means emulating both. Pure functions, no I/O.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable


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
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _spread(h: int) -> int:
    h &= 0xFFFFFFFF
    return h ^ (h >> 16)


def _table_size(n: int, initial: int) -> int:
    cap = initial
    while n > cap * 0.75:
        cap *= 2
    return cap


def hashmap_order(keys: Iterable[str], expected_size: int | None = None) -> list[str]:
    """Iteration order of a ``java.util.HashMap<String, _>(n)`` filled with ``keys`` in this order."""
    ks = list(dict.fromkeys(keys))
    n = expected_size if expected_size is not None else len(ks)
    # HashMap(n): threshold = tableSizeFor(n); table allocated at that size on first put.
    cap = 1
    while cap < max(n, 1):
        cap *= 2
    cap = _table_size(len(ks), cap)
    return sorted(ks, key=lambda k: _spread(java_string_hash(k)) & (cap - 1))


def properties_order(keys: Iterable[str]) -> list[str]:
    """Iteration order of ``java.util.Properties`` on JDK 9+ (a ConcurrentHashMap of 16 bins)."""
    ks = list(dict.fromkeys(keys))
    cap = _table_size(len(ks), 16)
    return sorted(ks, key=lambda k: (_spread(java_string_hash(k)) & 0x7FFFFFFF) & (cap - 1))
