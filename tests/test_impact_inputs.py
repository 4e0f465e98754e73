"""Impact's traffic tables (issue 26, section 3): a bad cell is one line naming the file, the line (CSV, JSON
lines: the physical line, the CSV header is line 1) or row (Parquet), the column and what was expected; the same
line on both engines; and a file that passes is read alike by both engines (the Spark half is marked ``spark``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli

HEADER = "ts,user,client_id,produce_bytes,fetch_bytes\n"
QUOTAS = "quotas:\n  - entity: {user: alice}\n    config: {producer_byte_rate: 1000}\n"

# (file name, content, fragments of the one error line after "FILE: ")
CASES = [
    ("abc.csv", HEADER + "1,alice,c,100,0\n2,alice,c,abc,0\n", "line 3, column produce_bytes: 'abc' is not a number"),
    ("overflow.csv", HEADER + "1,alice,c,1e400,0\n", "line 2, column produce_bytes: '1e400' is too large"),
    ("int65.csv", HEADER + "1,alice,c,0,18446744073709551616\n", "line 2, column fetch_bytes: '18446744073709551616'"),
    ("negative.csv", HEADER + "1,alice,c,-100000000,0\n", "line 2, column produce_bytes: '-100000000' is negative"),
    ("nan.csv", HEADER + "1,alice,c,NaN,0\n", "line 2, column produce_bytes: 'NaN' is not a number"),
    ("inf.csv", HEADER + "1,alice,c,inf,0\n", "line 2, column produce_bytes: 'inf' is not a number"),
    ("empty.csv", HEADER + "1,alice,c,,0\n", "line 2, column produce_bytes: the cell is empty"),
    ("ts.csv", HEADER + "1,alice,c,1,0\nnoon,alice,c,1,0\n", "line 3, column ts: 'noon' is not a time"),
    ("ts-neg.csv", HEADER + "-5,alice,c,1,0\n", "line 2, column ts: '-5' is before 1970"),
    ("ts-far.csv", HEADER + "1e12,alice,c,1,0\n", "line 2, column ts: '1e12' is after the year 9999"),
    ("ts-month.csv", HEADER + "2026-13-01T00:00:00Z,alice,c,1,0\n", "line 2, column ts: '2026-13-01T00:00:00Z' is not"),
    ("ts-nozone.csv", HEADER + "2026-11-25 10:00:00,alice,c,1,0\n", "line 2, column ts: '2026-11-25 10:00:00' is not"),
    ("ts-mixed.csv", HEADER + "1,alice,c,1,0\n2026-11-25T10:00:00Z,a,c,1,0\n", "line 3, column ts: "),
    # rows are numbered as lines: blank lines count
    ("blank.csv", HEADER + "1,alice,c,1,0\n\n\n2,alice,c,x,0\n", "line 5, column produce_bytes: 'x'"),
    ("fields.csv", HEADER + "1,alice,c,1\n", "line 2: 4 fields, but the header (line 1) has 5"),
    ("quote.csv", HEADER + '1,"alice,c,1,0\n2,alice,c,1,0\n', "line 2: a quoted field is not closed on its line"),
    ("twice.csv", "ts,ts,produce_bytes\n1,2,3\n", "line 1: column 'ts' appears twice"),
    ("bom.csv", "\ufeff" + HEADER + "1,alice,c,1,0\n", "line 1: starts with a byte-order mark"),
    ("nots.csv", "time,produce_bytes\n1,2\n", "no ts column"),
    ("nots-vt.csv", "ti\x0bme,produce_bytes\n1,2\n", "it has 'ti\\x0bme', produce_bytes"),  # one line, escaped
    ("nousage.csv", "ts,user\n1,alice\n", "none of the usage columns"),
    ("first.csv", HEADER + "1,alice,c,-1,x\n", "line 2, column produce_bytes: '-1' is negative"),  # column order
    ("abc.jsonl", '{"ts": 1, "produce_bytes": 1}\n{"ts": 2, "produce_bytes": "abc"}\n', "line 2, column produce_bytes"),
    ("big.jsonl", '{"ts": 1, "produce_bytes": 1e400}\n', "line 1, column produce_bytes: 1e400 is too large"),
    ("neg.jsonl", '\n{"ts": 1, "produce_bytes": -3}\n', "line 2, column produce_bytes: -3 is negative"),
    ("null.jsonl", '{"ts": 1, "produce_bytes": null}\n', "line 1, column produce_bytes: the cell is empty"),
    ("nan.jsonl", '{"ts": 1, "produce_bytes": NaN}\n', "line 1: NaN is not a JSON number"),
    ("bool.jsonl", '{"ts": 1, "produce_bytes": true}\n', "line 1, column produce_bytes: true is not a number"),
    ("broken.jsonl", '{"ts": 1, "produce_bytes": 1}\n{"ts": 2, "produce_bytes": \n', "line 2: not valid JSON"),
    ("array.jsonl", "[1, 2]\n", "line 1: not a JSON object"),
    ("nots.jsonl", '{"ts": 1, "produce_bytes": 1}\n{"produce_bytes": 1}\n', "line 2: no ts"),
    ("tstext.jsonl", '{"ts": "1", "produce_bytes": 1}\n', "line 1, column ts: '1' is text but not a time"),
    ("dup.jsonl", '{"ts": 1, "ts": 2, "produce_bytes": 1}\n', "line 1: key 'ts' appears twice"),
    ("user.jsonl", '{"ts": 1, "user": 1.5, "produce_bytes": 1}\n', "line 1, column user: 1.5 is a number"),
]


def one_error_line(stderr: str, code: int, path: Path, fragment: str) -> str:
    lines = stderr.strip().splitlines()
    assert code == 1, (code, stderr)
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr and "internal error" not in stderr
    assert lines[0].startswith(f"kquotactl: error: {path}: "), lines[0]
    assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


@pytest.fixture
def quotas(tmp_path):
    p = tmp_path / "q.yaml"
    p.write_text(QUOTAS)
    return p


@pytest.mark.parametrize(("name", "content", "fragment"), CASES, ids=[c[0] for c in CASES])
def test_a_bad_traffic_file_is_one_line_naming_file_line_and_column(tmp_path, quotas, name, content, fragment):
    path = tmp_path / name
    path.write_text(content)
    r = run_cli("impact", "run", str(path), "-f", str(quotas), "--engine", "local")
    one_error_line(r.stderr, r.exit_code, path, fragment)


def test_non_utf8_bytes_are_named_by_byte_line_and_offset(tmp_path, quotas):
    for name, content, want in [
        ("latin1.csv", HEADER.encode() + b"1,caf\xe9,c,1,0\n", "line 2: byte 6 (0xE9) is not UTF-8; expected UTF-8"),
        ("latin1.jsonl", b'{"ts": 1, "produce_bytes": 1}\n{"ts": 2, "user": "caf\xe9"}\n', "line 2: byte 23 (0xE9)"),
    ]:
        path = tmp_path / name
        path.write_bytes(content)
        r = run_cli("impact", "run", str(path), "-f", str(quotas), "--engine", "local")
        line = one_error_line(r.stderr, r.exit_code, path, want)
        assert "\\udce9" not in line and "codec" not in line


def _before_1970():
    import pyarrow as pa

    return pa.array([0, -1_000_000], pa.timestamp("us", tz="UTC"))


TS_BEFORE_1970 = _before_1970()


def parquet(path: Path, columns: dict) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table(columns), path)
    return path


@pytest.mark.parametrize(
    ("columns", "fragment"),
    [
        ({"ts": [1.0, 2.0], "produce_bytes": ["1", "2"]}, "column produce_bytes holds text; expected a byte count"),
        ({"ts": [1.0, 2.0], "produce_bytes": [1.0, float("nan")]}, "row 2, column produce_bytes: nan is not a number"),
        ({"ts": [1.0, 2.0], "produce_bytes": [1, None]}, "row 2, column produce_bytes: the cell is empty"),
        ({"ts": [1.0, 2.0], "produce_bytes": [1, -7]}, "row 2, column produce_bytes: -7 is negative"),
        ({"ts": [1.0, 2.0], "requests": [2**62, 1]}, "row 1, column requests: 4611686018427387904 is too large"),
        ({"ts": [1.0, None], "produce_bytes": [1, 1]}, "row 2, column ts: the cell is empty"),
        ({"ts": [True, False], "produce_bytes": [1, 1]}, "column ts holds true/false values"),
        ({"ts": ["1", "2"], "produce_bytes": [1, 1]}, "row 1, column ts: '1' is text but not a time"),
        ({"ts": [1.0, 2.0], "user": [1.5, 2.5], "produce_bytes": [1, 1]}, "column user holds decimal numbers"),
        ({"ts": [1.0, 3e11], "produce_bytes": [1, 1]}, "row 2, column ts: 300000000000.0 is after the year 9999"),
        ({"ts": TS_BEFORE_1970, "produce_bytes": [1, 1]}, "row 2, column ts: 1969-12-31 23:59:59+00:00 is before 1970"),
    ],
)
def test_a_bad_parquet_file_names_the_row_and_the_column(tmp_path, quotas, columns, fragment):
    path = parquet(tmp_path / "t.parquet", columns)
    r = run_cli("impact", "run", str(path), "-f", str(quotas), "--engine", "local")
    one_error_line(r.stderr, r.exit_code, path, fragment)


def test_a_file_that_is_not_parquet_is_one_line(tmp_path, quotas):
    path = tmp_path / "t.parquet"
    path.write_bytes(b"PAR1 not really")
    r = run_cli("impact", "run", str(path), "-f", str(quotas), "--engine", "local")
    one_error_line(r.stderr, r.exit_code, path, "cannot be read as Parquet")


def run_subprocess_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The real console entry in a child process (the worktree's sources: PYTHONPATH is inherited)."""
    return subprocess.run(
        [sys.executable, "-m", "kquotactl", *args], capture_output=True, text=True, timeout=300, check=False
    )


