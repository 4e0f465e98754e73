"""``kquotactl impact`` end to end: generate, run on manifests and on a live ZooKeeper, files, compare, errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from kquotactl.impact import generate


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("impact")
    from conftest import run_cli

    r = run_cli(
        "impact",
        "generate",
        str(d / "t.parquet"),
        "--rows",
        "20000",
        "--users",
        "100",
        "--clients",
        "400",
        "--rate",
        "4000",
        "--quotas-out",
        str(d / "q.yaml"),
    )
    assert r.exit_code == 0, r.stderr
    assert "wrote 20,000 rows" in r.stdout
    return d


def test_run_json_on_a_manifest(cli, data):
    r = cli("-o", "json", "impact", "run", str(data / "t.parquet"), "-f", str(data / "q.yaml"), "--engine", "local")
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    assert set(out) == {"summary", "quota_ids"}
    s = out["summary"]
    assert s["rows"] == 20000 and s["engine"] == "local" and s["quota_ids"] == len(out["quota_ids"])
    assert s["throttled_quota_ids"] == sum(1 for q in out["quota_ids"] if q["seconds_throttled"] > 0) > 0
    top = out["quota_ids"][0]
    assert set(top) == {
        "key",
        "quota_id",
        "level",
        "entity_path",
        "limit",
        "seconds_throttled",
        "max_rate",
        "total_throttle_ms",
        "max_throttle_ms",
    }
    assert top["total_throttle_ms"] == max(q["total_throttle_ms"] for q in out["quota_ids"])


def test_auto_engine_is_local_for_small_inputs_and_table_output(cli, data):
    r = cli("-o", "table", "impact", "run", str(data / "t.parquet"), "-f", str(data / "q.yaml"), "--top", "3")
    assert r.exit_code == 0, r.stderr
    assert "Top 3 quota-ids by total throttle" in r.stdout and "Traffic per quota type" in r.stdout
    assert "open loop" in r.stdout


def test_out_dir_writes_parquet_csv_summary_and_picture(cli, data, tmp_path):
    import pyarrow.parquet as pq

    out = tmp_path / "report"
    r = cli(
        "-o",
        "json",
        "impact",
        "run",
        str(data / "t.parquet"),
        "-f",
        str(data / "q.yaml"),
        "--engine",
        "local",
        "--out",
        str(out),
        "--top",
        "4",
    )
    assert r.exit_code == 0, r.stderr
    rows = json.loads(r.stdout)["quota_ids"]
    table = pq.read_table(out / "quota_ids.parquet")
    assert table.num_rows == len(rows)
    assert table.column("total_throttle_ms").to_pylist() == [q["total_throttle_ms"] for q in rows]
    assert (out / "quota_ids.csv").read_text().splitlines()[0].startswith('"key","qid_user","qid_client_id"')
    assert json.loads((out / "summary.json").read_text())["rows"] == 20000
    assert (out / "impact.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_compare_two_quota_sets(cli, data, tmp_path):
    quotas = generate.quotas(100, 400)
    base = {e: {k: v * 4 for k, v in cfg.items()} for e, cfg in quotas.items()}  # everything 4x looser
    generate.write_manifest(base, tmp_path / "base.yaml")
    r = cli(
        "-o",
        "json",
        "impact",
        "run",
        str(data / "t.parquet"),
        "-f",
        str(data / "q.yaml"),
        "--engine",
        "local",
        "--compare",
        str(tmp_path / "base.yaml"),
    )
    assert r.exit_code == 0, r.stderr
    out = json.loads(r.stdout)
    cmp = out["compare"]
    assert cmp["summary"]["started"] > 0 and cmp["summary"]["limit_changes"] > 0
    throttled = {(q["key"], json.dumps(q["quota_id"])) for q in out["quota_ids"] if q["seconds_throttled"] > 0}
    for q in cmp["started_throttling"]:
        assert (q["key"], json.dumps(q["quota_id"])) in throttled
    change = cmp["limit_changes"][0]
    assert change["after"]["limit"] * 4 == change["before"]["limit"]


@pytest.mark.zookeeper
def test_live_zookeeper_quota_set(cli, chroot, tmp_path):
    rows = [{"ts": 100.0 + i / 10, "user": "alice", "client_id": "app", "produce_bytes": 5000} for i in range(50)]
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "t.parquet")
    assert (
        cli(
            "--zookeeper", chroot.connect, "alter", "--user", "alice", "--add-config", "producer_byte_rate=1000"
        ).exit_code
        == 0
    )
    before = chroot.snapshot()
    r = cli("--zookeeper", chroot.connect, "-o", "json", "impact", "run", str(tmp_path / "t.parquet"))
    assert r.exit_code == 0, r.stderr
    [q] = json.loads(r.stdout)["quota_ids"]
    # 10 rows x 5000 B per second for 5 s: the 11 s window holds 50,000 B by t=104 -> 4545 B/s vs 1000
    assert (q["entity_path"], q["level"], q["seconds_throttled"]) == ("users/alice", 3, 5)
    assert chroot.snapshot() == before  # reading quotas writes nothing


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["impact", "run", "/nonexistent/t.parquet", "-f", "q.yaml"], "does not exist"),
        (["impact", "run", "{data}/t.parquet", "-f", "{data}/q.yaml", "--conf", "oops"], "--conf 'oops' is not"),
        (["impact", "run", "{data}/t.parquet", "-f", "{data}/missing.yaml"], "no such file"),
        (["impact", "run", "{data}/t.parquet"], "no cluster given"),
        (["impact", "run", "{data}/t.parquet", "--compare", "live"], "--compare live needs"),
        (["impact", "run", "{data}/q.yaml", "-f", "{data}/q.yaml"], "no .parquet, .csv or .jsonl"),
        (["impact", "generate", "{data}/x.txt", "--rows", "5"], "cannot tell the format"),
    ],
)
def test_bad_input_is_one_line_exit_1(cli, data, args, message):
    r = cli(*[a.format(data=data) for a in args], env={"KQUOTACTL_ZOOKEEPER": "", "KQUOTACTL_BOOTSTRAP_SERVER": ""})
    assert r.exit_code == 1
    assert message in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.spark
def test_spark_engine_through_the_cli_matches_local(cli, data, spark):
    args = ["-o", "json", "impact", "run", str(data / "t.parquet"), "-f", str(data / "q.yaml")]
    local = json.loads(cli(*args, "--engine", "local").stdout)
    r = cli(*args, "--engine", "spark", "--master", "local[2]")
    assert r.exit_code == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["summary"].pop("engine") == "spark" and local["summary"].pop("engine") == "local"
    assert got == local


def test_table_gives_every_rate_its_unit(cli, data):
    """Limit and max rate cells carry the key's unit on each row (bytes/s as MiB/s, request time as %)."""
    r = cli("-o", "table", "impact", "run", str(data / "t.parquet"), "-f", str(data / "q.yaml"), "--top", "8")
    assert r.exit_code == 0, r.stderr
    units = {
        "producer_byte_rate": r"[\d.,]+ (B|KiB|MiB|GiB)/s",
        "consumer_byte_rate": r"[\d.,]+ (B|KiB|MiB|GiB)/s",
        "request_rate": r"[\d.,]+ requests/s",
        "request_percentage": r"[\d.,]+ %",
        "connection_creation_rate": r"[\d.,]+ connections/s",
    }
    top_table = r.stdout.split("Top 8 quota-ids by total throttle\n")[1].split("Traffic per quota type")[0]
    rows = [re.split(r"  +", line.strip()) for line in top_table.splitlines()[1:]]  # off a terminal: one table
    assert 3 <= len(rows) <= 8
    assert {"producer_byte_rate", "request_percentage"} <= {cells[0] for cells in rows}
    for cells in rows:
        key, limit, max_rate = cells[0], cells[4], cells[6]
        assert re.fullmatch(units[key] + r"( \(\d+\))?", limit), (key, limit)  # a limit: its exact number too
        assert re.fullmatch(units[key], max_rate), (key, max_rate)
    traffic = r.stdout.split("Traffic per quota type")[1]
    assert re.search(r"producer_byte_rate +[\d.,]+ +[\d.,]+ +[\d.,]+ (KiB|MiB|GiB)", traffic)
    assert re.search(r"request_percentage +[\d.,]+ +[\d.,]+ +[\d.,]+ s of thread time", traffic)
    assert not [line for line in r.stdout.splitlines() if line != line.rstrip()]  # no line padded


