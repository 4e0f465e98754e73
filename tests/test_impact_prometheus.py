"""``impact run --from-prometheus``: the sensors-to-traffic conversion, the windowed replay, per-broker reports, the
time options, and the one-line errors (a real Prometheus with nothing to scrape; an address with nothing on it).
The agreement with a real broker's throttling is tests/test_impact_agreement.py."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import pytest

from conftest import run_cli, write_manifest
from kquotactl.core.entities import DEFAULT, Entity
from kquotactl.core.errors import UsageError
from kquotactl.core.precedence import QuotaIndex
from kquotactl.core.throttlemath import quota_throttle_ms
from kquotactl.core.timespec import parse_duration, parse_time
from kquotactl.impact import local, readers
from kquotactl.impact.engine import Runner
from kquotactl.impact.replay import BROKER_COLUMN, Window, merge_broker_reports, report
from kquotactl.observe.throttled import Sample, traffic_columns


def _s(metric: str, value: float, ts: float, broker: str = "b1:7071", **labels: str) -> Sample:
    return Sample(metric=metric, broker=broker, value=value, ts=ts, **labels)


def test_each_sensor_becomes_its_traffic_column_in_the_models_units() -> None:
    cols = traffic_columns(
        [
            _s("byte_rate", 1000.0, 10.0, quota_type="Produce", user="alice%40corp", client_id='"a,b"'),
            _s("byte_rate", 300.0, 10.0, quota_type="Fetch", user="alice%40corp", client_id='"a,b"'),
            _s("request_time", 5.0, 10.0, quota_type="Request", user="alice%40corp", client_id='"a,b"'),
            _s("mutation_rate", 2.0, 10.0, quota_type="ControllerMutation", client_id="admin"),
            _s("connection_accept_rate", 3.0, 10.0, ip="10.0.0.1"),
            _s("throttle_time", 50.0, 10.0, quota_type="Produce", client_id="x"),  # the answer, not traffic
            _s("byte_rate", math.nan, 10.0, quota_type="Produce", client_id="idle"),
            _s("byte_rate", 0.0, 10.0, quota_type="Produce", client_id="idle"),
        ],
        step=1.0,
        sample_s=1,
    )
    rows = [dict(zip(cols, r, strict=True)) for r in zip(*cols.values(), strict=True)]
    assert rows == [
        {"ts": 9.0, "broker": "b1:7071", "user": "", "client_id": "", "ip": "10.0.0.1", "produce_bytes": 0.0,
         "fetch_bytes": 0.0, "request_time_ms": 0.0, "mutations": 0.0, "connections": 3.0},
        {"ts": 9.0, "broker": "b1:7071", "user": "", "client_id": "admin", "ip": "", "produce_bytes": 0.0,
         "fetch_bytes": 0.0, "request_time_ms": 0.0, "mutations": 2.0, "connections": 0.0},
        {"ts": 9.0, "broker": "b1:7071", "user": "alice@corp", "client_id": "a,b", "ip": "", "produce_bytes": 1000.0,
         "fetch_bytes": 300.0, "request_time_ms": 50.0, "mutations": 0.0, "connections": 0.0},
    ]  # fmt: skip


def test_a_reading_is_held_over_its_step_and_spread_over_the_samples() -> None:
    coarse = traffic_columns([_s("byte_rate", 100.0, 20.0, quota_type="Produce", client_id="c")], 5.0, 1)
    assert (coarse["ts"], coarse["produce_bytes"]) == ([15.0, 16.0, 17.0, 18.0, 19.0], [100.0] * 5)
    fine = traffic_columns(
        [_s("byte_rate", v, t, quota_type="Produce", client_id="c") for v, t in ((100.0, 10.5), (300.0, 11.0))], 0.5, 1
    )
    assert (fine["ts"], fine["produce_bytes"]) == ([10.0], [200.0])  # 1 s of the mean reading
    wide = traffic_columns([_s("byte_rate", 100.0, 20.0, quota_type="Produce", client_id="c")], 3.0, 2)
    assert (wide["ts"], wide["produce_bytes"]) == ([16.0, 18.0], [100.0, 200.0])  # [17, 20) over [16, 18), [18, 20)


def _one_reading_at_a_time(samples: list[Sample], step: float, sample_s: int) -> dict[str, list[Any]]:
    """The definition, reading by reading: each reading held over [t - step, t), its usage given to every sample it
    overlaps, added in the order read; rows sorted by (sample, broker, user, client-id, ip)."""
    from kquotactl.observe.throttled import TRAFFIC_COLUMNS, TRAFFIC_SENSORS, _user, jmx_unquote

    rows: dict[tuple[int, str, str, str, str], dict[str, float]] = {}
    for s in samples:
        target = TRAFFIC_SENSORS.get((s.metric, "" if s.ip else s.quota_type))
        if target is None or not math.isfinite(s.value) or s.value <= 0:
            continue
        column, factor = target
        user, client = ("", "") if s.ip else (_user(s.user), jmx_unquote(s.client_id))
        begin, end = s.ts - step, s.ts
        k = math.floor(begin / sample_s)
        while k * sample_s < end:
            overlap = min(end, (k + 1) * sample_s) - max(begin, k * sample_s)
            if overlap > 0:
                row = rows.setdefault((k, s.broker, user, client, jmx_unquote(s.ip)), {})
                row[column] = row.get(column, 0.0) + s.value * overlap * factor
            k += 1
    out: dict[str, list[Any]] = {c: [] for c in ("ts", BROKER_COLUMN, "user", "client_id", "ip", *TRAFFIC_COLUMNS)}
    for (k, *names), usage in sorted(rows.items()):
        out["ts"].append(float(k * sample_s))
        for name, value in zip(("ts", BROKER_COLUMN, "user", "client_id", "ip")[1:], names, strict=True):
            out[name].append(value)
        for c in TRAFFIC_COLUMNS:
            out[c].append(usage.get(c, 0.0))
    return out


def test_the_column_wise_conversion_is_the_reading_by_reading_one_bit_for_bit() -> None:
    """Random series (steps finer and coarser than the sample, gaps, idle and NaN readings, shared names), the
    seed printed: the same rows and the same floats as the definition."""
    import os
    import random

    seed = int(os.environ.get("KQUOTACTL_FUZZ_SEED", random.randrange(2**32)))
    rng = random.Random(seed)
    for _ in range(40):
        step = rng.choice([0.25, 0.5, 0.7, 1.0, 1.5, 2.0, 5.0, 15.0])
        sample_s = rng.choice([1, 1, 2, 5])
        samples = []
        for _series in range(rng.randint(1, 6)):
            kind = rng.choice(["Produce", "Fetch", "Request", "ControllerMutation", "ip"])
            labels = {"ip": f"10.0.0.{rng.randint(1, 2)}"} if kind == "ip" else {"quota_type": kind}
            if kind != "ip":
                labels |= {"user": rng.choice(["", "a", "b%40c"]), "client_id": rng.choice(["", "x", '"y,z"'])}
            metric = {"Request": "request_time", "ControllerMutation": "mutation_rate", "ip": "connection_accept_rate"}
            broker = rng.choice(["b1:7071", "b2:7071"])
            t = 1_700_000_000.0 + rng.randint(0, 30)
            for _point in range(rng.randint(1, 40)):
                t += step * rng.choice([1, 1, 1, 2])
                value = rng.choice([0.0, math.nan, rng.uniform(0, 1e6), rng.uniform(0, 10)])
                samples.append(_s(metric.get(kind, "byte_rate"), value, t, broker=broker, **labels))
        assert traffic_columns(samples, step, sample_s) == _one_reading_at_a_time(samples, step, sample_s), (
            f"seed {seed} (KQUOTACTL_FUZZ_SEED={seed}), step {step}, sample {sample_s}"
        )


def test_a_windowed_replay_compares_each_reading_with_the_limit_as_the_broker_does() -> None:
    """The readings are the broker's window rates: each second's rate is the reading, throttled by the broker's
    formula over N·S, with no second window average (which would flatten a reading just over the limit)."""
    limit, readings = 100_000, [50_000.0, 104_000.0, 120_000.0, 99_000.0, 130_000.0]
    samples = [_s("byte_rate", v, 101.0 + i, quota_type="Produce", client_id="p") for i, v in enumerate(readings)]
    import pyarrow as pa

    table = pa.table({k: v for k, v in traffic_columns(samples, 1.0, 1).items() if k != BROKER_COLUMN})
    index = QuotaIndex({Entity(client_id="p"): {"producer_byte_rate": limit}})
    window = Window(windowed=True)
    result, timeline, _ = local.timelines(readers.engine_columns(table, window), index, window)
    ((_, intervals),) = timeline.items()
    got = {s: ms for a, b, ms in intervals for s in range(a, b)}
    want = {100 + i: quota_throttle_ms(v, limit, 11_000.0) for i, v in enumerate(readings)}
    assert got == {s: ms for s, ms in want.items() if ms > 0} and len(got) == 3
    assert report(result, index, window)["summary"]["window"]["windowed_input"] is True
    # the same readings averaged again over the window: never over the limit
    again = local.timelines(readers.engine_columns(table, Window()), index, Window())[1]
    assert again == {}


def test_each_broker_is_replayed_on_its_own_and_the_reports_merge(tmp_path) -> None:
    """Quotas are per broker: 80 kB/s on each of two brokers is under a 100 kB/s limit, not 160 kB/s over it."""
    import pyarrow as pa

    samples = [
        _s("byte_rate", 80_000.0, float(t), broker=b, quota_type="Produce", client_id="p")
        for t in range(100, 120)
        for b in ("b1:7071", "b2:7071")
    ] + [
        _s("byte_rate", 150_000.0, float(t), broker="b2:7071", quota_type="Produce", client_id="q") for t in (110, 111)
    ]
    table = pa.table(traffic_columns(samples, 1.0, 1))
    index = QuotaIndex({Entity(client_id=DEFAULT): {"producer_byte_rate": 100_000}})
    analysis = Runner("prometheus", "local", Window(windowed=True), table=table).analyze(index, top=5)
    rep = analysis.report
    throttled = [(r["broker"], r["quota_id"]["client-id"], r["seconds_throttled"]) for r in rep["quota_ids"]]
    assert sorted(throttled) == [("b1:7071", "p", 0), ("b2:7071", "p", 0), ("b2:7071", "q", 2)]
    s = rep["summary"]
    assert s["brokers"] == ["b1:7071", "b2:7071"] and s["throttled_quota_ids"] == 1 and s["quota_ids"] == 3
    assert s["traffic"]["producer_byte_rate"]["usage"] == 80_000 * 40 + 300_000
    assert s["share_of_traffic_throttled"] == pytest.approx(300_000 / (80_000 * 40 + 300_000))
    one = merge_broker_reports({"b": rep})
    assert one["summary"]["rows"] == s["rows"]
    # --out: the files name the broker of each row
    import pyarrow.parquet as pq

    from kquotactl.impact.output import write_files

    write_files(rep, analysis.timeline, tmp_path, 5, 1, analysis.first_sample, analysis.rates)
    written = pq.read_table(tmp_path / "quota_ids.parquet").to_pylist()
    assert sorted((r["broker"], r["qid_client_id"]) for r in written) == [
        ("b1:7071", "p"),
        ("b2:7071", "p"),
        ("b2:7071", "q"),
    ]
    assert (tmp_path / "impact.png").stat().st_size > 0


@pytest.mark.parametrize(
    ("text", "seconds"), [("90s", 90), ("30m", 1800), ("24h", 86400), ("7d", 604800), ("1h30m", 5400), ("2", 2)]
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text, "--since") == seconds


@pytest.mark.parametrize("text", ["", "h", "24x", "1h 30m", "-5m", "0s", "m30"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(UsageError, match="--since"):
        parse_duration(text, "--since")


def test_points_in_time() -> None:
    now = 1_795_600_000.0
    assert parse_time("now", "--until", now) == now
    assert parse_time("1795000000", "--until", now) == 1_795_000_000
    assert parse_time("2026-11-25T10:00:00Z", "--until", now) == datetime(2026, 11, 25, 10, tzinfo=UTC).timestamp()
    assert parse_time("2026-11-25T10:00:00", "--until", now) == parse_time("2026-11-25T11:00:00+01:00", "--until", now)
    assert parse_time("2h", "--until", now) == now - 7200
    with pytest.raises(UsageError, match="--until 'yesterday' is not a time"):
        parse_time("yesterday", "--until", now)


def _one_line_error(args: list[str], *fragments: str) -> None:
    r = run_cli("impact", "run", *args)
    assert r.exit_code == 1, (r.stdout, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1 and not r.stdout, r.stderr
    for f in fragments:
        assert f in r.stderr, r.stderr


def test_command_line_errors(tmp_path) -> None:
    from kquotactl.testing.servers import free_port

    m = write_manifest(tmp_path, "quotas:\n  - entity: {client-id: p}\n    config: {producer_byte_rate: 1000}\n")
    nobody = f"http://127.0.0.1:{free_port()}"
    _one_line_error(["--from-prometheus", nobody, "-f", m], "cannot reach it")
    _one_line_error(["--from-prometheus", nobody, "--since", "24x", "-f", m], "--since '24x' is not a duration")
    _one_line_error(["--from-prometheus", nobody, "--until", "soon", "-f", m], "--until 'soon' is not a time")
    _one_line_error(["--from-prometheus", nobody, "--since", "1m", "--step", "2m", "-f", m], "--step 2m is longer")
    _one_line_error(["t.parquet", "--from-prometheus", nobody, "-f", m], "not both")
    _one_line_error(["--since", "1h", "-f", m], "give TRAFFIC")
    _one_line_error([str(tmp_path), "--since", "1h", "-f", m], "--since is a Prometheus range")


@pytest.mark.prometheus
def test_a_range_without_sensor_readings_is_an_error(tmp_path) -> None:
    """A real Prometheus that scrapes nothing: the range holds no quota sensor."""
    from kquotactl.testing.observe import PrometheusServer

    m = write_manifest(tmp_path, "quotas:\n  - entity: {client-id: p}\n    config: {producer_byte_rate: 1000}\n")
    with PrometheusServer(targets=[]) as prometheus:
        _one_line_error(["--from-prometheus", prometheus.url, "--since", "1h", "-f", m], "no quota sensor readings")


@pytest.mark.prometheus
def test_a_fresh_read_waits_for_a_scrape_and_says_when_prometheus_scrapes_no_broker() -> None:
    """verify and the staged check read the sensors as they are *now*: after a scrape that began after the call.
    A real Prometheus scraping no exporter never gives one: one line names the server and the cause, in time."""
    import time

    import pytest

    from kquotactl.core.errors import BackendUnavailable
    from kquotactl.observe.prometheus import wait_scraped_after
    from kquotactl.testing.observe import PrometheusServer

    with PrometheusServer(targets=[]) as prometheus:
        start = time.monotonic()
        with pytest.raises(BackendUnavailable) as e:
            wait_scraped_after(prometheus.url, time.time(), timeout=1.5)
        assert time.monotonic() - start < 5
    message = str(e.value)
    assert "\n" not in message and prometheus.url in message
    assert "has not scraped the brokers' exporters in 1.5 s (no exporter with quota sensor series)" in message


def test_merged_reports_do_not_depend_on_which_broker_came_first() -> None:
    """Seed 3570835460 of test_recommend_engines: 4100.168 from one engine, 4100.168000000001 from the other,
    the brokers' float usage added in the order each engine finished them."""
    from kquotactl.core.keys import KEYS

    def part(usage: float) -> dict[str, Any]:
        return {"rows": 1, "rows_unlimited": 0, "usage": usage, "usage_throttled": usage / 3}

    def rep(usage: float) -> dict[str, Any]:
        traffic = {k: part(usage) for k in KEYS}
        summary = {"rows": 1, "seconds": 1, "window": {}, "traffic": traffic, "not_modelled": [], "open_loop": True}
        return {"summary": summary, "quota_ids": []}

    reports = {"b1": rep(0.1), "b2": rep(0.2), "b3": rep(0.3)}
    forward = merge_broker_reports(reports)
    for order in (["b3", "b2", "b1"], ["b2", "b3", "b1"]):
        assert merge_broker_reports({b: reports[b] for b in order}) == forward
    # exactly rounded: 0.1 + 0.2 + 0.3 added one by one is 0.6000000000000001
    assert forward["summary"]["traffic"]["producer_byte_rate"]["usage"] == 0.6


