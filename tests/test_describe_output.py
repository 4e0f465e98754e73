"""describe's outputs written fast (issue 30: 100,000 entities) are the bytes they were: the records' JSON against
the stdlib's ``json.dumps(indent=2)`` of the records' dicts as kquotactl built them before, on hundreds of entities
of every kind and key (unicode and control-character names, defaults, ips, doubles whose text must stay exact),
offline and from a real KRaft broker; the indented JSON writer against ``json.dumps`` on random data."""

from __future__ import annotations

import io
import json
import math
import random
from typing import Any

import pytest
import yaml

from conftest import run_cli
from kquotactl.core.changes import EntityChange, Outcome, QuotaRecord
from kquotactl.core.entities import DEFAULT, Entity, Name
from kquotactl.core.keys import KEYS, KeyScope, ValueType
from kquotactl.render.jsontext import indented_json
from kquotactl.render.records import render_records

NAMES = [
    "alice",
    "é",
    "名前",
    "\U0001f600",
    "a\tb",
    'q"uote',
    "back\\slash",
    "<default>",
    "line\u2028sep",
    " ",
    "x" * 90,
]
IPS = ["10.0.0.1", "192.0.2.7", "2001:db8::1", "::1"]
LONGS = [1, 1024, 10485760, 2**53, 2**31 - 1]
DOUBLES = [1e-300, 1.5, float(2**53), 0.1 + 0.2, 1e22, 5e-324, 12.5, 100.0, 1 / 3]


def old_json(records: list[QuotaRecord]) -> str:
    """What ``describe -o json`` wrote before: ``json.dump(indent=2, ensure_ascii=False)`` of each record's dict,
    its entity read through :meth:`Entity.components` (the enum values as keys)."""
    data = []
    for r in records:
        d = {
            "entity": {t.value: (None if n is DEFAULT else n) for t, n in r.entity.components().items()},
            "config": dict(r.config),
        }
        if r.unparsed:
            d["not_applied"] = r.to_json()["not_applied"]
        data.append(d)
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def typed(key: str, rnd: random.Random) -> int | float:
    spec = KEYS[key]
    if spec.type is ValueType.DOUBLE:
        return rnd.choice(DOUBLES)
    limit = 2**31 - 1 if spec.type is ValueType.INT else 2**63 - 1
    return min(rnd.choice(LONGS), limit)


def entities(rnd: random.Random, names: list[str], ips: list[str], n: int) -> list[Entity]:
    """``n`` distinct entities of every shape: users, pairs (every default combination), client-ids, ips."""

    def name() -> Name:
        return DEFAULT if rnd.random() < 0.15 else rnd.choice(names) + str(rnd.randrange(1000))

    out: dict[Entity, None] = {Entity(user=DEFAULT): None, Entity(ip=DEFAULT): None, Entity(client_id=DEFAULT): None}
    out[Entity(user=DEFAULT, client_id=DEFAULT)] = None
    while len(out) < n:
        shape = rnd.randrange(4)
        if shape == 0:
            e = Entity(user=name())
        elif shape == 1:
            e = Entity(user=name(), client_id=name())
        elif shape == 2:
            e = Entity(client_id=name())
        else:
            e = Entity(ip=rnd.choice(ips)[:-1] + str(rnd.randrange(1, 10)))
        out[e] = None
    return list(out)


def configs(rnd: random.Random, es: list[Entity], keys: dict[KeyScope, list[str]]) -> dict[Entity, dict]:
    """One to all of each entity's keys, in the canonical key order (as a describe gives them)."""
    out = {}
    for e in es:
        ks = keys[e.kind]
        chosen = set(rnd.sample(ks, rnd.randint(1, len(ks))))
        out[e] = {k: typed(k, rnd) for k in ks if k in chosen}
    return out


def live_keys() -> dict[KeyScope, list[str]]:
    return {kind: [k for k, s in KEYS.items() if s.kind is kind and s.live] for kind in KeyScope}


