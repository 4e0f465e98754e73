"""``kquotactl recommend`` on traffic tables with known rates: the limits are the rates × the headroom, the manifest
carries its evidence and plans cleanly, and operator mistakes are one line with nothing read from a cluster."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
import yaml

from conftest import run_cli
from kquotactl.core.keys import BYTE_RATE_KEYS, KEYS, PRODUCE_KEY

FETCH_KEY = BYTE_RATE_KEYS[1]
REQUEST_KEY = next(k for k, v in KEYS.items() if v.unit == "%")
COLUMNS = ["ts", "user", "client_id", "ip", "produce_bytes", "fetch_bytes", "requests", "request_time_ms"]
T0 = 1_700_000_000
MIB = 1024 * 1024
SENSOR = 11 / 10  # the most a Rate over 11 samples reads above a steady rate (the current sample partly elapsed)


def write_traffic(path: Path, seconds: int = 300) -> Path:
    """steady: 1 MiB/s produce, 10 requests/s; burst: 4 MiB/s fetch for 10 s of every minute; ten small users
    at 100 B/s produce; admin (a super user) at 8 MiB/s."""
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for s in range(seconds):
            for i in range(10):
                ts = f"{T0 + s + i / 10:.3f}"
                w.writerow([ts, "steady", "app", "", MIB // 10, 0, 1, 1.0])
                if s % 60 < 10:
                    w.writerow([ts, "burst", "etl", "", 0, 4 * MIB // 10, 1, 2.0])
                w.writerow([ts, f"small{i}", "c", "", 100, 0, 1, 0.1])
                w.writerow([ts, "admin", "tool", "", 8 * MIB // 10, 0, 0, 0])
    return path


@pytest.fixture(scope="module")
def traffic(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_traffic(tmp_path_factory.mktemp("recommend") / "traffic.csv")


def limits(out: str) -> dict[tuple[str, str, str], float]:
    doc = yaml.safe_load(out)
    return {
        (e["entity"].get("user", ""), e["entity"].get("client-id", ""), k): v
        for e in doc["quotas"]
        for k, v in e["config"].items()
    }


def test_limits_are_the_known_rates_times_the_headroom(traffic: Path) -> None:
    r = run_cli("recommend", str(traffic), "--headroom", "50%", "--exempt", "admin", "--tail-share", "1%")
    assert r.exit_code == 0, r.stderr
    got = limits(r.stdout)
    # the sensor reads a steady rate over 10 full samples and the current one partly elapsed: at most 11/10 of it;
    # then rounded up to 2 significant digits (at most +10 %)
    steady = got[("steady", "app", PRODUCE_KEY)]
    assert 1.5 * MIB <= steady <= 1.5 * MIB * SENSOR * 1.1, steady
    # a 10 s burst inside the 11 s window: the sensor never reads more than 10/11 of the burst rate
    burst = got[("burst", "etl", FETCH_KEY)]
    assert 1.5 * 4 * MIB * 0.8 <= burst <= 1.5 * 4 * MIB * 10 / 11 * 1.1, burst
    # exempt: no limit from its traffic; with a long-tail default it would fall under, a limit no client reaches
    assert {k: v for k, v in got.items() if k[0] == "admin"} == {("admin", "tool", PRODUCE_KEY): 2**53}
    tail = got[("<default>", "<default>", PRODUCE_KEY)]
    assert 150 <= tail <= 1.5 * 100 * SENSOR * 1.1, tail
    assert '# Exempt from limits: {user: "admin", client-id: "tool"}' in r.stdout
    assert "top of 10 small quota-ids" in r.stdout
    assert max(len(line) for line in r.stdout.splitlines()) <= 80


def test_every_recommended_value_carries_its_evidence(traffic: Path) -> None:
    r = run_cli("recommend", str(traffic), "--key", PRODUCE_KEY)
    lines = r.stdout.splitlines()
    valued = [i for i, x in enumerate(lines) if x.strip().startswith(PRODUCE_KEY + ":")]
    assert len(valued) == 12  # steady, admin, ten small users
    for i in valued:
        assert lines[i - 1].strip().startswith("# ") and "p99 " in lines[i - 1], lines[i - 1]
        assert "over 5 min, 1 broker" in lines[i - 1]


def test_json_carries_each_distribution_and_limit(traffic: Path) -> None:
    r = run_cli("-o", "json", "recommend", str(traffic), "--key", PRODUCE_KEY, "--percentile", "95")
    doc = json.loads(r.stdout)
    (steady,) = [
        d
        for d in doc["distributions"]
        if d["quota_id"] == {"user": "steady", "client-id": "app"} and d["key"] == PRODUCE_KEY
    ]
    b = steady["brokers"][""]
    assert b["samples"] == 300 and set(b["percentiles"]) == {"p50", "p95", "p99"}
    assert b["percentiles"]["p50"] <= b["percentiles"]["p95"] <= b["percentiles"]["p99"] <= b["max"]
    (lim,) = [x for x in doc["limits"] if x["entity"] == {"user": "steady", "client-id": "app"}]
    assert lim["basis"] == b["percentiles"]["p95"] and lim["value"] >= lim["basis"] * 1.2


def test_existing_quotas_are_kept_and_the_manifest_plans(traffic: Path, tmp_path: Path) -> None:
    current = tmp_path / "current.yaml"
    current.write_text(
        "quotas:\n"
        "  - entity: {user: steady, client-id: app}\n"
        f"    config: {{{PRODUCE_KEY}: 1048576, {REQUEST_KEY}: 50}}\n"
        "  - entity: {user: idle}\n"
        f"    config: {{{FETCH_KEY}: 2048}}\n"
    )
    r = run_cli("recommend", str(traffic), "--current", str(current), "--key", PRODUCE_KEY)
    assert r.exit_code == 0, r.stderr
    got = limits(r.stdout)
    assert got[("idle", "", FETCH_KEY)] == 2048, "a quota the traffic says nothing of is kept"
    assert got[("steady", "app", REQUEST_KEY)] == 50
    assert got[("steady", "app", PRODUCE_KEY)] > MIB
    out = tmp_path / "recommended.yaml"
    out.write_text(r.stdout)
    plan = run_cli("-o", "json", "plan", "-f", str(out), "--live-from", str(current))
    assert plan.exit_code == 2, plan.stderr  # changes pending
    changed = {c["path"]: c["action"] for c in json.loads(plan.stdout)["changes"]}
    assert changed.pop("users/steady/clients/app") == "update"
    assert "users/idle" not in changed, "a quota the traffic says nothing of is kept"
    assert set(changed.values()) == {"create"}, changed  # the other quota-ids with traffic get their first limit


def test_recommendations_are_deterministic(traffic: Path) -> None:
    first = run_cli("recommend", str(traffic)).stdout
    assert run_cli("recommend", str(traffic)).stdout == first


def test_a_policy_file_and_options_combine(traffic: Path, tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(f"percentile: 50\nheadroom: 0\nfloors: {{{PRODUCE_KEY}: 2MiB}}\nkeys: [{PRODUCE_KEY}]\n")
    r = run_cli("recommend", str(traffic), "--policy", str(policy), "--exempt", "admin")
    got = limits(r.stdout)
    assert got[("steady", "app", PRODUCE_KEY)] == 2 * MIB, "the floor raises it"
    assert "raised to the floor" in r.stdout
    r = run_cli("recommend", str(traffic), "--policy", str(policy), "--floor", f"{PRODUCE_KEY}=1KiB")
    assert math.isclose(limits(r.stdout)[("steady", "app", PRODUCE_KEY)], 1.1 * MIB, rel_tol=0.05)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--headroom", "lots"], "--headroom 'lots': is not a percentage"),
        (["--headroom", "-5%"], "--headroom '-5%': is not a non-negative percentage"),
        (["--floor", "nope=1"], "--floor 'nope': names no quota key"),
        (["--floor", PRODUCE_KEY], f"--floor '{PRODUCE_KEY}': is not KEY=VALUE"),
        (["--key", "bytes"], "--key 'bytes': names no quota key"),
        (["--percentile", "120"], "--percentile '120': is outside 0..100"),
        (["--tail-share", "100%"], "--tail-share '100%': is outside 0..100 % (a share below all the traffic)"),
    ],
)
def test_operator_mistakes_are_one_line(traffic: Path, args: list[str], message: str) -> None:
    r = run_cli("recommend", str(traffic), *args)
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [f"kquotactl: error: {message}"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give TRAFFIC (files or directories) or --from-prometheus URL"),
        (["t.csv", "--from-prometheus", "http://127.0.0.1:1"], "give TRAFFIC or --from-prometheus URL, not both"),
        (["t.csv", "--since", "1d"], "--since is a Prometheus range: it goes with --from-prometheus URL"),
        (
            ["--from-prometheus", "http://127.0.0.1:1", "--engine", "spark"],
            "--from-prometheus is read on the local engine, streamed: drop --engine spark",
        ),
        (
            ["--from-prometheus", "http://127.0.0.1:1", "--input-format", "kafka-request-log"],
            "--from-prometheus reads the brokers' sensors: drop --input-format",
        ),
        (
            ["--from-prometheus", "http://127.0.0.1:1", "--since", "1m", "--step", "2m"],
            "--step 2m is longer than --since 1m: no point in the range",
        ),
    ],
)
def test_the_traffic_is_given_once(args: list[str], message: str) -> None:
    r = run_cli("recommend", *args)
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [f"kquotactl: error: {message}"]


def test_a_bad_policy_file_is_named(traffic: Path, tmp_path: Path) -> None:
    bad = tmp_path / "p.yaml"
    bad.write_text("percentile: 99\nheadrom: 20\n")
    r = run_cli("recommend", str(traffic), "--policy", str(bad))
    assert r.exit_code == 1 and "has no field 'headrom'" in r.stderr and str(bad) in r.stderr
    bad.write_text("level: team\n")
    r = run_cli("recommend", str(traffic), "--policy", str(bad))
    assert r.exit_code == 1 and "level 'team': is none of user-client, user, client-id" in r.stderr


def test_the_recommendation_is_replayed_on_its_own_traffic(traffic: Path) -> None:
    """The default policy (p99 + 20 %) throttles nobody on the traffic it came from; the median with no headroom
    throttles the bursty client alone (its bursts are above its median), and says how much."""
    r = run_cli("recommend", str(traffic), "--exempt", "admin")
    assert r.stderr.splitlines()[0].startswith("replayed on the same traffic (300 s): 0 of ")
    r = run_cli("-o", "json", "recommend", str(traffic), "--percentile", "50", "--headroom", "0", "--exempt", "admin")
    replayed = json.loads(r.stdout)["replayed"]
    throttled = {(q["quota_id"]["user"], q["key"]) for q in replayed["quota_ids"] if q["seconds_throttled"]}
    assert throttled == {("burst", FETCH_KEY), ("burst", REQUEST_KEY)}, throttled
    r = run_cli("recommend", str(traffic), "--percentile", "50", "--headroom", "0", "--exempt", "admin")
    assert "user burst, client-id etl: " + FETCH_KEY in r.stderr and "    throttled " in r.stderr


def test_an_exempt_user_is_kept_out_of_a_default_it_would_fall_under(traffic: Path) -> None:
    r = run_cli("-o", "json", "recommend", str(traffic), "--exempt", "admin", "--tail-share", "1%")
    doc = json.loads(r.stdout)
    (admin,) = [x for x in doc["limits"] if x["entity"].get("user") == "admin"]
    assert admin["value"] == 2**53 and admin["evidence"].startswith("exempt")
    admin_rows = [q for q in doc["replayed"]["quota_ids"] if q["quota_id"].get("user") == "admin"]
    assert admin_rows and all(q["seconds_throttled"] == 0 for q in admin_rows)
    r = run_cli("-o", "json", "recommend", str(traffic), "--exempt", "admin")
    assert not [x for x in json.loads(r.stdout)["limits"] if x["entity"].get("user") == "admin"], "no default: none"


def test_request_logs_per_broker_give_the_busiest_brokers_limit(tmp_path: Path) -> None:
    """Two brokers' request logs (as Kafka 4.4 writes them): the producer sends 1 MiB/s to broker 1 and 512 KiB/s
    to broker 2; each broker enforces its own limit, so the limit is broker 1's rate with the headroom. The same
    logs read as one input (no --per-broker) are one broker's traffic: 1.5 MiB/s."""
    from kquotactl.impact.generate import request_log_line

    logs = []
    for broker, per_tenth in (("b1", MIB // 10), ("b2", MIB // 20)):
        d = tmp_path / broker
        d.mkdir()
        lines = [
            request_log_line(T0 + s + i / 10, 0, "steady", "app", "10.0.0.1", (per_tenth,), version="4.4")
            for s in range(120)
            for i in range(10)
        ]
        (d / "kafka-request.log").write_text("\n".join(lines) + "\n")
        logs.append(str(d))
    base = ("recommend", "--input-format", "kafka-request-log", *logs, "--key", PRODUCE_KEY, "--headroom", "0")
    r = run_cli(*base, "--per-broker")
    assert r.exit_code == 0, r.stderr
    value = limits(r.stdout)[("steady", "app", PRODUCE_KEY)]
    assert MIB <= value <= MIB * SENSOR * 1.1, value
    assert "over 2 min, 2 brokers" in r.stdout
    merged = limits(run_cli(*base).stdout)[("steady", "app", PRODUCE_KEY)]
    assert 1.5 * MIB <= merged <= 1.5 * MIB * SENSOR * 1.1, merged


def test_per_broker_needs_request_logs(traffic: Path) -> None:
    r = run_cli("recommend", str(traffic), "--per-broker")
    assert r.exit_code == 1 and "--per-broker reads request logs" in r.stderr


def test_the_markdown_report_for_the_pull_request(traffic: Path, tmp_path: Path) -> None:
    current = tmp_path / "current.yaml"
    current.write_text(
        f"quotas:\n  - entity: {{user: steady, client-id: app}}\n    config: {{{PRODUCE_KEY}: 1048576}}\n"
    )
    args = ("recommend", str(traffic), "--current", str(current), "--percentile", "50", "--headroom", "0")
    r = run_cli("-o", "markdown", *args, "--exempt", "admin", "--key", PRODUCE_KEY, "--key", FETCH_KEY)
    assert r.exit_code == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("### kquotactl recommend: ") and lines[0].endswith(" limits to set")
    row = next(x for x in lines if x.startswith("| `users/steady/clients/app` | `" + PRODUCE_KEY))
    assert "| 1 MiB/s |" in row and "p50 " in row, row  # the current value next to the recommended one
    assert any(x.startswith("| `user burst, client-id etl` | `" + FETCH_KEY) for x in lines), "the replay's table"
    assert run_cli("-o", "junit", *args).exit_code == 1


def test_super_users_are_exempt(traffic: Path) -> None:
    r = run_cli("-o", "json", "recommend", str(traffic), "--super-users", "User:admin;Group:ops", "--key", PRODUCE_KEY)
    doc = json.loads(r.stdout)
    assert doc["policy"]["exempt"] == ["admin"]
    assert not [x for x in doc["limits"] if x["entity"].get("user") == "admin"]
