"""Cluster-wide budgets without a cluster: division, remainders, refusals, drift, manifests with ``cluster:``."""

from __future__ import annotations

import os
import random
import textwrap

import pytest

from kquotactl.core.budget import (
    Split,
    broker_counts_giving,
    cluster_value,
    drift_note,
    per_broker,
    resolve_budgets,
    split_of,
)
from kquotactl.core.changes import QuotaRecord
from kquotactl.core.entities import Entity
from kquotactl.core.errors import InvalidValue
from kquotactl.core.keys import KEYS
from kquotactl.core.manifest import ManifestError
from kquotactl.core.plan import make_plan
from kquotactl.manifests.loader import json_schema, load_text

PBR = KEYS["producer_byte_rate"]
MiB = 1024**2


def test_byte_rates_divide_by_floor_and_report_the_remainder() -> None:
    s = per_broker(PBR, 200 * MiB, 3)
    assert (s.per_broker, s.remainder, s.uneven) == (69905066, 2, True)
    assert s.per_broker * 3 + s.remainder == 200 * MiB
    assert "69905066" in s.describe() and "2 B/s of the budget" in s.describe() and "3 brokers" in s.describe()
    even = per_broker(PBR, 300 * MiB, 3)
    assert (even.per_broker, even.remainder, even.uneven) == (100 * MiB, 0, False)
    assert "unassigned" not in even.describe()


def test_division_is_exact_integer_arithmetic_for_random_budgets() -> None:
    seed = int(os.environ.get("SEED", random.randrange(2**32)))
    rng = random.Random(seed)
    for _ in range(2000):
        total = rng.choice([rng.randrange(1, 10**6), rng.randrange(1, 2**63 - 1)])
        n = rng.randrange(1, 50)
        if total < n:
            continue
        s = per_broker(PBR, total, n)
        assert s.per_broker * n + s.remainder == total, f"seed {seed}"
        assert 0 <= s.remainder < n, f"seed {seed}"
        assert isinstance(s.per_broker, int), f"seed {seed}"  # no double rounding, even near 2**63
        assert n in broker_counts_giving(PBR, total, s.per_broker), f"seed {seed}"


def test_a_share_below_one_per_broker_and_no_brokers_are_refused() -> None:
    with pytest.raises(InvalidValue, match="less than 1 bytes/s per broker"):
        per_broker(PBR, 2, 3)
    with pytest.raises(InvalidValue, match="at least one broker"):
        per_broker(PBR, 100, 0)


def test_request_percentage_is_refused_and_controller_mutation_rate_is_not_divided() -> None:
    with pytest.raises(InvalidValue, match="request_percentage cannot be a cluster-wide budget: it is a share of one"):
        per_broker(KEYS["request_percentage"], 50.0, 3)
    cmr = per_broker(KEYS["controller_mutation_rate"], 10.0, 3)
    assert (cmr.per_broker, cmr.remainder) == (10.0, 0)
    # KRaft: the active controller alone; ZooKeeper mode: auto-creation is metered on the receiving broker
    assert "enforced once in KRaft, on the active controller" in cmr.describe()
    assert "auto-created through Metadata or FindCoordinator are metered by each broker" in cmr.describe()
    assert split_of(KEYS["connection_creation_rate"]) is Split.DIVIDED
    assert per_broker(KEYS["connection_creation_rate"], 10, 3).per_broker == 3


def test_cluster_view_multiplies_only_keys_every_broker_enforces() -> None:
    assert cluster_value(PBR, 100, 3) == 300
    assert cluster_value(KEYS["controller_mutation_rate"], 5.0, 3) == 5.0
    assert cluster_value(KEYS["request_percentage"], 50.0, 3) == 50.0


def test_drift_names_the_broker_count_the_live_value_was_divided_by() -> None:
    s = per_broker(PBR, 200 * MiB, 2)  # today: 2 brokers
    live = per_broker(PBR, 200 * MiB, 3).per_broker  # applied when there were 3
    note = drift_note(s, live)
    assert note is not None and "divided by 3 brokers" in note and "changed to 2" in note
    assert drift_note(s, s.per_broker) is None  # in sync
    assert drift_note(s, 12345) is None  # edited by hand (the budget over 16987 brokers): not a broker-count change
    assert drift_note(s, 7_000_000) is None  # no broker count gives it
    assert drift_note(s, None) is None
    # a small budget: several counts give the same share
    assert list(broker_counts_giving(PBR, 10, 3)) == [3]
    assert list(broker_counts_giving(PBR, 10, 1)) == [6, 7, 8, 9, 10]


MANIFEST = textwrap.dedent(
    """\
    quotas:
      - entity: {user: team-a}
        cluster: {producer_byte_rate: 200MiB}
        config: {consumer_byte_rate: 1MiB}
      - entity: {user: team-b}
        config: {producer_byte_rate: 1000}
    """
)