SAMPLED = ["abc.csv", "overflow.csv", "negative.csv", "quote.csv", "ts-mixed.csv", "abc.jsonl", "big.jsonl"]


@pytest.mark.spark
def test_both_engines_give_the_same_line_for_the_same_bad_file(tmp_path, quotas):
    chosen = [c for c in CASES if c[0] in SAMPLED]
    for name, content, fragment in chosen:
        path = tmp_path / name
        path.write_text(content)
        lines = []
        for engine in ("local", "spark"):
            r = run_subprocess_cli("impact", "run", str(path), "-f", str(quotas), "--engine", engine)
            lines.append(one_error_line(r.stderr, r.returncode, path, fragment))
        assert lines[0] == lines[1]
    pq = parquet(tmp_path / "t.parquet", {"ts": [1.0, 2.0], "produce_bytes": [1, -7]})
    got = {
        run_subprocess_cli("impact", "run", str(pq), "-f", str(quotas), "--engine", e).stderr
        for e in ("local", "spark")
    }
    assert len(got) == 1 and "row 2, column produce_bytes: -7 is negative" in got.pop()


# A valid file written the ways people write them: quoted names with commas and doubled quotes, a backslash,
# numbers as 1e3, .5 and 5., times with a fraction and an offset. Both engines must read every row alike.
TRICKY_CSV = (
    "ts,user,client_id,ip,produce_bytes,fetch_bytes,requests\n"
    '2026-11-25T10:00:00Z,alice,"app,1",10.0.0.1,1e3,.5,1\n'
    '2026-11-25T10:00:00.5Z,"al""ice",a\\b,10.0.0.1,5.,0,2\n'
    "\n"
    "2026-11-25T11:00:01+01:00,alice,,10.0.0.2,2500,7,3\n"
    '2026-11-25 10:00:02.25Z,bob,"",,9007199254740992,0,1\n'
)
TRICKY_JSONL = "".join(
    json.dumps(r) + "\n"
    for r in [
        {"ts": 1764064800.25, "user": "alice", "client_id": "app,1", "produce_bytes": 1e3, "extra": {"x": 1}},
        {"ts": 1764064800.5, "user": 'al"ice', "produce_bytes": 5, "fetch_bytes": 0.5},  # fetch_bytes absent above: 0
        {"ts": 1764064801, "user": "alice", "client_id": None, "produce_bytes": 2500, "requests": 3},
    ]
)