def test_records_json_is_the_stdlib_text() -> None:
    rnd = random.Random(30)
    es = entities(rnd, NAMES, IPS, 400)
    keys = {kind: [k for k, s in KEYS.items() if s.kind is kind] for kind in KeyScope}  # unenforced keys too
    records = [QuotaRecord(e, c) for e, c in configs(rnd, es, keys).items()]
    double = next(k for k, s in KEYS.items() if s.type is ValueType.DOUBLE)
    ip_key = next(k for k, s in KEYS.items() if s.kind is KeyScope.IP)
    records += [  # the odd ones, which take the general path: not finite, a bool, stored values no broker applies
        QuotaRecord(Entity(user="nan"), {double: math.nan}),
        QuotaRecord(Entity(user="zero"), {double: 0.0, next(iter(KEYS)): 0}),
        QuotaRecord(Entity(user="inf"), {double: math.inf, next(iter(KEYS)): 5}),
        QuotaRecord(Entity(user="bool"), {double: True}),
        QuotaRecord(Entity(ip="10.9.9.9"), {}, unparsed={ip_key: "12abc"}),
        QuotaRecord(Entity(user="unparsed"), {double: 2.5}, unparsed={next(iter(KEYS)): "ten"}),
    ]
    records.sort(key=lambda r: r.entity.sort_key())
    out = io.StringIO()
    render_records(records, "json", out)
    assert out.getvalue() == old_json(records)
    empty = io.StringIO()
    render_records([], "json", empty)
    assert empty.getvalue() == old_json([]) == "[]\n"


def test_entity_json_keeps_components_order() -> None:
    for user in (None, DEFAULT, "u"):
        for client in (None, DEFAULT, "c"):
            for ip in (None, DEFAULT, "10.0.0.1"):
                e = Entity(user=user, client_id=client, ip=ip)
                want = {t.value: (None if n is DEFAULT else n) for t, n in e.components().items()}
                assert list(e.to_json().items()) == list(want.items())


def _random_value(rnd: random.Random, depth: int = 0) -> object:
    scalars = [None, True, False, 0, -7, 2**64, 1e-300, 1.5, -0.0, math.nan, math.inf, "", 'é\n"', "\x00\U0001f600"]
    roll = rnd.random()
    if depth > 3 or roll < 0.45:
        return rnd.choice(scalars)
    if roll < 0.7:
        return {
            rnd.choice(["a", "é", "k\n", "0"]) + str(rnd.randrange(3)): _random_value(rnd, depth + 1) for _ in range(4)
        }
    if roll < 0.8:
        return {rnd.choice([1, 2.5, None, True]): _random_value(rnd, depth + 1)}  # keys json converts itself
    if roll < 0.9:
        return tuple(_random_value(rnd, depth + 1) for _ in range(rnd.randrange(3)))
    return [_random_value(rnd, depth + 1) for _ in range(rnd.randrange(4))]


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_indented_json_is_json_dumps(ensure_ascii: bool) -> None:
    rnd = random.Random(7)
    for _ in range(3000):
        v = _random_value(rnd)
        for indent in (2, 4):
            assert indented_json(v, indent, ensure_ascii) == json.dumps(v, indent=indent, ensure_ascii=ensure_ascii)
    with pytest.raises(TypeError, match="not JSON serializable"):
        indented_json({"a": [1, {"b": object()}]})


