"""verify, staged tightening and principals on a real 3-broker KRaft cluster (the ``kraft3`` fixture; cluster-wide
budgets on the same cluster are in tests/test_budget_kafka.py). Each broker is asked on its own: a KRaft broker
answers DescribeClientQuotas from the metadata it has applied."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli

pytestmark = pytest.mark.kafka

RULES = "RULE:^CN=([^,]+),OU=payments,.*$/$1/L,DEFAULT"


def _verify(bootstrap: str, *entity: str, expect: str | None = None) -> dict:
    args = ["--bootstrap-server", bootstrap, "verify", *entity, "-o", "json"]
    r = run_cli(*args, *(["--expect", expect] if expect else []))
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout)


def test_verify_asks_each_of_the_three_brokers(kraft3) -> None:
    bs = ("--bootstrap-server", kraft3.bootstrap)
    assert run_cli(*bs, "alter", "--client-id", "app1", "--add-config", "producer_byte_rate=20000").exit_code == 0
    out = _verify(kraft3.bootstrap, "--client-id", "app1")
    assert out["converged"] and out["lagging"] == []
    assert [b["broker"] for b in out["brokers"]] == ["broker 1", "broker 2", "broker 3"]
    assert all(b["config"] == {"producer_byte_rate": 20000} for b in out["brokers"])
    r = run_cli("--timeout", "2", *bs, "verify", "--client-id", "app1", "--expect", "producer_byte_rate=1")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1, r.stderr
    for broker in ("broker 1", "broker 2", "broker 3"):
        assert f"{broker} reports producer_byte_rate=20000" in r.stderr


def test_a_staged_apply_checks_every_broker_after_each_stage(kraft3, tmp_path: Path) -> None:
    bs = ("--bootstrap-server", kraft3.bootstrap)
    m = tmp_path / "q.yaml"
    m.write_text("quotas:\n  - entity: {user: team-a}\n    config: {producer_byte_rate: 1000000}\n")
    assert run_cli(*bs, "apply", "-f", str(m), "--yes").exit_code == 0
    # every broker has it before the staged plan reads it (a broker answers from the metadata it has applied)
    assert _verify(kraft3.bootstrap, "--user", "team-a", expect="producer_byte_rate=1000000")["converged"]
    m.write_text("quotas:\n  - entity: {user: team-a}\n    config: {producer_byte_rate: 125000}\n")
    log = tmp_path / "stages.log"
    r = run_cli(*bs, "apply", "-f", str(m), "--stages", "3", "--interval", "0.5s", "--log", str(log), "--yes")
    assert r.exit_code == 0, r.stderr
    assert "stage 3/3: checked" in r.stderr and "applied all 3 stages" in r.stdout
    stages = [(x["stage"], x["after"]["producer_byte_rate"]) for x in map(json.loads, log.read_text().splitlines()[1:])]
    assert stages == [(1, 500000), (2, 250000), (3, 125000)]  # geometric: halved each time
    out = _verify(kraft3.bootstrap, "--user", "team-a", expect="producer_byte_rate=125000")
    assert len(out["brokers"]) == 3 and out["converged"]


def test_a_principal_is_mapped_and_every_broker_reports_the_mapped_user(kraft3) -> None:
    bs = ("--bootstrap-server", kraft3.bootstrap)
    dn = "CN=Svc-A,OU=payments,O=acme"
    r = run_cli(
        *bs,
        "alter",
        "--principal",
        dn,
        "--ssl-principal-mapping-rules",
        RULES,
        "--add-config",
        "producer_byte_rate=1MiB",
    )
    assert r.exit_code == 0, r.stderr
    done = json.loads(r.stdout)  # in a pipe: JSON, with the mapping
    assert done["entity"] == {"user": "svc-a"} and done["outcome"] == "applied"
    assert done["principal"]["rules_from"] == "ssl.principal.mapping.rules as given"
    out = _verify(kraft3.bootstrap, "--user", "svc-a", expect="producer_byte_rate=1MiB")
    assert len(out["brokers"]) == 3 and out["converged"]
    r = run_cli(*bs, "-o", "json", "describe", "--principal", dn, "--ssl-principal-mapping-rules", RULES)
    assert r.exit_code == 0, r.stderr
    assert [d["entity"] for d in json.loads(r.stdout)] == [{"user": "svc-a"}]
