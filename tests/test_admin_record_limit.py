"""The KRaft controller's per-operation record limit, against a real controller (the newest release the
harness runs, one combined broker+controller).

The controller refuses a user operation producing more than 10,000 metadata records (its
``MAX_RECORDS_PER_USER_OP``); one AlterClientQuotas request is one operation and each op of an entry one
record. The first test finds that limit on the wire, as kquotactl's own client library sends the request; the
second applies, through the CLI, a manifest needing well over 10,000 records with every key the admin API takes,
and shows it split into requests the controller all accepts.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kquotactl.backends.kafka.quotas import MAX_ENTRIES_PER_REQUEST, MAX_OPS_PER_REQUEST, AdminBackend
from kquotactl.core.keys import CLIENT_KEYS, IP_KEYS, KEYS

pytestmark = pytest.mark.kafka

#: the controller's limit, records per user operation, as the first test measures it
CONTROLLER_LIMIT = 10_000
#: every key a live cluster takes through the admin API (request_rate is a draft no broker knows)
CLIENT_SETTABLE = [k for k in CLIENT_KEYS if KEYS[k].live]
IP_SETTABLE = [k for k in IP_KEYS if KEYS[k].live]
POLICY_VIOLATION = 44


def client_entry(name: str, i: int) -> tuple[list[tuple[str, str | None]], list[tuple[str, float, bool]]]:
    """A user entity setting every client key: as many ops (records) as there are keys."""
    return [("user", name)], [(k, float(1000 + i + j), False) for j, k in enumerate(CLIENT_SETTABLE)]


def ip_entry(i: int) -> tuple[list[tuple[str, str | None]], list[tuple[str, float, bool]]]:
    return [("ip", f"10.{i // 65536}.{i // 256 % 256}.{i % 256}")], [(k, 5.0, False) for k in IP_SETTABLE]


def outcomes(b: AdminBackend, entries: list) -> dict[tuple[int, str], int]:
    """One raw AlterClientQuotas request (kquotactl's wire client, no chunking): {(error code, name): entries}."""
    out: dict[tuple[int, str], int] = {}
    for o in b.wire.alter(entries, False):
        out[(o.error_code, o.error_name)] = out.get((o.error_code, o.error_name), 0) + 1
    return out


def visible(b: AdminBackend, n: int, timeout: float = 20) -> int:
    """How many entities the broker describes once it shows ``n`` (it applies committed records a moment later)."""
    deadline = time.monotonic() + timeout
    while len(found := b.describe()) != n and time.monotonic() < deadline:
        time.sleep(0.05)
    return len(found)


def test_the_controller_refuses_one_request_over_10000_records_and_our_bound_is_below(kraft):
    per_entity = len(CLIENT_SETTABLE)
    n = CONTROLLER_LIMIT // per_entity
    assert n * per_entity == CONTROLLER_LIMIT  # 2,500 entities carrying the 4 client keys: exactly the limit
    with AdminBackend.connect(kraft.bootstrap, timeout=60) as b:
        over = [client_entry(f"over-{i:05d}", i) for i in range(n)] + [ip_entry(0)]  # one ip entity: one record more
        assert outcomes(b, over) == {(POLICY_VIOLATION, "POLICY_VIOLATION"): n + 1}  # the whole request refused
        ips = [ip_entry(i) for i in range(CONTROLLER_LIMIT + 1)]  # ip entities count one record each, no fewer
        assert outcomes(b, ips) == {(POLICY_VIOLATION, "POLICY_VIOLATION"): CONTROLLER_LIMIT + 1}
        assert b.describe() == []  # nothing of either refused request was written
        at = [client_entry(f"at-{i:05d}", i) for i in range(n)]
        assert outcomes(b, at) == {(0, "NONE"): n}  # 10,000 records: accepted
        assert visible(b, n) == n  # and written (the wipe after the test must see them)
    # kquotactl's bound on a request: at most this many ops (one record each), whatever the entities carry
    assert MAX_OPS_PER_REQUEST <= CONTROLLER_LIMIT // 2
    assert MAX_ENTRIES_PER_REQUEST * max(len(CLIENT_SETTABLE), len(IP_SETTABLE)) > MAX_OPS_PER_REQUEST


def manifest(n_client: int, n_ip: int) -> list[dict]:
    """Users, client-ids and (user, client-id) pairs carrying every client key, and ips carrying every ip key."""
    out = []
    for i in range(n_client):
        entity = [{"user": f"u{i:05d}"}, {"client-id": f"c{i:05d}"}, {"user": f"u{i:05d}", "client-id": f"c{i:05d}"}]
        config = {k: 1000 + 10 * i + j for j, k in enumerate(CLIENT_SETTABLE)}
        out.append({"entity": entity[i % 3], "config": config})
    for i in range(n_ip):
        out.append({"entity": {"ip": f"10.1.{i // 256}.{i % 256}"}, "config": {k: 1 + i for k in IP_SETTABLE}})
    return out


def kq(*args: str) -> subprocess.CompletedProcess[str]:
    """The CLI in a fresh process (-v: one line per request sent)."""
    return subprocess.run([sys.executable, "-m", "kquotactl", "-v", *args], capture_output=True, text=True, timeout=120)


def test_an_apply_of_27000_records_with_every_key_is_split_into_requests_all_accepted(kraft, tmp_path: Path):
    quotas = manifest(6000, 3000)
    records = sum(len(q["config"]) for q in quotas)
    assert records == 6000 * len(CLIENT_SETTABLE) + 3000 * len(IP_SETTABLE) == 27_000
    path = tmp_path / "quotas.yaml"
    path.write_text(json.dumps({"quotas": quotas}))
    bs = ("--bootstrap-server", kraft.bootstrap, "--timeout", "60")

    r = kq(*bs, "apply", "-f", str(path), "--yes")
    assert r.returncode == 0, r.stderr[-2000:]
    sent = [tuple(map(int, m)) for m in re.findall(r"AlterClientQuotas (\d+) entries, (\d+) ops", r.stderr)]
    assert sum(e for e, _ in sent) == len(quotas) and sum(o for _, o in sent) == records, sent
    assert len(sent) >= records // MAX_OPS_PER_REQUEST and max(o for _, o in sent) <= MAX_OPS_PER_REQUEST, sent
    assert "POLICY_VIOLATION" not in r.stderr + r.stdout
    print(f"\n{len(quotas)} entities, {records} records: requests (entries, ops) {sent}")

    d = kq(*bs, "describe", "-o", "json")
    assert d.returncode == 0, d.stderr
    key = lambda q: json.dumps(q["entity"], sort_keys=True)  # noqa: E731
    live = {key(q): {k: float(v) for k, v in q["config"].items()} for q in json.loads(d.stdout)}
    assert live == {key(q): {k: float(v) for k, v in q["config"].items()} for q in quotas}

    p = kq(*bs, "plan", "-f", str(path))
    assert p.returncode == 0 and p.stdout.startswith(f"in sync: {len(quotas)} entities as declared"), p.stdout