def test_the_sensors_rates_are_each_samples_rate_summed_over_the_level() -> None:
    """From Prometheus the readings are the broker's rates: a sample's rate is the reading (no second ``Rate``),
    summed over the sensors a level groups (a user's two client-ids at ``--level user``); a sensor coarser than
    the level (a user's, at user-client) is left out and counted."""
    import pyarrow as pa

    from kquotactl.core.keys import KEYS
    from kquotactl.core.recommend import GroupId, Level
    from kquotactl.impact.recommend import windowed_sample_rates
    from kquotactl.observe.throttled import sensor_traffic

    produce = next(k for k in KEYS if KEYS[k].sensor is not None and KEYS[k].sensor.quota_type == "Produce")
    series = [
        (_s("byte_rate", 0.0, 0.0, quota_type="Produce", user="u", client_id="a"), [11.0, 12.0, 13.0], [100.0] * 3),
        (_s("byte_rate", 0.0, 0.0, quota_type="Produce", user="u", client_id="b"), [12.0, 13.0], [50.0, 70.0]),
        (_s("byte_rate", 0.0, 0.0, quota_type="Produce", user="v", client_id=""), [11.0], [999.0]),
        (_s("byte_rate", 0.0, 0.0, "b2:7071", quota_type="Produce", user="u", client_id="a"), [11.0], [5.0]),
    ]
    table = pa.table(dict(sensor_traffic(series, 1.0, 1)))
    window = Window(windowed=True)
    per_user = {gk: {b: v.tolist() for b, v in per.items()} for gk, per in windowed_sample_rates(
        table, Level.USER, window, [produce])[0].items()}  # fmt: skip
    skipped = windowed_sample_rates(table, Level.USER, window, [produce])[1]
    assert per_user == {
        (GroupId(user="u"), produce): {"b1:7071": [100.0, 150.0, 170.0], "b2:7071": [5.0]},
        (GroupId(user="v"), produce): {"b1:7071": [999.0]},
    }
    assert skipped == {}
    per_pair, skipped = windowed_sample_rates(table, Level.USER_CLIENT, window, [produce])
    assert set(per_pair) == {(GroupId(user="u", client_id="a"), produce), (GroupId(user="u", client_id="b"), produce)}
    assert per_pair[(GroupId(user="u", client_id="b"), produce)]["b1:7071"].tolist() == [50.0, 70.0]
    assert skipped == {produce: 1}  # v's sensor is per user: it cannot be split per client-id


