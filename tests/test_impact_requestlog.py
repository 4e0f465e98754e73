"""The broker request log as impact input: the format (lines of Kafka 2.8, 3.9, 4.1 and real 3.9/4.4 brokers'
lines), the local reader and its compressions, the CLI, and the Spark engine giving the same table and report (the
Spark tests are marked ``spark``)."""

from __future__ import annotations

import gzip
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kquotactl.core.entities import Entity
from kquotactl.core.precedence import QuotaIndex
from kquotactl.impact import generate, local, readers, replay
from kquotactl.impact.requestlog import (
    LINE,
    PRINCIPAL_NAME,
    REQUEST_EXEMPT_APIS,
    STAMP_CHARS,
    Request,
    ip_of,
    parse_line,
    user_of,
)

DATA = Path(__file__).parent / "data" / "request-log"
SEED = int(os.environ.get("KQUOTACTL_FUZZ_SEED") or random.SystemRandom().randrange(2**32))
print(f"request-log seed: KQUOTACTL_FUZZ_SEED={SEED}", file=sys.stderr)

# Lines as the brokers write them: "[%d] %p %m (%c)%n" with m = "Completed request:" + requestDescMetrics' JSON.
# 2.8: connection ids local-remote-index; Fetch v12 carries replicaId (-1 for a consumer).
V28_PRODUCE = (
    '[2026-11-25 10:00:00,250] DEBUG Completed request:{"isForwarded":false,"requestHeader":{"requestApiKey":0,'
    '"requestApiVersion":8,"correlationId":7,"clientId":"billing-app","requestApiKeyName":"PRODUCE"},"request":'
    '{"transactionalId":null,"acks":-1,"timeoutMs":30000,"topicData":[{"name":"orders","partitionData":[{"index":0,'
    '"recordsSizeInBytes":1200},{"index":3,"recordsSizeInBytes":300}]}]},"response":{"responses":[{"name":"orders",'
    '"partitionResponses":[{"index":0,"errorCode":0,"baseOffset":41}]}],"throttleTimeMs":0},"connection":'
    '"10.0.0.5:9092-10.1.2.3:51234-17","totalTimeMs":3.2,"requestQueueTimeMs":0.2,"localTimeMs":2.5,'
    '"remoteTimeMs":0.0,"throttleTimeMs":0,"responseQueueTimeMs":0.1,"sendTimeMs":0.4,"securityProtocol":'
    '"SASL_PLAINTEXT","principal":"User:alice","listener":"SASL_PLAINTEXT","clientInformation":{"softwareName":'
    '"apache-kafka-java","softwareVersion":"2.8.2"}} (kafka.request.logger)'
)
V28_FETCH_CONSUMER = (
    '[2026-11-25 10:00:00,900] DEBUG Completed request:{"isForwarded":false,"requestHeader":{"requestApiKey":1,'
    '"requestApiVersion":12,"correlationId":8,"clientId":"reader","requestApiKeyName":"FETCH"},"request":'
    '{"replicaId":-1,"maxWaitMs":500,"minBytes":1,"topics":[]},"response":{"throttleTimeMs":0,"errorCode":0,'
    '"sessionId":0,"responses":[{"topic":"orders","partitionResponses":[{"partition":0,"errorCode":0,"highWatermark":'
    '42,"recordSetSizeInBytes":4096}]}]},"connection":"10.0.0.5:9092-10.1.2.4:40000-3","totalTimeMs":501.0,'
    '"requestQueueTimeMs":0.1,"localTimeMs":0.7,"remoteTimeMs":500.0,"throttleTimeMs":0,"responseQueueTimeMs":0.1,'
    '"sendTimeMs":0.1,"securityProtocol":"PLAINTEXT","principal":"User:ANONYMOUS","listener":"PLAINTEXT",'
    '"clientInformation":{"softwareName":"librdkafka","softwareVersion":"1.9.2"}} (kafka.request.logger)'
)
V28_FETCH_FOLLOWER = V28_FETCH_CONSUMER.replace('"replicaId":-1', '"replicaId":2')
# 3.9: connection ids local-remote-processor-index; Fetch v16 has no replicaId for a consumer.
V39_FETCH = (
    '[2026-11-25 10:00:01,010] DEBUG Completed request:{"isForwarded":false,"requestHeader":{"requestApiKey":1,'
    '"requestApiVersion":16,"correlationId":9,"clientId":"reader","requestApiKeyName":"FETCH"},"request":'
    '{"maxWaitMs":500,"minBytes":1,"topics":[]},"response":{"throttleTimeMs":0,"errorCode":0,"sessionId":1,'
    '"responses":[{"topicId":"Yh3xQ0zqT6y0nQ1m1a2b3c","partitions":[{"partitionIndex":0,"recordsSizeInBytes":100},'
    '{"partitionIndex":1,"recordsSizeInBytes":23}]}]},"connection":"10.0.0.5:9092-10.1.2.4:40001-2-18",'
    '"totalTimeMs":1.0,"requestQueueTimeMs":0.1,"localTimeMs":0.25,"remoteTimeMs":0.5,"throttleTimeMs":0,'
    '"responseQueueTimeMs":0.1,"sendTimeMs":0.1,"securityProtocol":"PLAINTEXT","principal":"User:ANONYMOUS",'
    '"listener":"PLAINTEXT","clientInformation":{"softwareName":"librdkafka","softwareVersion":"2.6.1"}} '
    "(kafka.request.logger)"
)
# 4.1: Fetch v17 moved a follower's replicaId into replicaState; an IPv6 client.
V41_FETCH_FOLLOWER = V39_FETCH.replace('{"maxWaitMs"', '{"replicaState":{"replicaId":1,"replicaEpoch":3},"maxWaitMs"')
V41_API_VERSIONS = (
    '[2026-11-25 10:00:01,500] DEBUG Completed request:{"isForwarded":false,"requestHeader":{"requestApiKey":18,'
    '"requestApiVersion":4,"correlationId":1,"clientId":"rdkafka \\"quoted\\" \\u00e9","requestApiKeyName":'
    '"API_VERSIONS"},"request":{"clientSoftwareName":"librdkafka","clientSoftwareVersion":"2.6.1"},"response":'
    '{"errorCode":0,"apiKeys":[],"throttleTimeMs":0},"connection":"0:0:0:0:0:0:0:1:9092-0:0:0:0:0:0:0:1:5555-0-1",'
    '"totalTimeMs":0.5,"requestQueueTimeMs":0.1,"localTimeMs":0.125,"remoteTimeMs":0.0,"throttleTimeMs":0,'
    '"responseQueueTimeMs":0.1,"sendTimeMs":0.1,"securityProtocol":"SSL","principal":"User:CN=bob,O=acme",'
    '"listener":"SSL","clientInformation":{"softwareName":"librdkafka","softwareVersion":"2.6.1"}} '
    "(kafka.request.logger)"
)
GOOD = [V28_PRODUCE, V28_FETCH_CONSUMER, V28_FETCH_FOLLOWER, V39_FETCH, V41_FETCH_FOLLOWER, V41_API_VERSIONS]
MALFORMED = [
    "[2026-11-25 10:00:02,000] INFO some other logger's line (kafka.server.KafkaApis)",
    V28_PRODUCE[: len(V28_PRODUCE) // 2],  # cut short
    V28_PRODUCE.replace("2026-11-25 10:00:00", "2026-02-30 10:00:00"),  # no such day
    V28_PRODUCE.replace('"principal":"User:alice",', ""),  # no principal
    V28_PRODUCE.replace('"requestApiKey":0,', ""),  # no api key
    V28_PRODUCE.replace('"connection":', '"connection" '),  # not JSON
    "garbage",
]


def test_lines_of_each_version_map_to_traffic_rows() -> None:
    ts = 1_795_600_800  # 2026-11-25T10:00:00Z
    got = [parse_line(line) for line in GOOD]
    assert got == [
        Request(ts + 0.25, "alice", "billing-app", "10.1.2.3", 1500, 0, 1, 2.5, 0),
        Request(ts + 0.9, "ANONYMOUS", "reader", "10.1.2.4", 0, 4096, 1, 0.7, 0),
        Request(ts + 0.9, "ANONYMOUS", "reader", "10.1.2.4", 0, 0, 1, 0.0, 0),  # a follower: exempt
        Request(ts + 1.01, "ANONYMOUS", "reader", "10.1.2.4", 0, 123, 1, 0.25, 0),
        Request(ts + 1.01, "ANONYMOUS", "reader", "10.1.2.4", 0, 0, 1, 0.0, 0),
        Request(ts + 1.5, "CN=bob,O=acme", 'rdkafka "quoted" é', "0:0:0:0:0:0:0:1", 0, 0, 1, 0.125, 1),
    ]


@pytest.mark.parametrize("line", MALFORMED)
def test_malformed_lines_are_none(line: str) -> None:
    assert parse_line(line) is None


def test_the_generator_writes_lines_the_parser_reads_back() -> None:
    for version in generate.KAFKA_VERSIONS:
        line = generate.request_log_line(1_795_600_800.5, 0, "u", "c", "10.0.0.1", (10, 20), 1.5, version)
        assert parse_line(line) == Request(1_795_600_800.5, "u", "c", "10.0.0.1", 30, 0, 1, 1.5, 0)
        follower = generate.request_log_line(1_795_600_800.5, 1, "u", "c", "10.0.0.1", (10,), 1.5, version, 3)
        assert parse_line(follower).fetch_bytes == 0  # type: ignore[union-attr]
        acks0 = generate.request_log_line(1_795_600_800.5, 0, "u", "c", "10.0.0.1", (10,), 1.5, version, acks=0)
        assert parse_line(acks0) == Request(1_795_600_800.5, "u", "c", "10.0.0.1", 10, 0, 1, 0.0, 0)


def test_names_and_the_line_pattern() -> None:
    assert user_of("User:alice") == "alice" and user_of("User:") == "" and user_of("no-type") == "no-type"
    assert ip_of("a:1-10.0.0.9:2-3") == "10.0.0.9" and ip_of("broken") == ""
    assert LINE.startswith("(?s)^")  # . matches every character in both Python and Java regexes


def test_spark_matches_the_line_in_parts_as_the_whole_pattern_does() -> None:
    """Spark matches LINE as its head (on the text before the first ``{``) and tail (after the last ``}``), the JSON
    the text between, the stamp and milliseconds at fixed offsets of the head: the same lines, the same groups,
    on real lines, malformed ones and random cuts and splices of them (seed printed)."""
    from kquotactl.impact.spark import LINE_HEAD, LINE_TAIL

    assert LINE_HEAD + r"(\{.*\})" + LINE_TAIL == LINE
    rnd = random.Random(SEED)
    lines = [*GOOD, *MALFORMED, "", "{}", "}{", GOOD[0].replace("Completed request:", "Completed request: ")]
    for _ in range(3000):
        a, b = rnd.choice(GOOD), rnd.choice([*GOOD, *MALFORMED])
        i, j = rnd.randrange(len(a) + 1), rnd.randrange(len(b) + 1)
        lines.append(rnd.choice([a[:i] + b[j:], a[:i], a + rnd.choice(["}", " }", "} (x)", " (x)", "\r", "}x"])]))
    for line in lines:
        m = re.match(LINE, line)
        head, tail = line.split("{", 1)[0], line.rsplit("}", 1)[-1]
        h = re.match(LINE_HEAD, head)  # as Spark's regexp_extract: "" for no match
        parts = head != "" and (h.group(0) if h else "") == head and re.match("^" + LINE_TAIL, tail) is not None
        assert (m is not None) == parts, f"seed {SEED}: {line!r}"
        if m is not None:
            assert m.group(3) == line[len(head) : len(line) - len(tail)], f"seed {SEED}: {line!r}"
            assert (m.group(1), m.group(2)) == (head[1 : 1 + STAMP_CHARS], head[STAMP_CHARS + 2 : STAMP_CHARS + 5])


def test_sparks_record_size_pattern_finds_what_the_local_one_does() -> None:
    from kquotactl.impact.requestlog import RECORDS_SIZE
    from kquotactl.impact.spark import RECORDS_SIZE_SPARK

    rnd = random.Random(SEED)
    bits = [
        '"recordsSizeInBytes":',
        '"recordSetSizeInBytes":',
        '"recordSizeInBytes":',
        '"records":',
        '"record',
        "12",
        "1234567890",
        "12345678901",
        "-3",
        '"',
        "x",
        "sSizeInBytes",
        'SetSizeInBytes":7',
    ]
    for text in [*GOOD, *(("".join(rnd.choice(bits) for _ in range(rnd.randrange(30)))) for _ in range(5000))]:
        assert re.findall(RECORDS_SIZE_SPARK, text) == re.findall(RECORDS_SIZE, text), f"seed {SEED}: {text!r}"


def _write_logs(d: Path) -> list[str]:
    """A logs/ directory: a gzipped rotation (malformed lines inside), the live file, and a file not read."""
    d.mkdir()
    rotated = d / "kafka-request.log.2026-11-25-09.gz"
    with gzip.open(rotated, "wt") as f:
        f.write("\n".join([GOOD[0], "", MALFORMED[0], GOOD[1], *MALFORMED[1:]]) + "\n")
    (d / "kafka-request.log").write_text("\n".join(GOOD[2:]) + "\r\n\n")
    (d / "server.log").write_text("not a request log\n")
    return [str(rotated), str(d / "kafka-request.log")]


def test_local_reader_counts_malformed_lines_and_reads_gz_and_rotations(tmp_path: Path) -> None:
    files = _write_logs(tmp_path / "logs")
    table, stats = readers.read_request_log([str(tmp_path / "logs")])
    assert table.num_rows == len(GOOD) and stats.requests == len(GOOD)
    assert stats.malformed == len(MALFORMED) and stats.lines == len(GOOD) + len(MALFORMED)
    assert stats.first_malformed == f"{(tmp_path / 'logs' / 'kafka-request.log.2026-11-25-09.gz').absolute()}:3"
    assert stats.warning() == f"{len(MALFORMED)} malformed request-log lines skipped, first at {stats.first_malformed}"
    again, _ = readers.read_request_log(list(reversed(files)))  # several files: the same table
    assert again.equals(table)


def test_cli_reports_skipped_lines_on_stderr_and_in_json(tmp_path: Path) -> None:
    _write_logs(tmp_path / "logs")
    quotas = tmp_path / "q.yaml"
    quotas.write_text("quotas:\n- entity: {user: alice}\n  config: {producer_byte_rate: 100}\n")
    cmd = [sys.executable, "-m", "kquotactl", "-o", "json", "impact", "run", "--input-format", "kafka-request-log"]
    p = subprocess.run([*cmd, str(tmp_path / "logs"), "-f", str(quotas)], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["summary"]["engine"] == "local"  # auto: a small input
    assert out["summary"]["request_log"]["malformed_lines"] == len(MALFORMED)
    assert f"{len(MALFORMED)} malformed request-log lines skipped, first at " in p.stderr
    (row,) = out["quota_ids"]
    assert (row["quota_id"], row["max_throttle_ms"] > 0) == ({"user": "alice", "client-id": ""}, True)
    table = subprocess.run([*cmd[:-2], str(tmp_path / "a"), str(tmp_path / "b")], capture_output=True, text=True)
    assert table.returncode != 0 and "kafka-request-log" in table.stderr


@pytest.mark.spark
def test_spark_parses_the_same_table_and_report_as_the_local_engine(spark, tmp_path: Path) -> None:
    from kquotactl.impact import spark as sp

    _write_logs(tmp_path / "logs")
    traffic = generate.generate(3000, users=8, clients=20, rate=100)
    generate.write_lines(generate.request_log(traffic, "3.9", malformed_every=500), tmp_path / "logs" / "b-request.log")
    quotas = {**generate.quotas(8, 20), Entity(user="svc-0"): {"producer_byte_rate": 2000}}
    index, window = QuotaIndex(quotas), replay.Window()
    table, stats = readers.read_request_log([str(tmp_path / "logs")])
    df, sstats = sp.read_request_log(spark, [str(tmp_path / "logs")], window)
    assert sstats == stats and stats.malformed == len(MALFORMED) + 6
    columns = readers.engine_columns(table, window)
    rows = sorted(zip(*(columns[c] for c in df.columns), strict=True))
    assert sorted(tuple(r) for r in df.collect()) == rows
    want = replay.report(local.run(columns, index, window), index, window)
    result, *_ = sp.run(df, replay.quota_table(index), window)
    assert replay.report(result, index, window) == want
    assert want["summary"]["throttled_quota_ids"] > 0


def test_the_cli_offers_exactly_the_engines_input_formats() -> None:
    """The command spells the formats out (importing the engine would slow every start-up): held to the engine's."""
    from kquotactl.cli.commands.impact import run
    from kquotactl.impact.engine import INPUT_FORMATS

    (option,) = [p for p in run.params if p.name == "input_format"]
    assert tuple(option.type.choices) == INPUT_FORMATS  # type: ignore[attr-defined]


# -- what a line means for quotas, as the brokers record it ---------------------------------------------------------


@pytest.mark.parametrize(
    "principal", ["User:alice", "ServiceAccount:alice", "Group:ops:team", "User:CN=bob,O=acme", "Custom:", "x:\ny"]
)
def test_the_quota_user_is_the_principals_name_whatever_its_type(principal: str) -> None:
    """KafkaPrincipal.toString is type + ":" + name and the quota managers use getName: the text after the first
    ":"; the Spark engine's PRINCIPAL_NAME extracts the same."""
    name = principal.split(":", 1)[1]
    line = V28_PRODUCE.replace('"User:alice"', json.dumps(principal))
    assert user_of(principal) == name and parse_line(line).user == name  # type: ignore[union-attr]
    assert re.match(PRINCIPAL_NAME, principal).group(1) == name  # type: ignore[union-attr]


def test_request_time_the_broker_records_as_exempt_is_zero() -> None:
    """acks=0 (KafkaApis.handleProduceRequest), a follower's Fetch and the sendResponseExemptThrottle APIs: their
    time goes to the exempt sensor. Their bytes still count on the produce quota (acks=0 is not exempt from it)."""
    acks0 = parse_line(V28_PRODUCE.replace('"acks":-1', '"acks":0'))
    assert acks0 is not None and (acks0.produce_bytes, acks0.request_time_ms) == (1500, 0.0)
    for acks in ("1", "-1", '"0"'):
        assert parse_line(V28_PRODUCE.replace('"acks":-1', f'"acks":{acks}')).request_time_ms == 2.5  # type: ignore[union-attr]
    for api in range(90):
        line = parse_line(V41_API_VERSIONS.replace('"requestApiKey":18', f'"requestApiKey":{api}'))
        assert line is not None and line.request_time_ms == (0.0 if api in REQUEST_EXEMPT_APIS else 0.125), api


def test_share_fetch_counts_on_the_fetch_quota_when_its_size_is_logged() -> None:
    """KafkaApis.processShareFetchResponse records ShareFetch (78) on the fetch quota (4.1+); ShareAcknowledge (79)
    only on the request quota. Real 4.x brokers log ShareFetch records as bytes, empty once sent (see the fixture)."""
    (share,) = [
        line for line in _fixture("4.4") if '"requestApiKeyName":"SHARE_FETCH"' in line and "PLAINTEXT" in line
    ][:1]
    sized = share.replace('"records":""', '"recordsSizeInBytes":1201')
    assert parse_line(share).fetch_bytes == 0 and parse_line(sized).fetch_bytes == 1201  # type: ignore[union-attr]
    ack = parse_line(sized.replace('"requestApiKey":78', '"requestApiKey":79'))
    assert ack is not None and ack.fetch_bytes == 0


def _fixture(version: str) -> list[str]:
    return (DATA / f"kafka-{version}-request.log").read_text().splitlines()


# Each line of the real brokers' logs (tests/data/request-log, collected from KRaft 3.9.1, 4.1.1 and 4.4.0 brokers with
# confluent-kafka 2.16 clients on a PLAINTEXT and a SASL_PLAINTEXT listener): (listener, api, client-id) -> the
# parsed (user, produce bytes, fetch bytes, request time is exempt, connections).
REAL = {
    ("CONTROLLER", "BROKER_HEARTBEAT", "1"): ("ANONYMOUS", 0, 0, False, 0),
    ("PLAINTEXT", "API_VERSIONS", "prod-plain-acks1"): ("ANONYMOUS", 0, 0, False, 1),
    ("PLAINTEXT", "PRODUCE", "prod-plain-acks0"): ("ANONYMOUS", None, 0, True, 0),
    ("PLAINTEXT", "PRODUCE", "prod-plain-acks1"): ("ANONYMOUS", 2241, 0, False, 0),
    ("PLAINTEXT", "FETCH", "cons-plain"): ("ANONYMOUS", 0, None, False, 0),
    ("SASL_PLAINTEXT", "PRODUCE", "prod-sasl-acks0"): ("admin", 2241, 0, True, 0),
    ("SASL_PLAINTEXT", "METADATA", "prod-sasl-acks1"): ("admin", 0, 0, False, 0),
    ("SASL_PLAINTEXT", "PRODUCE", "prod-sasl-acks1"): ("admin", 2241, 0, False, 0),
    ("SASL_PLAINTEXT", "FETCH", "cons-sasl"): ("admin", 0, None, False, 0),
    ("PLAINTEXT", "SHARE_FETCH", "share-plain"): ("ANONYMOUS", 0, 0, False, 0),
    ("PLAINTEXT", "SHARE_ACKNOWLEDGE", "share-plain"): ("ANONYMOUS", 0, 0, False, 0),
    ("SASL_PLAINTEXT", "SHARE_FETCH", "share-sasl"): ("admin", 0, 0, False, 0),
    ("SASL_PLAINTEXT", "SHARE_ACKNOWLEDGE", "share-sasl"): ("admin", 0, 0, False, 0),
}


@pytest.mark.parametrize("version", ["3.9", "4.1", "4.4"])
def test_real_brokers_lines_parse_as_their_quotas_record_them(version: str) -> None:
    seen = set()
    for line in _fixture(version):
        doc = json.loads(line.split("Completed request:", 1)[1].rsplit(" (", 1)[0])
        key = (doc["listener"], doc["requestHeader"]["requestApiKeyName"], doc["requestHeader"]["clientId"])
        user, produce, fetch, exempt, connections = REAL[key]
        sizes = sum(int(n) for n in re.findall(r'"recordsSizeInBytes":([0-9]+)', line))
        row = parse_line(line)
        assert row is not None and row.client_id == key[2] and row.ip == "127.0.0.1", key
        assert (row.user, row.connections) == (user, connections), key
        assert row.produce_bytes == (sizes if produce is None else produce), key
        assert row.fetch_bytes == (sizes if fetch is None else fetch) and (fetch is not None or sizes > 0), key
        assert row.request_time_ms == (0.0 if exempt else doc["localTimeMs"]) and doc["localTimeMs"] > 0, key
        if key[1] == "SHARE_FETCH":  # what 4.4 logs: the acquired records, without their size
            assert '"records":""' in line and '"acquiredRecords":[{' in line
        seen.add(key)
    assert {k for k in REAL if "SHARE" not in k[1]} <= seen
    assert any("SHARE" in k[1] for k in seen) == (version == "4.4")  # share groups: on by default in 4.4, off in 4.1


# A real Kafka 2.8.2 ZooKeeper-mode broker's lines (librdkafka producer and consumer on PLAINTEXT, the broker's own
# inter-broker requests): 2.8 logs a Fetch response's sizes as `recordSetSizeInBytes` under `partitionResponses`.
REAL_28_EXEMPT = {"UPDATE_METADATA", "LEADER_AND_ISR", "CONTROLLED_SHUTDOWN"}


def test_real_kafka_28_lines_parse_as_its_quotas_record_them() -> None:
    fetched = 0
    for line in _fixture("2.8"):
        doc = json.loads(line.split("Completed request:", 1)[1].rsplit(" (", 1)[0])
        api, client = doc["requestHeader"]["requestApiKeyName"], doc["requestHeader"]["clientId"]
        sizes = sum(int(n) for n in re.findall(r'"(?:recordsSizeInBytes|recordSetSizeInBytes)":([0-9]+)', line))
        row = parse_line(line)
        assert row is not None and row.client_id == client and row.user == "ANONYMOUS", line[:120]
        assert row.produce_bytes == (sizes if api == "PRODUCE" else 0), api
        assert row.fetch_bytes == (sizes if api == "FETCH" else 0), api
        assert row.connections == (api == "API_VERSIONS"), api
        assert row.request_time_ms == (0.0 if api in REAL_28_EXEMPT else doc["localTimeMs"]), api
        fetched += row.fetch_bytes
    assert fetched > 0  # the consumer's bytes, read from 2.8's own field


# -- compressed rotations: every format, both engines ---------------------------------------------------------------


def _compress(fmt: str, data: bytes, name: str) -> bytes:
    import bz2
    import io
    import lzma
    import zipfile
    import zlib

    import pyarrow as pa

    if fmt == ".gz":
        return gzip.compress(data[:100]) + gzip.compress(data[100:])  # two members, as concatenated rotations
    if fmt == ".bz2":
        return bz2.compress(data)
    if fmt == ".xz":
        return lzma.compress(data)
    if fmt == ".deflate":
        return zlib.compress(data)  # commons-compress' DeflateCompressorOutputStream: zlib-wrapped by default
    if fmt == ".zip":
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr(name, data)  # log4j2's ZipCompressAction: one entry, the rotated file's name
        return buf.getvalue()
    out = pa.BufferOutputStream()
    with pa.CompressedOutputStream(out, "zstd") as z:
        z.write(data)
    return out.getvalue().to_pybytes()


FORMATS = (".gz", ".zip", ".bz2", ".deflate", ".xz", ".zst")


def _compressed_logs(d: Path) -> Path:
    """A logs/ directory: one rotation per format (each with every real line and one malformed line, its own), and
    the live file."""
    d.mkdir()
    real = _fixture("3.9") + _fixture("4.1") + _fixture("4.4")
    for i, fmt in enumerate(FORMATS):
        name = f"kafka-request.log.2026-11-28-{10 + i}"
        data = "\n".join([*real, MALFORMED[i % len(MALFORMED)], ""]).encode()
        (d / (name + fmt)).write_bytes(_compress(fmt, data, name))
    (d / "kafka-request.log").write_text("\n".join(GOOD) + "\n")
    return d


def test_local_reader_reads_every_rotation_format_alike(tmp_path: Path) -> None:
    logs = _compressed_logs(tmp_path / "logs")
    table, stats = readers.read_request_log([str(logs)])
    n = len(_fixture("3.9") + _fixture("4.1") + _fixture("4.4"))
    assert (stats.requests, stats.malformed) == (n * len(FORMATS) + len(GOOD), len(FORMATS))
    plain, _ = readers.read_request_log([str(logs / "kafka-request.log")])
    per_format = [readers.read_request_log([str(f)])[0] for f in sorted(logs.glob("*.20*"))]
    assert all(t.equals(per_format[0]) for t in per_format) and per_format[0].num_rows == n
    assert table.num_rows == n * len(FORMATS) + plain.num_rows
    broken = tmp_path / "broken.log.xz"
    broken.write_bytes((logs / "kafka-request.log.2026-11-28-14.xz").read_bytes()[:-30])
    with pytest.raises(Exception, match="cannot read request log"):
        readers.read_request_log([str(broken)])


@pytest.mark.spark
def test_spark_reads_real_lines_and_every_rotation_format_as_the_local_reader(spark, tmp_path: Path) -> None:
    from kquotactl.impact import spark as sp

    logs = _compressed_logs(tmp_path / "logs")
    (logs / "variants-request.log").write_text(
        "\n".join(
            [
                V28_PRODUCE.replace('"User:alice"', '"ServiceAccount:svc:a"').replace('"acks":-1', '"acks":0'),
                V41_API_VERSIONS.replace('"requestApiKey":18', '"requestApiKey":27'),
                V41_API_VERSIONS.replace('"requestApiKey":18', '"requestApiKey":60'),
                next(x for x in _fixture("4.4") if "SHARE_FETCH" in x).replace(
                    '"records":""', '"recordsSizeInBytes":9'
                ),
            ]
        )
    )
    window = replay.Window()
    table, stats = readers.read_request_log([str(logs)])
    df, sstats = sp.read_request_log(spark, [str(logs)], window)
    assert sstats == stats and stats.malformed == len(FORMATS)
    first = logs.absolute() / "kafka-request.log.2026-11-28-10.gz"
    assert stats.first_malformed is not None and stats.first_malformed.startswith(f"{first}:")
    columns = readers.engine_columns(table, window)
    assert sorted(tuple(r) for r in df.collect()) == sorted(zip(*(columns[c] for c in df.columns), strict=True))


def test_connections_from_a_request_log_are_shown_as_a_lower_bound(tmp_path: Path) -> None:
    """On SASL listeners the pre-authentication ApiVersions never reaches the log (the 3.9/4.4 fixtures: no
    ApiVersions line from a SASL_PLAINTEXT client), so the report and the table say the counts are a lower bound."""
    real = _fixture("3.9") + _fixture("4.1") + _fixture("4.4")
    assert not [x for x in real if "SASL_PLAINTEXT" in x and '"requestApiKey":18,' in x]
    logs = _compressed_logs(tmp_path / "logs")
    quotas = tmp_path / "q.yaml"
    quotas.write_text("quotas:\n- entity: {ip: 127.0.0.1}\n  config: {connection_creation_rate: 1}\n")
    base = [sys.executable, "-m", "kquotactl"]
    args = ["impact", "run", "--input-format", "kafka-request-log", str(logs), "-f", str(quotas)]
    p = subprocess.run([*base, "-o", "json", *args], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    log = json.loads(p.stdout)["summary"]["request_log"]
    assert log["connections"] == "lower bound" and "SASL" in log["connections_note"]
    wide = {**os.environ, "COLUMNS": "200"}
    table = subprocess.run([*base, "-o", "table", *args], capture_output=True, text=True, env=wide)
    assert table.returncode == 0, table.stderr
    assert "≥ " in table.stdout and "connections from a request log are a lower bound" in table.stdout
