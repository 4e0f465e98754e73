"""kafka-configs' ``--add-config`` / ``--delete-config`` / ``--add-config-file`` grammar, exactly.

Mirrors ``ConfigCommand.parseConfigsToBeAdded`` (Java regex splits with Java ``String.split`` semantics),
jopt-simple's comma splitting for ``--delete-config``. The ``--add-config-file`` itself is read outside the core
(:func:`kquotactl.connection.clientprops.load_properties`): this module does no I/O.
"""

from __future__ import annotations

import re

from kquotactl.core.errors import MalformedInput
from kquotactl.core.keys import java_trim

# Java's \s is ASCII-only: [ \t\n\x0B\f\r]
_PAIR_SPLIT = re.compile(r",(?=[^\]]*(?:\[|$))", re.ASCII)
_KV_SPLIT = re.compile(r"[ \t\n\x0b\f\r]*=[ \t\n\x0b\f\r]*(?=[^\]]*(?:\[|$))", re.ASCII)
_BRACKETS = re.compile(r"\[?\]?")
_KEY_CHARS = re.compile(r"[$a-zA-Z0-9._-]*")

ADD_CONFIG_FORMAT = (
    'Invalid entity config: all configs to be added must be in the format "key=val" or '
    '"key=[val1,val2]" to group values which contain commas.'
)


def _java_split(pattern: re.Pattern[str], text: str, limit: int = 0) -> list[str]:
    """``String.split(regex, limit)``: limit 0 drops trailing empty strings; -1 keeps them.

    Java also drops a leading empty string produced by a zero-width match at index 0 (not the case
    for these patterns, which always consume a character).
    """
    parts = pattern.split(text)
    if limit == 0:
        while parts and parts[-1] == "":
            parts.pop()
        if not parts:
            return [""] if text == "" else []
    return parts


def parse_add_config(text: str) -> dict[str, str]:
    """Split ``k1=v1,k2=[a,b]`` into an ordered mapping.

    A key given twice is refused: kafka-configs keeps the last one silently (``Properties``), which hides a
    copy-paste mistake such as ``producer_byte_rate=5MiB,producer_byte_rate=6``."""
    out: dict[str, str] = {}
    for piece in _java_split(_PAIR_SPLIT, text):
        kv = _java_split(_KV_SPLIT, piece, limit=-1)
        if len(kv) != 2:
            shown = piece if len(piece) <= 60 else piece[:57] + "..."
            raise MalformedInput("add_config", f"bad entry {shown!r}. {ADD_CONFIG_FORMAT}")
        key = java_trim(kv[0])
        value = java_trim(_BRACKETS.sub("", kv[1]))
        if not _KEY_CHARS.fullmatch(key):
            raise MalformedInput("add_config", f"Invalid character found for config key: {key}")
        if key in out:
            raise MalformedInput("add_config", f"{key} given twice ({out[key]!r}, then {value!r}): give each key once")
        out[key] = value
    return out


def parse_delete_config(values: list[str]) -> list[str]:
    """jopt ``withValuesSeparatedBy(',')``: StringTokenizer drops empty tokens; each key trimmed."""
    keys: list[str] = []
    for raw in values:
        tokens = [t for t in raw.split(",") if t != ""]
        if not tokens:
            tokens = [raw]
        for t in tokens:
            k = java_trim(t)
            if k and k not in keys:
                keys.append(k)
    return keys