def test_the_column_wise_windowed_replay_is_the_local_engines() -> None:
    """Random windowed tables (pairs sharing a user's quota, defaults, ips, keys without a quota, nulls, readings
    over and under their limits), seed printed: the same result, field for field, as the local engine's."""
    import os
    import random

    import pyarrow as pa

    from kquotactl.core.keys import KEYS, KeyScope
    from kquotactl.impact import local
    from kquotactl.impact.columnar import run_windowed
    from kquotactl.impact.readers import engine_columns
    from kquotactl.observe.throttled import TRAFFIC_COLUMNS

    seed = int(os.environ.get("KQUOTACTL_FUZZ_SEED", random.randrange(2**32)))
    rng = random.Random(seed)
    client_keys = [k for k in KEYS if KEYS[k].kind is not KeyScope.IP and KEYS[k].sensor is not None]
    ip_key = next(k for k in KEYS if KEYS[k].kind is KeyScope.IP)
    for case in range(25):
        n = rng.randint(0, 300)
        cols: dict[str, list[Any]] = {
            "ts": [None if rng.random() < 0.02 else float(1000 + rng.randint(0, 40)) for _ in range(n)],
            "user": [rng.choice(["", "u1", "u2", None]) for _ in range(n)],
            "client_id": [rng.choice(["", "a", "b"]) for _ in range(n)],
            "ip": [rng.choice(["", "10.0.0.1", "10.0.0.2"]) for _ in range(n)],
        }
        for c in TRAFFIC_COLUMNS:
            cols[c] = [rng.choice([0.0, rng.uniform(0, 5e5), rng.uniform(0, 50)]) for _ in range(n)]
        names = {c: pa.string() for c in ("user", "client_id", "ip")}  # typed: a case may draw no value at all
        table = pa.table({c: pa.array(v, type=names.get(c, pa.float64())) for c, v in cols.items()})
        quotas: dict[Entity, dict[str, Any]] = {}
        for entity in (Entity(user="u1"), Entity(user="u2", client_id="a"), Entity(client_id=DEFAULT),
                       Entity(user=DEFAULT), Entity(ip=DEFAULT), Entity(ip="10.0.0.1")):  # fmt: skip
            keys = [ip_key] if entity.ip is not None else client_keys
            quotas[entity] = {k: rng.choice([10, 1000, 100_000]) for k in keys if rng.random() < 0.6}
        index = QuotaIndex({e: c for e, c in quotas.items() if c})
        window = Window(rng.choice([2, 11]), rng.choice([1, 2]), windowed=True)
        want = report(local.run(engine_columns(table, window), index, window), index, window)
        got = report(run_windowed(table, index, window), index, window)
        assert got == want, f"seed {seed} (KQUOTACTL_FUZZ_SEED={seed}), case {case}"
