"""Differential: every value kquotactl would write, checked by Kafka's own validation on every write target.

For random keys, entity kinds and value texts, kquotactl decides (``keys.lookup_key`` + ``keys.parse_value``) and
produces the string it stores in ZooKeeper (``keys.format_value``) and the double an AlterClientQuotas request
carries. Kafka's own classes (``common/QuotaValueOracle.java``, one JVM per version) then judge:

* ZooKeeper-mode brokers and kafka-configs ``--zookeeper`` (2.8, 3.9): ``DynamicConfig.Client/User/Ip.validate``
  of the stored string (ConfigDef types and validators, the key set);
* KRaft controllers (2.8 early access, 3.9, 4.1): ``ClientQuotaControlManager.alterClientQuotas`` of the wire
  double (3.6+: value > 0, integral for LONG/INT, ranges, the key set), and the value of the record it writes.

Soundness: whatever kquotactl accepts, every target accepts, and parses to the very number kquotactl meant.
Completeness: a plain decimal number that every target of every version accepts as typed (kafka-configs
``--zookeeper`` and ``--bootstrap-server``) is accepted by kquotactl with the same value.
"""

from __future__ import annotations

import random
import re
import struct
from typing import Any

import pytest

from fixtures_oracle import NEWEST_VERSION, ORACLE_VERSIONS, assert_no_mismatches, replay_hint
from kquotactl.core.changes import build_change, check_live_changes
from kquotactl.core.entities import Entity
from kquotactl.core.errors import QuotaError
from kquotactl.core.keys import KEYS, KeyScope, format_value, java_trim
from kquotactl.testing.oracle import cases_per_run

ENTITIES = {"users": Entity(user="e"), "clients": Entity(client_id="e"), "ips": Entity(ip="192.0.2.1")}
_PLAIN = re.compile(r"^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$")
_EDGES = [
    0, 1, 2**31 - 1, 2**31, 2**53 - 1, 2**53, 2**53 + 1, 2**63 - 1024, 2**63 - 1, 2**63, 2**64, 10**6, 10**19,
]  # fmt: skip
_ODD = [
    "1d", "1f", "0x10", "0x1p4", "NaN", "Infinity", "-Infinity", " 5 ", "\t7\n", "+5", "5.", ".5", "1_000", "",
    "1e400", "1e-400", "4.9e-324", "2.4703282292062328e-324", "2.4703282292062329e-324", "1.7976931348623157e308",
    "1.7976931348623158e308", "1.7976931348623159e308", "0.000001", "0.0", "-0", "00012", "1e0", "10MiB", "1KB",
    "1e6B", "abc", "1,5", "١٢", "1\u00a0",
]  # fmt: skip