@pytest.mark.kafka
def test_describe_outputs_from_a_kraft_broker(kraft) -> None:
    """Hundreds of entities written through the admin API and described by the CLI: the JSON is the stdlib's text
    of what was written (every value as the broker's double gives it back, the keys in kquotactl's order), the
    YAML ``yaml.safe_dump``'s."""
    from kquotactl.backends.kafka.quotas import AdminBackend

    rnd = random.Random(3)
    names = [n for n in NAMES if n.strip() and "\t" not in n]  # (kafka-configs-safe names suffice here)
    written = configs(rnd, entities(rnd, names, IPS, 300), live_keys())
    with AdminBackend.connect(kraft.bootstrap) as b:
        results = b.alter([EntityChange(e, c) for e, c in written.items()])
    assert all(r.outcome is Outcome.APPLIED for r in results), [r for r in results if r.outcome is not Outcome.APPLIED]
    expected = [
        {
            "entity": {t.value: (None if n is DEFAULT else n) for t, n in e.components().items()},
            "config": {k: float(v) if KEYS[k].type is ValueType.DOUBLE else v for k, v in c.items()},
        }
        for e, c in sorted(written.items(), key=lambda ec: ec[0].sort_key())
    ]
    r = run_cli("--bootstrap-server", kraft.bootstrap, "describe", "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout) == expected
    assert r.stdout == json.dumps(expected, indent=2, ensure_ascii=False) + "\n"
    r = run_cli("--bootstrap-server", kraft.bootstrap, "describe", "-o", "yaml")
    assert r.exit_code == 0, r.stderr
    assert r.stdout == yaml.safe_dump(expected, sort_keys=False, allow_unicode=True, default_flow_style=False)


def test_manifest_config_keys_in_key_order() -> None:
    """The manifest reader sorts an entry's keys only when they are not in the canonical order already: written in
    any order, they come out in it (plans, exports and describe list keys alike)."""
    from kquotactl.manifests.loader import load_texts

    keys = [k for k, s in KEYS.items() if s.kind is KeyScope.CLIENT]
    rnd = random.Random(5)
    for _ in range(50):
        chosen = rnd.sample(keys, rnd.randint(1, len(keys)))
        text = "quotas:\n- entity: {user: a}\n  config: {" + ", ".join(f"{k}: 5" for k in chosen) + "}\n"
        [entry] = load_texts([("m.yaml", text)]).entries
        assert list(entry.config) == [k for k in keys if k in chosen]


def _plan_before(manifest: Any, live: list[QuotaRecord], prune: bool) -> tuple[list[Any], int, int]:
    """make_plan's entity loop before the in-sync shortcut: every entity copied and diffed."""
    from kquotactl.core.plan import EntityDiff, diff_entity, key_diffs

    live_by_entity = {r.entity: r.config for r in live}
    spellings: dict = {}
    for r in live:
        spellings.setdefault(r.entity.address_key(), []).append(r.entity)
    matched, diffs, unchanged, unmanaged = set(), [], 0, 0
    for entry in manifest.entries:
        targets = spellings.get(entry.entity.address_key(), [entry.entity]) if entry.entity.ip is not None else []
        for entity in targets or [entry.entity]:
            matched.add(entity)
            before = dict(live_by_entity.get(entity, {}))
            owned = prune and manifest.owns(entry.entity)
            after = dict(entry.config) if owned else {**before, **entry.config}
            keys = key_diffs(before, after)
            if keys:
                diffs.append(EntityDiff(entity, keys, before, after, str(entry.source), entry.meta()))
            else:
                unchanged += 1
    for r in live:
        if r.entity in manifest or r.entity in matched:
            continue
        if prune and manifest.owns(r.entity):
            d = diff_entity(r.entity, r.config, {})
            if d is not None:
                diffs.append(d)
        else:
            unmanaged += 1
    return diffs, unchanged, unmanaged


@pytest.mark.parametrize("seed", range(12))
def test_plan_is_the_full_diff(seed: int) -> None:
    """make_plan's shortcut for in-sync entities (and its entities keyed by their components) plans what the full
    diff of every entity did: the same changes, in the same order, and the same counts; ips stored under other
    spellings of their address, prune scopes, values equal across int and float, NaN."""
    from kquotactl.core.manifest import Manifest, ManifestEntry, PruneRule, Source
    from kquotactl.core.plan import apply_order, make_plan

    rnd = random.Random(seed)
    keys = {kind: [k for k, s in KEYS.items() if s.kind is kind] for kind in KeyScope}
    es = entities(rnd, ["svc", "app", "é"], ["10.0.0.1", "2001:db8::1"], 120)
    live = []
    for e, c in configs(rnd, es[:80], keys).items():
        if e.ip is not None and e.ip is not DEFAULT and rnd.random() < 0.3:
            e = Entity(ip=str(e.ip).replace("2001:db8::", "2001:DB8:0::"))  # another spelling of the address
        live.append(QuotaRecord(e, {k: float(v) if rnd.random() < 0.3 else v for k, v in c.items()}))
    manifest = Manifest()
    wanted = configs(rnd, es[40:], keys)
    for i, (e, c) in enumerate(wanted.items()):
        current = next((r.config for r in live if r.entity == e), None)
        if current is not None and rnd.random() < 0.6:  # in sync, or in sync but for one key
            c = dict(current)
            if rnd.random() < 0.3:
                k = rnd.choice(list(c))
                c[k] = math.nan if rnd.random() < 0.2 else typed(k, rnd)
        manifest.add(ManifestEntry(e, c, Source("m.yaml", i + 1)))
    manifest.prune.append(PruneRule("users/svc*", Source("m.yaml", 1)))
    live.sort(key=lambda r: r.entity.sort_key())
    for prune in (False, True):
        got = make_plan(manifest, live, prune=prune)
        diffs, unchanged, unmanaged = _plan_before(manifest, live, prune)
        assert got.diffs == sorted(diffs, key=apply_order)
        assert (got.unchanged, got.unmanaged) == (unchanged, unmanaged)
