"""The manifest's JSON Schema: its key lists generated from the key registry (``core/keys.py``), the rest hand-written.

``kquotactl/schema/manifest.schema.json`` is checked in and shipped (editors and CI read it). Its three key lists
(``clientConfig``, ``clusterConfig``, ``ipConfig``) are rewritten here from :data:`~kquotactl.core.keys.KEYS` by
``make docs`` (:mod:`kquotactl.cli.docsgen`) and checked by ``make docs-check``; everything else in the file is
kept as written. Pure: text in, text out.
"""

from __future__ import annotations

import json

from kquotactl.core.keys import KEYS, KeyScope, QuotaKey, Split, ValueType

SCHEMA_FILE = "schema/manifest.schema.json"  # inside the kquotactl package

_TYPE_DEFS = {ValueType.LONG: "long", ValueType.DOUBLE: "double", ValueType.INT: "int"}


def key_lists() -> dict[str, list[QuotaKey]]:
    """Each key list of the schema (a ``$defs`` name) and its keys: live keys first, then the offline-only ones."""

    def of(scope: KeyScope, cluster: bool = False) -> list[QuotaKey]:
        keys = [k for k in KEYS.values() if k.kind is scope and not (cluster and k.split is Split.REFUSED)]
        return sorted(keys, key=lambda k: not k.live)

    return {
        "clientConfig": of(KeyScope.CLIENT),
        "clusterConfig": of(KeyScope.CLIENT, True),
        "ipConfig": of(KeyScope.IP),
    }


def _property(key: QuotaKey, indent: str) -> str:
    ref = f'"$ref": "#/$defs/{"byteRate" if key.byte_rate else _TYPE_DEFS[key.type]}"'
    if key.live:
        return f"{{ {ref} }}"
    note = f"The {key.draft} draft key: stock Apache Kafka brokers ignore it (they enforce {key.shipped_instead})."
    inner = indent + "  "
    return f'{{\n{inner}{ref},\n{inner}"description": {json.dumps(note, ensure_ascii=False)}\n{indent}}}'


def _properties(keys: list[QuotaKey], indent: str) -> str:
    """A ``properties`` object as the file writes it: one key inline, several one per line."""
    inner = indent + "  "
    entries = [f'"{k.name}": {_property(k, inner)}' for k in keys]
    if len(entries) == 1 and "\n" not in entries[0]:
        return f"{{ {entries[0]} }}"
    return "{\n" + ",\n".join(inner + e for e in entries) + f"\n{indent}}}"


def _object_end(text: str, start: int) -> int:
    """The index of the ``}`` closing the JSON object that opens at ``text[start]``."""
    depth, in_string, escaped = 0, False, False
    for i in range(start, len(text)):
        c = text[i]
        if in_string:
            escaped, in_string = (False, True) if escaped else (c == "\\", c != '"')
        elif c == '"':
            in_string = True
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced JSON object")


def with_registry_keys(text: str) -> str:
    """``text`` (the schema file) with each key list's ``properties`` generated from the registry."""
    for name, keys in key_lists().items():
        at = text.index('"properties": ', text.index(f'"{name}": {{'))
        indent = " " * (at - text.rindex("\n", 0, at) - 1)
        start = at + len('"properties": ')
        text = text[:start] + _properties(keys, indent) + text[_object_end(text, start) + 1 :]
    return text
