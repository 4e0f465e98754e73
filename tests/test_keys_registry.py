"""One key registry: ``core/keys.py`` holds every fact about a quota key; nothing else in ``src/`` lists keys.

The scan reads the sources (nothing imported to find them): any string constant outside ``core/keys.py`` that is a
key name, or looks like one (three words and more ending in ``_rate``, or ``*_percentage``), is a second table of
keys or a key the registry lacks, unless :data:`ALLOWED` names it with the reason.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

from kquotactl.core.keys import KEYS, KeyScope, QuotaKey, Sensor, Split, TrafficColumn, ValueType

SRC = Path(__file__).resolve().parent.parent / "src" / "kquotactl"
REGISTRY = "core/keys.py"
#: a name shaped like a quota key: producer_byte_rate, controller_mutation_rate, request_percentage ... (two-word
#: rates such as ``max_rate`` and ``topic_rate`` are report columns: a two-word key, like request_rate, is caught
#: by name once it is in the registry)
KEY_SHAPED = re.compile(r"^[a-z]+(?:_[a-z]+)+_rate$|^[a-z]+_percentage$")

#: (module under src/kquotactl, literal) -> why that module may name the key itself
ALLOWED: dict[tuple[str, str], str] = {
    **{
        ("impact/generate.py", k): "the sample quota set `impact generate` writes: example values, not key facts"
        for k in ("producer_byte_rate", "consumer_byte_rate", "request_rate", "request_percentage")
    },
    ("impact/generate.py", "connection_creation_rate"): "the sample quota set's ip limit (example data)",
    ("testing/demo.py", "request_percentage"): "`make demo`'s kafka-configs command line, shown to the user as typed",
}


def key_literals(root: Path, known: set[str]) -> list[tuple[str, int, str]]:
    """(module, line, literal) for every string constant outside the registry that is or looks like a key."""
    found = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel == REGISTRY:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        exported = {  # __all__ lists Python names (api.change_connection_rate), not keys
            id(c)
            for a in ast.walk(tree)
            if isinstance(a, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in a.targets)
            for c in ast.walk(a.value)
        }
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Constant) and isinstance(node.value, str)) or id(node) in exported:
                continue
            if node.value in known or KEY_SHAPED.match(node.value):
                found.append((rel, node.lineno, node.value))
    return sorted(found)


def test_no_module_but_the_registry_names_a_key() -> None:
    found = key_literals(SRC, set(KEYS))
    wrong = [
        f"{rel}:{line}: {text!r} "
        + ("is a key: take it (or the fact about it) from core/keys.py" if text in KEYS else "is not in the registry")
        for rel, line, text in found
        if (rel, text) not in ALLOWED
    ]
    assert not wrong, "\n".join(wrong)


def test_every_allowed_entry_is_still_needed() -> None:
    found = {(rel, text) for rel, _, text in key_literals(SRC, set(KEYS))}
    assert sorted(set(ALLOWED) - found) == [], "remove allow-list entries that no longer match"


def test_the_scan_finds_tables_comparisons_and_unknown_keys(tmp_path: Path) -> None:
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "keys.py").write_text('KEYS = {"producer_byte_rate": 1}\n')
    (tmp_path / "a.py").write_text(
        'SPLITS = {"producer_byte_rate": 1}\n'
        'def f(key):\n    return key == "share_fetch_byte_rate"\n'
        'X = "max_rate"  # a report column, not a key\n'
        'Y = "set producer_byte_rate=1"  # part of a message, not a key\n'
    )
    assert key_literals(tmp_path, {"producer_byte_rate"}) == [
        ("a.py", 1, "producer_byte_rate"),
        ("a.py", 3, "share_fetch_byte_rate"),
    ]


# -- what the registry feeds: every derived table covers every key -----------------------------------------------


def test_every_key_states_its_split_traffic_and_sensor() -> None:
    """No default: a new key that leaves one out does not construct (mypy and this test both say so)."""
    required = {f.name for f in dataclasses.fields(QuotaKey) if f.default is dataclasses.MISSING}
    assert {"split", "traffic", "sensor"} <= required
    with pytest.raises(TypeError):
        QuotaKey("new_rate", ValueType.LONG, KeyScope.CLIENT, "x/s", "doc")  # type: ignore[call-arg]


def test_derived_tables_cover_every_key() -> None:
    from kquotactl.cli.options import KEYS_HELP
    from kquotactl.core.precedence import STATIC_CONFIGS
    from kquotactl.impact.replay import MODEL_KEYS, NOT_MODELLED, USAGE
    from kquotactl.manifests.loader import json_schema
    from kquotactl.observe.throttled import IP_USAGE
    from kquotactl.observe.throttled import USAGE as SENSORS

    assert sorted([*MODEL_KEYS, *NOT_MODELLED]) == sorted(KEYS) and set(USAGE) == set(MODEL_KEYS)
    sensed = {key for _, key in SENSORS.values()} | {IP_USAGE[1]}
    assert sensed == {k for k, v in KEYS.items() if v.sensor is not None}
    assert set(STATIC_CONFIGS) == {k for k, v in KEYS.items() if v.static_default}
    assert all(k in KEYS_HELP for k in KEYS)
    defs = json_schema()["$defs"]
    client = {k for k, v in KEYS.items() if v.kind is KeyScope.CLIENT}
    assert set(defs["clientConfig"]["properties"]) == client
    assert set(defs["clusterConfig"]["properties"]) == {k for k in client if KEYS[k].split is not Split.REFUSED}
    assert set(defs["ipConfig"]["properties"]) == {k for k, v in KEYS.items() if v.kind is KeyScope.IP}


def test_a_new_key_reaches_the_help_and_the_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    """Adding a key to KEYS is all the help and the schema need (the schema file then needs `make docs`)."""
    from kquotactl.cli import options
    from kquotactl.core import keys
    from kquotactl.manifests import schema

    new = QuotaKey(
        "share_fetch_byte_rate",
        ValueType.LONG,
        KeyScope.CLIENT,
        "bytes/s",
        "doc",
        byte_rate=True,
        split=Split.DIVIDED,
        traffic=TrafficColumn("share_fetch_bytes"),
        sensor=Sensor("ShareFetch", "byte_rate"),
    )
    extended = {**KEYS, new.name: new}
    monkeypatch.setattr(keys, "KEYS", extended)
    monkeypatch.setattr(keys, "CLIENT_KEYS", (*keys.CLIENT_KEYS, new.name))
    monkeypatch.setattr(options, "KEYS", extended)
    monkeypatch.setattr(schema, "KEYS", extended)
    assert "controller_mutation_rate (DOUBLE), share_fetch_byte_rate (LONG, bytes/s;" in options.keys_help()
    text = (SRC / "schema" / "manifest.schema.json").read_text(encoding="utf-8")
    regenerated = schema.with_registry_keys(text)
    assert regenerated != text and regenerated.count('"share_fetch_byte_rate": { "$ref": "#/$defs/byteRate" }') == 2
    assert schema.with_registry_keys(regenerated) == regenerated  # generating again changes nothing