@pytest.mark.spark
@pytest.mark.parametrize(("name", "content"), [("t.csv", TRICKY_CSV), ("t.jsonl", TRICKY_JSONL)])
def test_a_file_that_passes_is_read_alike_by_both_engines(spark, tmp_path, name, content):
    from impact_cases import run_engine
    from kquotactl.core.entities import Entity

    path = tmp_path / name
    path.write_text(content)
    quotas = {
        Entity(user="alice"): {"producer_byte_rate": 100, "request_rate": 1},
        Entity(user='al"ice'): {"producer_byte_rate": 1},
    }
    local = run_engine("local", str(path), quotas)
    got = run_engine("spark", str(path), quotas, spark=spark)
    assert local["summary"]["rows"] == (4 if name == "t.csv" else 3)
    assert got == local


SPARK_NOISE = ("WARN", "log4j", "Setting default log level", "NativeCodeLoader", "incubator", "Traceback", "py4j")


@pytest.mark.spark
def test_spark_stays_quiet_on_the_terminal_unless_debug(tmp_path, quotas):
    path = tmp_path / "t.csv"
    path.write_text(HEADER + "1,alice,c,100,0\n2,alice,c,5000,0\n")
    ok = run_subprocess_cli("-o", "json", "impact", "run", str(path), "-f", str(quotas), "--engine", "spark")
    assert ok.returncode == 0, ok.stderr
    assert ok.stderr == ""
    assert json.loads(ok.stdout)["summary"]["engine"] == "spark"
    # a Java exception: one line with its cause and where Spark's own output went, no stack trace
    bad = run_subprocess_cli(
        "impact", "run", str(path), "-f", str(quotas), "--engine", "spark", "--conf", "spark.sql.shuffle.partitions=x"
    )
    line = one_error_line(bad.stderr, bad.returncode, Path("the Spark job failed"), "spark.sql.shuffle.partitions")
    assert not any(noise in line for noise in SPARK_NOISE) and "java." not in line and "SQLSTATE" not in line
    log = Path(line.rsplit("Spark's log: ", 1)[1])
    assert "NativeCodeLoader" in log.read_text() or "log4j" in log.read_text()
    log.unlink()
    # the JVM cannot start: the same, before any job
    dead = run_subprocess_cli(
        "impact", "run", str(path), "-f", str(quotas), "--engine", "spark", "--conf", "spark.driver.memory=1k"
    )
    line = one_error_line(dead.stderr, dead.returncode, Path("Spark did not start"), "Spark's log: ")
    Path(line.rsplit("Spark's log: ", 1)[1]).unlink()
    # --debug asks for Spark's own output
    loud = run_subprocess_cli("--debug", "impact", "run", str(path), "-f", str(quotas), "--engine", "spark")
    assert loud.returncode == 0 and "log4j" in loud.stderr