def test_manifest_cluster_entries_resolve_to_per_broker_config_and_plan_notes() -> None:
    m = load_text(MANIFEST, "q.yaml")
    team_a = Entity.of(user="team-a")
    assert m.budgets and dict(m.get(team_a).cluster) == {"producer_byte_rate": 200 * MiB}
    assert m.config_map()[team_a] == {"consumer_byte_rate": MiB}
    b = resolve_budgets(m, 3)
    assert dict(b.manifest.get(team_a).config) == {"producer_byte_rate": 69905066, "consumer_byte_rate": MiB}
    live = [QuotaRecord(team_a, {"producer_byte_rate": 100 * MiB, "consumer_byte_rate": MiB})]  # applied with 2
    notes = b.notes(live)
    assert any("200 MiB/s (209715200) cluster-wide = " in n and "× 3 brokers" in n for n in notes)
    assert any("divided by 2 brokers" in n and "changed to 3" in n for n in notes)
    plan = make_plan(b.manifest, live)
    assert plan.pending and plan.diffs[0].keys[0].new == 69905066


def test_manifest_errors_name_the_line() -> None:
    bad = "quotas:\n  - entity: {user: a}\n    cluster: {request_percentage: 50}\n"
    with pytest.raises(ManifestError, match=r"^q.yaml:3: users/a: request_percentage cannot be a cluster-wide"):
        load_text(bad, "q.yaml")
    both = "quotas:\n  - entity: {user: a}\n    config: {producer_byte_rate: 1}\n    cluster: {producer_byte_rate: 9}\n"
    with pytest.raises(ManifestError, match=r"^q.yaml:4: users/a: producer_byte_rate is in both config and cluster"):
        load_text(both, "q.yaml")
    small = "quotas:\n  - entity: {user: a}\n    cluster: {producer_byte_rate: 2}\n"
    with pytest.raises(ManifestError, match=r"^q.yaml:3: users/a: cluster-wide producer_byte_rate 2 over 3 brokers"):
        resolve_budgets(load_text(small, "q.yaml"), 3)


def test_json_schema_takes_cluster_and_refuses_request_percentage_in_it() -> None:
    import jsonschema
    import yaml

    v = jsonschema.Draft202012Validator(json_schema())
    assert list(v.iter_errors(yaml.safe_load(MANIFEST))) == []
    bad = {"quotas": [{"entity": {"user": "a"}, "cluster": {"request_percentage": 50}}]}
    assert list(v.iter_errors(bad))
    assert list(v.iter_errors({"quotas": [{"entity": {"user": "a"}}]}))


def test_offline_cli_needs_the_broker_count_and_uses_it(tmp_path) -> None:
    import json

    from conftest import run_cli

    q = tmp_path / "q.yaml"
    q.write_text(MANIFEST)
    r = run_cli("plan", "-f", str(q), "--live-from", str(q))
    assert r.exit_code == 1 and "give the broker count that cluster-wide budgets divide by (--brokers N)" in r.stderr
    r = run_cli("-o", "json", "plan", "-f", str(q), "--live-from", str(q), "--brokers", "4")
    assert r.exit_code == 2, r.stderr
    (change,) = json.loads(r.stdout)["changes"]
    assert change["after"]["producer_byte_rate"] == 50 * MiB and "× 4 brokers" in r.stderr
    r = run_cli("explain", "--example", "--user", "alice", "--cluster-wide")
    assert r.exit_code == 1 and "needs the broker count: add --brokers N" in r.stderr
    r = run_cli("-o", "json", "explain", "-f", str(q), "--user", "team-a", "--brokers", "4")
    views = {v["key"]: v for v in json.loads(r.stdout)["cluster_wide"]}
    assert views["producer_byte_rate"]["per_broker"] == 50 * MiB
    assert views["producer_byte_rate"]["cluster_wide"] == 200 * MiB
    r = run_cli(
        "--zookeeper", "127.0.0.1:1", "alter", "--user", "a", "--cluster-wide", "--delete-config", "producer_byte_rate"
    )
    assert r.exit_code == 1 and "--cluster-wide needs the budgets to set" in r.stderr  # before connecting


def test_a_plan_says_budgets_as_information_and_drift_as_a_warning() -> None:
    """services.plans: each budget with its share is information (Planned.info, not among the notes printed as
    warnings); a broker-count change stays a warning; the saved plan keeps both in its notes."""
    from kquotactl.backends.manifest import ManifestBackend
    from kquotactl.services.plans import plan

    m = load_text(MANIFEST, "q.yaml")
    live = load_text("quotas:\n- entity: {user: team-a}\n  config: {producer_byte_rate: 104857600}\n", "live.yaml")
    with ManifestBackend(live) as backend:
        planned = plan(backend, m, brokers=3, offline=True)
    assert planned.info and all("cluster-wide = " in line for line in planned.info)
    assert not set(planned.info) & set(planned.notes)
    assert [n for n in planned.notes if "divided by 2 brokers" in n and "changed to 3" in n]
    assert set(planned.info) <= set(planned.plan.notes)
