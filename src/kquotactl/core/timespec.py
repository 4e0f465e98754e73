"""Durations and points in time as a command line writes them (``--since 24h``, ``--until 2026-11-25T10:00:00Z``).

Durations use Prometheus' spelling: one or more ``<number><unit>`` with units ``ms``, ``s``, ``m``, ``h``, ``d``,
``w`` (``90s``, ``1h30m``, ``1.5h``); a bare number is seconds. Points in time are ``now``, epoch seconds, an ISO 8601
date-time (UTC unless it names an offset), or a duration before ``now``. Pure: ``now`` is passed in.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime

from kquotactl.core.errors import UsageError

UNITS: dict[str, float] = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d|w)")
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]+)?")


def parse_duration(text: str, option: str, *, allow_zero: bool = False) -> float:
    """``1h30m`` -> 5400.0 seconds; a duration must be > 0 (``allow_zero``: may be 0). ``option`` names the flag in
    the error."""
    t = text.strip()
    if _NUMBER.fullmatch(t):
        seconds = float(t)
    else:
        pos, seconds = 0, 0.0
        for m in _PART.finditer(t):
            if m.start() != pos:
                break
            seconds += float(m.group(1)) * UNITS[m.group(2)]
            pos = m.end()
        if pos != len(t) or not t:
            raise UsageError(f"{option} {text!r} is not a duration (e.g. 90s, 30m, 24h, 7d, 1h30m)")
    if not (math.isfinite(seconds) and (seconds > 0 or (allow_zero and seconds == 0))):
        raise UsageError(f"{option} {text!r} must be longer than 0 s")
    return seconds


def parse_time(text: str, option: str, now: float) -> float:
    """``now``, epoch seconds, an ISO 8601 date-time (UTC when it names no offset) or a duration ago -> epoch
    seconds."""
    t = text.strip()
    if t == "now":
        return now
    if _NUMBER.fullmatch(t):
        return float(t)
    try:
        when = datetime.fromisoformat(t[:-1] + "+00:00" if t.endswith(("Z", "z")) else t)
    except ValueError:
        when = None
    if when is not None:
        return (when if when.tzinfo is not None else when.replace(tzinfo=UTC)).timestamp()
    try:
        return now - parse_duration(t, option)
    except UsageError:
        raise UsageError(
            f"{option} {text!r} is not a time: give now, epoch seconds, 2026-11-25T10:00:00Z or a duration ago (2h)"
        ) from None
