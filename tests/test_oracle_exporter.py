"""Differential: what ``top`` reads from a scrape against the names Kafka gave the sensors.

Kafka's own naming (``JmxNamingOracle``: the broker's quota tags, ``Sanitizer.sanitize`` on the user, Kafka's
``JmxReporter`` and its ``jmxSanitize`` quoting) registers random quota-ids' sensors in a JVM that runs the real
JMX exporter agent with the rules kquotactl ships; the scrape is read by ``top``'s parser and model, and every
quota-id must come back with the names it had (user and client-id as a quota entity names them, the ip as the
broker's ``InetAddress.getHostAddress``) and its own value.
"""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Iterator
from typing import Any

import pytest

from fixtures_oracle import ORACLE_VERSIONS, random_cases, replay_hint
from kquotactl.core.precedence import QuotaIndex
from kquotactl.observe.prometheus import scrape
from kquotactl.observe.throttled import QuotaIdKey, top_rows
from kquotactl.testing.observe import ExporterOracle

pytestmark = pytest.mark.jvm

# JMX's quoting specials (" \ * ? , = : newline), what URLEncoder escapes, Java regex line terminators (\r, NEL,
# LINE SEPARATOR: '.' does not match them), multi-byte, tab and space (kept bare by jmxSanitize)
_ALPHABET = "aZ09._-%\"\\*?,=:\n\r\x85\u2028\u2029 \t@/+~<>&#'é€中😀"
_QUOTA_SENSORS = {  # quota type -> its usage sensor (ClientQuotaManager, ClientRequestQuotaManager, ...)
    "Produce": "byte-rate",
    "Fetch": "byte-rate",
    "Request": "request-time",
    "ControllerMutation": "mutation-rate",
}


#: pieces of the exporter's own matched string (``domain<key=value, ...><>attribute``) that a greedy rule would split on
_TOKENS = (", client-id=", ", user=", "><>", ">", "<", ", ", "byte-rate")


def _name(rng: random.Random) -> str:
    if rng.random() < 0.7:
        pool = [*_ALPHABET, *_TOKENS]
        return "".join(rng.choice(pool) for _ in range(rng.randint(1, 12)))
    cps = [rng.choice((rng.randint(0x20, 0x7E), rng.randint(0xA0, 0xD7FF), rng.randint(0xE000, 0x10FFFF)))]
    return "".join(chr(c) for c in cps * rng.randint(1, 6))


def _ip(rng: random.Random) -> str:
    if rng.random() < 0.4:
        return str(ipaddress.IPv4Address(rng.getrandbits(32)))
    addr = ipaddress.IPv6Address(rng.choice((rng.getrandbits(128), rng.getrandbits(16))))  # ::x compresses
    return addr.compressed if rng.random() < 0.5 else addr.exploded


def _case(rng: random.Random) -> dict[str, Any]:
    """One quota-id's usage sensor: user/client-id (each level: both, user only, client-id only), or an ip."""
    if rng.random() < 0.25:
        return {"kind": "ip", "group": "socket-server-metrics", "name": "connection-accept-rate", "ip": _ip(rng)}
    qtype = rng.choice(sorted(_QUOTA_SENSORS))
    shape = rng.randrange(3)
    user = _name(rng) if shape < 2 else ""
    client = _name(rng) if shape != 1 else ""
    return {"kind": "client", "group": qtype, "name": _QUOTA_SENSORS[qtype], "user": user, "client_id": client}


@pytest.fixture(scope="module", params=ORACLE_VERSIONS)
def exporter_oracle(request: pytest.FixtureRequest) -> Iterator[ExporterOracle]:
    with ExporterOracle(request.param) as oracle:
        yield oracle


def test_top_reads_every_quota_id_as_kafka_named_it(exporter_oracle: ExporterOracle, oracle_seed: int) -> None:
    cases = random_cases(oracle_seed, _case)
    unique: dict[tuple[str, ...], dict[str, Any]] = {}
    for c in cases:  # one sensor a quota-id and quota type (a second would be the same MBean)
        ip = str(ipaddress.ip_address(c["ip"])) if "ip" in c else ""  # one address, however it is spelled
        unique.setdefault((c["group"], c.get("user", ""), c.get("client_id", ""), ip), c)
    metrics = [{**c, "value": float(i + 1)} for i, c in enumerate(unique.values())]
    oracle = exporter_oracle
    oracle.ask({"op": "clear"})
    answer = oracle.ask({"op": "register", "metrics": metrics})
    assert "error" not in answer, f"{replay_hint(oracle_seed, oracle.version)}: {answer}"
    ips = iter(answer["ips"])
    expected = {}
    for m in metrics:
        qid = QuotaIdKey(ip=next(ips)) if m["kind"] == "ip" else QuotaIdKey(m["user"], m["client_id"])
        expected[(qid, m["group"] if m["kind"] == "client" else "Connection")] = m["value"]
    seen = {(r.quota_id, u.quota_type): u.usage for r in top_rows(scrape([oracle.url]), QuotaIndex({})) for u in r.uses}
    missing = [(k, v, answer["mbeans"][int(v) - 1]) for k, v in expected.items() if seen.get(k) != v]
    extra = [k for k in seen if k not in expected]
    assert not missing and not extra, (
        f"{replay_hint(oracle_seed, oracle.version)}: {len(missing)} of {len(expected)} quota-ids not read as Kafka "
        f"named them, e.g. (quota-id, value, MBean) {missing[:5]}; read but never named: {extra[:5]}"
    )