def test_compare_table_gives_limits_their_units(cli, data, tmp_path):
    quotas = generate.quotas(100, 400)
    base = {e: {k: v * 4 for k, v in cfg.items()} for e, cfg in quotas.items()}
    generate.write_manifest(base, tmp_path / "base.yaml")
    args = ("impact", "run", str(data / "t.parquet"), "-f", str(data / "q.yaml"), "--engine", "local")
    r = cli("-o", "table", *args, "--compare", str(tmp_path / "base.yaml"), "--top", "50")
    assert r.exit_code == 0, r.stderr
    changes = r.stdout.split("Effective limit changes")[1]
    rows = [re.split(r"  +", line.strip()) for line in changes.splitlines()[2:]]
    assert rows
    for cells in rows:
        key, before, after = cells[1:4]
        unit = {"request_percentage": "%", "request_rate": "requests/s", "connection_creation_rate": "connections/s"}
        pattern = rf"[\d.]+ {unit[key]} \(.+\)" if key in unit else r"[\d.]+ (B|KiB|MiB|GiB)/s( \(\d+\))? \(.+\)"
        for side in (before, after):
            assert side == "unlimited" or re.fullmatch(pattern, side), (key, side)


def test_kafka_version_picks_the_brokers_sampled_rate(cli, tmp_path):
    """1000 B at 0.75, 1.5 and 2.75 s against 100 B/s with 2 samples of 1 s. A 3.8+ broker keeps a ring of 3
    samples, purged by their last recording: the one started at 0.75 s (last written at 1.5 s) still counts,
    3000 B over 2 s = 1500 B/s -> 28000 ms. A 3.7 broker keeps 2 and purges by the sample's start: only the new
    sample is left, padded to 1 s -> 1000 B/s -> 9000 ms."""
    traffic = tmp_path / "t.jsonl"
    traffic.write_text(
        "".join(json.dumps({"ts": t, "user": "u", "produce_bytes": 1000}) + "\n" for t in (0.75, 1.5, 2.75))
    )
    manifest = tmp_path / "q.yaml"
    manifest.write_text("quotas:\n  - entity: {user: u}\n    config: {producer_byte_rate: 100}\n")
    base = ("-o", "json", "impact", "run", str(traffic), "-f", str(manifest), "--engine", "local", "--window-num", "2")
    throttles = {}
    for version in (None, "3.7", "3.8"):
        r = cli(*base, *(("--kafka-version", version) if version else ()))
        assert r.exit_code == 0, r.stderr
        out = json.loads(r.stdout)
        [row] = out["quota_ids"]
        throttles[version] = (row["seconds_throttled"], row["total_throttle_ms"])
        assert out["summary"]["window"].get("kafka_version") == version
    # the first two recordings: 9000 and 18250 ms on both
    assert throttles == {None: (3, 9000 + 18250 + 28000), "3.8": (3, 55250), "3.7": (3, 9000 + 18250 + 9000)}
    r = cli(*base, "--kafka-version", "three")
    assert r.exit_code != 0 and "--kafka-version 'three'" in r.stderr


def test_an_infinite_rate_is_written_as_java_spells_it(cli, tmp_path):
    """Before 3.3 a window of one sample is 0 ms long at a sample's first recording: the broker's rate is infinite
    (and its throttle 0: Math.round of NaN). JSON has no Infinity: the report says "Infinity", as explain does."""
    traffic = tmp_path / "t.jsonl"
    traffic.write_text(json.dumps({"ts": 0.5, "user": "u", "produce_bytes": 1000}) + "\n")
    manifest = tmp_path / "q.yaml"
    manifest.write_text("quotas:\n  - entity: {user: u}\n    config: {producer_byte_rate: 100}\n")
    args = ("-o", "json", "impact", "run", str(traffic), "-f", str(manifest), "--engine", "local", "--window-num", "1")
    r = cli(*args, "--kafka-version", "3.2")
    assert r.exit_code == 0, r.stderr
    [row] = json.loads(r.stdout)["quota_ids"]
    assert (row["max_rate"], row["max_throttle_ms"]) == ("Infinity", 0)
    r = cli(*args)  # 3.3+: the window is at least 1 ms
    assert json.loads(r.stdout)["quota_ids"][0]["max_rate"] == 1_000_000.0