def _text(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.15:
        return rng.choice(_ODD)
    if r < 0.35:  # integers around the type boundaries, and their epsilon neighbourhood
        n = rng.choice(_EDGES) + rng.randint(-3, 3)
        tail = rng.choice(["", "", ".0", ".0000001", ".9999999", ".000001", ".5", "e0"])
        return f"{rng.choice(['', '', '-', '+'])}{n}{tail}"
    if r < 0.55:
        return str(rng.randint(-5, 10 ** rng.randint(1, 20)))
    if r < 0.7:  # decimals, some with exponents
        mant = f"{rng.randint(0, 10**6)}.{rng.randint(0, 10 ** rng.randint(1, 17))}"
        return mant + (f"e{rng.randint(-330, 320)}" if rng.random() < 0.4 else "")
    if r < 0.85:  # any finite double, as Python prints it (shortest repr)
        while True:
            d = struct.unpack("<d", struct.pack("<Q", rng.getrandbits(64)))[0]
            if d == d and abs(d) != float("inf"):
                return repr(d) if rng.random() < 0.8 else repr(abs(d))
    # small integers with units or fractions
    return f"{rng.randint(0, 4096)}{rng.choice(['', '.25', 'KiB', 'MiB', 'MB', 'e3', 'e-3'])}"


def _case(rng: random.Random) -> tuple[str, str, str]:
    key = rng.choice(list(KEYS))
    kind = KEYS[key].kind
    if rng.random() < 0.05:  # a key on the wrong kind of entity
        entity = rng.choice(list(ENTITIES))
    else:
        entity = "ips" if kind is KeyScope.IP else rng.choice(["users", "clients"])
    return key, entity, _text(rng)


def _ours(key: str, entity: str, text: str) -> int | float | None:
    """What kquotactl's live write path (alter, apply) would set: ``build_change`` + ``check_live_changes``."""
    try:
        change = build_change(ENTITIES[entity], {key: text})
        check_live_changes([change])
    except QuotaError:
        return None
    return change.set[key]


def _bits(d: float) -> str:
    return str(struct.unpack("<q", struct.pack("<d", d))[0])


def _request(case: tuple[str, str, str], ours: int | float | None) -> dict[str, Any]:
    key, entity, text = case
    req: dict[str, Any] = {"key": key, "entity": entity, "text": text}
    if ours is not None:
        req["stored"] = format_value(KEYS[key], ours)
        req["wire"] = float(ours)
    return req


def _cases(seed: int) -> tuple[list[tuple[str, str, str]], list[int | float | None]]:
    rng = random.Random(seed)
    cases = [_case(rng) for _ in range(cases_per_run(5000))]
    return cases, [_ours(*c) for c in cases]


def _kafka_reading_of_what_we_write(version: str, answer: dict[str, Any], key: str, ours: int | float) -> Any:
    """What Kafka made of kquotactl's stored string and wire double, normalised to compare with ours."""
    spec = KEYS[key]
    got: dict[str, Any] = {}
    zk = answer.get("zk")
    if zk is not None:
        got["zk"] = (zk["value"] if spec.integral else zk["bits"]) if zk["ok"] else zk["error"]
    kraft = answer["kraft"]
    if version == "2.8":  # the early-access controller validates nothing: it only has to accept
        got["kraft"] = kraft["ok"] or kraft["error"]
    else:
        got["kraft"] = kraft["bits"] if kraft["ok"] else kraft["error"]
    return got


def _expected(version: str, answer: dict[str, Any], key: str, ours: int | float) -> Any:
    spec = KEYS[key]
    want: dict[str, Any] = {}
    if answer.get("zk") is not None:
        want["zk"] = str(int(ours)) if spec.integral else _bits(float(ours))
    want["kraft"] = True if version == "2.8" else _bits(float(ours))
    return want


@pytest.mark.jvm
@pytest.mark.parametrize("version", ORACLE_VERSIONS)
def test_every_value_kquotactl_writes_is_accepted_by_every_target_as_the_same_number(
    kafka_oracle, oracle_seed, version
) -> None:
    cases, ours = _cases(oracle_seed)
    answers = kafka_oracle(version, "QuotaValueOracle").ask_many(
        [_request(c, o) for c, o in zip(cases, ours, strict=True)]
    )
    accepted = [(c, o, a) for c, o, a in zip(cases, ours, answers, strict=True) if o is not None]
    assert len(accepted) > len(cases) // 5, "the generator should give kquotactl plenty of valid values"
    assert_no_mismatches(
        [(c, o) for c, o, _ in accepted],
        (_kafka_reading_of_what_we_write(version, a, c[0], o) for c, o, a in accepted),
        (_expected(version, a, c[0], o) for c, o, a in accepted),
        oracle_seed,
        version,
    )


@pytest.mark.jvm
def test_a_plain_number_every_target_accepts_is_accepted_by_kquotactl_with_the_same_value(
    kafka_oracle, oracle_seed
) -> None:
    cases, ours = _cases(oracle_seed)
    per_version = {
        v: kafka_oracle(v, "QuotaValueOracle").ask_many([_request(c, None) for c in cases]) for v in ORACLE_VERSIONS
    }
    checked = 0
    got, want, shown = [], [], []
    for i, (case, mine) in enumerate(zip(cases, ours, strict=True)):
        if not _PLAIN.match(java_trim(case[2])):
            continue  # units are kquotactl's own; Java literal forms (1d, 0x1p4) are deliberately refused
        answers = [per_version[v][i] for v in ORACLE_VERSIONS]
        targets = [a[t] for a in answers for t in ("text_zk", "text_kraft") if a.get(t) is not None]
        if not all(t["ok"] for t in targets):
            continue
        if per_version[NEWEST_VERSION][i]["text_kraft"]["value"] == "Infinity":
            continue  # 1e400 overflows to Infinity, which Kafka takes for a DOUBLE key: kquotactl refuses it on purpose
        checked += 1
        kraft_bits = per_version[NEWEST_VERSION][i]["text_kraft"]["bits"]
        shown.append(case)
        got.append(None if mine is None else _bits(float(mine)))
        want.append(kraft_bits)
    assert checked > 100, "the generator should give plenty of values every target accepts"
    assert_no_mismatches(shown, got, want, oracle_seed)


# -- a sample on real brokers: the ZooKeeper-mode 3.9 broker's own AlterClientQuotas, and KRaft 4.1 -------------


def _sample(seed: int, n: int = 40) -> dict[Entity, dict[str, int | float]]:
    """``n`` random values kquotactl accepts, each on its own entity."""
    rng = random.Random(seed)
    out: dict[Entity, dict[str, int | float]] = {}
    while len(out) < n:
        key, entity, text = _case(rng)
        value = _ours(key, entity, text)
        if value is None:
            continue
        i = len(out)
        e = {"users": Entity(user=f"u{i}"), "clients": Entity(client_id=f"c{i}"), "ips": Entity(ip=f"192.0.2.{i}")}
        out[e[entity]] = {key: value}
    return out


def _sendable(admin: Any, sample: dict[Entity, dict[str, int | float]]) -> dict[Entity, dict[str, int | float]]:
    """The part of ``sample`` the admin API carries exactly. An integer a double cannot hold (above 2**53) is
    refused before anything is written: the whole sample is tried first, and must write nothing."""
    from kquotactl.backends.kafka.quotas import check_wire_exact
    from kquotactl.core.changes import EntityChange

    exact = {}
    for e, c in sample.items():
        try:
            check_wire_exact([EntityChange(e, c)])
            exact[e] = c
        except QuotaError:
            pass
    if len(exact) < len(sample):
        with pytest.raises(QuotaError, match="cannot be sent exactly: the admin API carries quota values as doubles"):
            admin.alter([EntityChange(e, c) for e, c in sample.items()])
        assert admin.describe() == []  # nothing written
    return exact


@pytest.mark.zookeeper
@pytest.mark.kafka
def test_sample_written_through_a_zookeeper_mode_broker_is_stored_as_kquotactl_would_store_it(
    zkmode, oracle_seed
) -> None:
    from kquotactl.backends.kafka.quotas import AdminBackend
    from kquotactl.backends.zookeeper.backend import ZooKeeperBackend
    from kquotactl.backends.zookeeper.session import ZkSettings
    from kquotactl.core.changes import EntityChange

    with AdminBackend.connect(zkmode.bootstrap) as admin:
        sample = _sendable(admin, _sample(oracle_seed))
        results = admin.alter([EntityChange(e, c) for e, c in sample.items()])
    assert [r.message for r in results if r.outcome.value != "applied"] == [], replay_hint(oracle_seed)
    with ZooKeeperBackend(ZkSettings(connect=zkmode.zookeeper)) as zk:
        raw = {r.entity: dict(r.raw or {}) for r in zk.describe()}

    # ZkAdminManager formats what it got on the wire: (v + 1e-6).toLong for LONG/INT, the very string kquotactl
    # writes; Double.toString for DOUBLE, which before JDK 19 is not always the shortest spelling (4.9E-324,
    # 9.1061422551084109E17) while kquotactl writes the shortest (JDK 19+): the same double either way.
    def same(k: str, stored: str, value: int | float) -> bool:
        if KEYS[k].integral:
            return stored == format_value(KEYS[k], float(value))
        return float(stored) == float(format_value(KEYS[k], value)) == float(value)

    assert raw.keys() == sample.keys(), replay_hint(oracle_seed)
    bad = [
        (e, raw[e], c)
        for e, c in sample.items()
        if raw[e].keys() != c.keys() or not all(same(k, raw[e][k], v) for k, v in c.items())
    ]
    assert not bad, f"{replay_hint(oracle_seed)}: {bad}"


@pytest.mark.kafka
def test_sample_written_to_kraft_is_served_back_as_the_same_number(kraft, oracle_seed) -> None:
    import time

    from kquotactl.backends.kafka.quotas import AdminBackend, coerce_value
    from kquotactl.core.changes import EntityChange

    with AdminBackend.connect(kraft.bootstrap) as admin:
        sample = _sendable(admin, _sample(oracle_seed))
        want = {e: {k: coerce_value(k, float(v)) for k, v in c.items()} for e, c in sample.items()}
        results = admin.alter([EntityChange(e, c) for e, c in sample.items()])
        assert [r.message for r in results if r.outcome.value != "applied"] == [], replay_hint(oracle_seed)
        deadline = time.monotonic() + 15
        while True:
            got = {r.entity: dict(r.config) for r in admin.describe()}
            if got == want or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    assert got == want, replay_hint(oracle_seed)