# -- Prometheus answers (--from-prometheus): a value that is no number, or an answer of another shape, is one line;
# NaN and infinite readings (an idle or stale sensor) are skipped, as docs/impact.md says.


@pytest.fixture
def prometheus_answering():
    """A local HTTP server answering every query with the JSON document the test sets (not a real Prometheus:
    a real one never sends these)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    answer: dict = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps(answer["doc"]).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()

    def set_answer(result):
        answer["doc"] = {"status": "success", "data": {"resultType": "matrix", "result": result}}
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield set_answer
    server.shutdown()


def _series(values):
    metric = {"__name__": "kafka_quota_byte_rate", "instance": "b1:7071", "quota_type": "Produce", "user": "alice"}
    return [{"metric": metric, "values": values}]


@pytest.mark.parametrize(
    ("result", "fragment"),
    [
        (_series([[1764064800, "abc"]]), "kafka_quota_byte_rate: value 'abc' is not a number"),
        ([{"metric": {}}], "not a Prometheus API answer (a series without metric and values)"),
        ([{"metric": {}, "values": [[1764064800]]}], "not a Prometheus API answer"),
    ],
)
def test_a_bad_prometheus_answer_is_one_line(quotas, prometheus_answering, result, fragment):
    url = prometheus_answering(result)
    r = run_cli("impact", "run", "--from-prometheus", url, "--since", "60s", "-f", str(quotas), "--engine", "local")
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 1 and len(lines) == 1, r.stderr
    assert lines[0].startswith(f"kquotactl: error: {url}: ") and fragment in lines[0], lines[0]


def test_nan_and_infinite_prometheus_readings_are_skipped(quotas, prometheus_answering):
    import time

    now = int(time.time()) - 5
    url = prometheus_answering(_series([[now - 2, "NaN"], [now - 1, "+Inf"], [now, "3000"]]))
    r = run_cli("-o", "json", "impact", "run", "--from-prometheus", url, "--since", "60s", "-f", str(quotas))
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["summary"]["traffic"]["producer_byte_rate"]["usage"] == 3000


def test_the_files_of_a_directory_share_one_header_and_one_form_of_ts(tmp_path, quotas):
    """Spark reads a directory's CSV files by position with the first file's header, and a ts column mixing
    numbers and times as text (dropping rows): both are refused, naming the file."""
    headers = tmp_path / "headers"
    headers.mkdir()
    (headers / "a.csv").write_text("ts,user,produce_bytes\n1,alice,5000\n")
    (headers / "b.csv").write_text("ts,produce_bytes,user\n2,6000,alice\n")
    r = run_cli("impact", "run", str(headers), "-f", str(quotas), "--engine", "local")
    one_error_line(r.stderr, r.exit_code, headers / "b.csv", f"differs from {headers / 'a.csv'}'s")
    forms = tmp_path / "forms"
    forms.mkdir()
    (forms / "a.jsonl").write_text('{"ts": 1, "produce_bytes": 5}\n')
    (forms / "b.jsonl").write_text('{"ts": "2026-11-25T10:00:00Z", "produce_bytes": 5}\n')
    r = run_cli("impact", "run", str(forms), "-f", str(quotas), "--engine", "local")
    one_error_line(r.stderr, r.exit_code, forms / "b.jsonl", f"column ts holds times where {forms / 'a.jsonl'}")
    # Parquet timestamps of different units and zones are one clock
    import pyarrow as pa

    stamps = tmp_path / "stamps"
    stamps.mkdir()
    parquet(
        stamps / "a.parquet",
        {"ts": pa.array([1_764_064_800_000_000], pa.timestamp("us", tz="UTC")), "produce_bytes": [5000]},
    )
    parquet(
        stamps / "b.parquet", {"ts": pa.array([1_764_064_801_000_000_000], pa.timestamp("ns")), "produce_bytes": [5000]}
    )
    r = run_cli("-o", "json", "impact", "run", str(stamps), "-f", str(quotas), "--engine", "local")
    assert r.exit_code == 0, r.stderr
    assert json.loads(r.stdout)["summary"]["seconds"] == 2


@pytest.mark.spark
def test_a_remote_input_is_checked_by_spark_and_names_its_file_and_column(spark, tmp_path):
    """A URL input (s3a://, hdfs://; here file://) is read by Spark alone: its bad cells are found in one Spark pass
    (ANSI casts would fail the job on 'abc'), named by file and column; a good one replays as the local file does."""
    from impact_cases import run_engine
    from kquotactl.core.entities import Entity
    from kquotactl.impact.replay import Window
    from kquotactl.impact.spark import read_traffic
    from kquotactl.impact.validation import TrafficError

    for name, content, fragment in [
        ("abc.csv", HEADER + "1,alice,c,100,0\n2,alice,c,abc,0\n", "column produce_bytes: 'abc' is not valid"),
        ("neg.csv", HEADER + "1,alice,c,-5,0\n", "column produce_bytes: '-5' is not valid"),
        ("empty.csv", HEADER + "1,alice,c,,0\n", "column produce_bytes: the cell is empty"),
        ("ts.jsonl", '{"ts": "noon", "produce_bytes": 1}\n', "column ts: 'noon' is not valid"),
    ]:
        path = tmp_path / name
        path.write_text(content)
        with pytest.raises(TrafficError) as e:
            read_traffic(spark, path.as_uri(), Window())
        assert str(e.value).startswith(f"file:{path}: ") and fragment in str(e.value), str(e.value)
        assert "Spark names no line" in str(e.value)
    good = tmp_path / "good.csv"
    good.write_text(HEADER + "1,alice,c,1500,0\n2,alice,c,2500,0\n")
    quotas = {Entity(user="alice"): {"producer_byte_rate": 1000}}
    assert run_engine("spark", good.as_uri(), quotas, spark=spark) == run_engine("local", str(good), quotas)


def test_a_request_log_that_does_not_decompress_is_one_line(tmp_path, quotas):
    """Request logs skip and count malformed lines (docs/impact.md); a file that is not what its suffix says is
    one line naming it, in words about the file, not Python's bytes."""
    path = tmp_path / "kafka-request.log.gz"
    path.write_bytes(b"not gzip at all")
    r = run_cli(
        "impact", "run", "--input-format", "kafka-request-log", str(path), "-f", str(quotas), "--engine", "local"
    )
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 1 and len(lines) == 1, r.stderr
    assert f"'{path}': not a valid .gz file (its name says so)" in lines[0] and "b'" not in lines[0], lines[0]
