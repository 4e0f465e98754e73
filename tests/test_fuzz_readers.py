"""Fuzz impact's traffic readers and explain's input readers (issue 26, section 3) with thousands of malformed files
per run: random mutations of valid files (bad numbers, bad timestamps, broken quoting, truncated lines, invalid
UTF-8, huge values, wrong column counts). Every outcome is a table (a mutation that is still valid) or one error
line naming the file and the line or row; never anything else.

The seed is ``KQUOTACTL_FUZZ_SEED`` or random, and is printed (and named in every failure); the size scales with
``KQUOTACTL_FUZZ_EXAMPLES`` (see docs/reliability.md). The pure readers run in the regular suite; a few CLI runs
check the same through the real entry point, and a Spark sample (marked) checks that both engines say the same.
"""

from __future__ import annotations

import io
import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures_reliability import fuzz_examples
from kquotactl.core.errors import QuotaError
from kquotactl.impact.validation import TrafficError, read_file
from kquotactl.inputs import read_connections, read_events

SEED = int(os.environ.get("KQUOTACTL_FUZZ_SEED") or random.SystemRandom().randrange(2**32))
print(f"fuzz seed: KQUOTACTL_FUZZ_SEED={SEED}", file=sys.stderr)

JARGON = ("could not convert", "JSONDecodeError", "codec", "\\udc", "Arrow", "arrow", "float64", "int64", "Traceback")
# whole-file problems: no line or row to name
WHOLE_FILE = re.compile(r"no ts column|none of the usage columns|empty; expected a header|no rows;|column .+ holds ")
PLACE = re.compile(r"(?:line|row) [0-9]+[,:]")

BAD_CELLS = [
    "abc",
    "1e400",
    "-100000000",
    "NaN",
    "inf",
    "-inf",
    "",
    "99999999999999999999999",
    "18446744073709551616",
    " 1",
    "1_000",
    "0x10",
    "+5",
    "1e",
    ".",
    "2026-13-01T00:00:00Z",
    "2026-11-25T10:00:00",
    "2026-11-25 10:00:00Z",
    "0001-01-01T00:00:00Z",
    "noon",
    '"',
    '"a"b',
    '""',
    "a\rb",
    "1.5",
    "0",
    "9007199254740993",
]
BAD_BYTES = [b"\xff", b"\xc3", b"\xe9", b"\xed\xa0\x80", b"\x00", b'"', b",", b"\r", b"\n", b"{", b"}", b"\\"]


def traffic_rows(rng: random.Random, n: int) -> list[dict]:
    rows = []
    for i in range(n):
        rows.append(
            {
                "ts": 1764064800 + i * rng.choice([0.001, 0.5, 1]),
                "user": rng.choice(["alice", "bob", "", "svc,1", 'q"t', "café"]),
                "client_id": rng.choice(["app", "", "c-1"]),
                "ip": rng.choice(["10.0.0.1", ""]),
                "produce_bytes": rng.choice([0, 1, 1024, 5e6, 0.5]),
                "fetch_bytes": rng.choice([0, 7, 3e3]),
                "requests": rng.randrange(0, 5),
            }
        )
    return rows


def csv_text(rows: list[dict]) -> str:
    import csv

    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(list(rows[0]))
    for r in rows:
        w.writerow([r[k] for k in r])
    return out.getvalue()


def jsonl_text(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def mutate(rng: random.Random, data: bytes, csv_like: bool) -> bytes:
    """One to three random mutations of a valid file's bytes."""
    for _ in range(rng.randint(1, 3)):
        lines = data.split(b"\n")
        kind = rng.randrange(9)
        i = rng.randrange(len(lines))
        if kind <= 2 and csv_like:  # a cell replaced by a bad value
            cells = lines[i].split(b",")
            cells[rng.randrange(len(cells))] = rng.choice(BAD_CELLS).encode()
            lines[i] = b",".join(cells)
        elif kind <= 2:  # a JSON value replaced by a bad one
            bad = rng.choice([*BAD_CELLS, "null", "true", "[1]", "{}", "NaN", "1e400", "-3", "1e999"])
            token = bad if not bad or bad[0] in "-0123456789ntf[{N" else json.dumps(bad)
            replacement = b"\\g<1>" + token.encode().replace(b"\\", b"\\\\")
            lines[i] = re.sub(rb'(: )("[^"]*"|[^,}]+)', replacement, lines[i], count=1)
        elif kind == 3:  # truncated at a random byte
            data = data[: rng.randrange(len(data) + 1)]
            continue
        elif kind == 4:  # a bad byte inserted
            at = rng.randrange(len(lines[i]) + 1)
            lines[i] = lines[i][:at] + rng.choice(BAD_BYTES) + lines[i][at:]
        elif kind == 5:  # a field separator dropped or doubled (a wrong column count)
            if b"," in lines[i]:
                at = lines[i].index(b",")
                lines[i] = lines[i][:at] + (b"" if rng.random() < 0.5 else b",,") + lines[i][at + 1 :]
        elif kind == 6:  # a line duplicated or dropped
            if rng.random() < 0.5:
                lines.insert(i, lines[i])
            else:
                del lines[i]
        elif kind == 7:  # a random byte changed
            if data:
                at = rng.randrange(len(data))
                data = data[:at] + bytes([rng.randrange(256)]) + data[at + 1 :]
                continue
        else:  # a huge value somewhere
            lines[i] = lines[i].replace(b"1", b"1" + b"9" * rng.randrange(15, 400), 1)
        data = b"\n".join(lines)
    return data


def check_outcome(path: Path, fmt: str, seed_note: str) -> str:
    """Read a fuzzed file; return "ok" or the error line, failing on anything else."""
    try:
        read_file(path, fmt)
    except TrafficError as e:
        msg = str(e)
        content = path.read_bytes()[:600]
        assert "\n" not in msg, (seed_note, msg, content)
        assert msg.startswith(f"{path}: "), (seed_note, msg, content)
        rest = msg[len(f"{path}: ") :]
        assert PLACE.match(rest) or WHOLE_FILE.match(rest) or "Parquet" in rest, (seed_note, msg, content)
        assert not any(j in msg for j in JARGON) or "Parquet" in rest, (seed_note, msg, content)
        return msg
    except Exception as e:  # anything else is a bug
        raise AssertionError((seed_note, f"{type(e).__name__}: {e}", path.read_bytes()[:600])) from e
    return "ok"


@pytest.mark.parametrize("fmt", ["csv", "json"])
def test_fuzzed_traffic_files_are_read_or_refused_in_one_line(tmp_path, fmt):
    rng = random.Random(SEED + (fmt == "json"))
    n = fuzz_examples(2500)
    outcomes = {"ok": 0, "error": 0}
    for k in range(n):
        rows = traffic_rows(rng, rng.randint(1, 12))
        base = (csv_text(rows) if fmt == "csv" else jsonl_text(rows)).encode()
        path = tmp_path / f"f{k % 50}.{'csv' if fmt == 'csv' else 'jsonl'}"
        path.write_bytes(mutate(rng, base, fmt == "csv"))
        got = check_outcome(path, fmt, f"KQUOTACTL_FUZZ_SEED={SEED} example {k}")
        outcomes["ok" if got == "ok" else "error"] += 1
    assert outcomes["error"] > n // 3 and outcomes["ok"] > 0, outcomes  # the mutations exercise both outcomes


def test_fuzzed_parquet_files_are_read_or_refused_in_one_line(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = random.Random(SEED + 2)
    values = [None, float("nan"), float("inf"), -1.0, 1e300, 2.0**53 + 2, 0.0, 3.0, -0.0]
    for k in range(fuzz_examples(300)):
        rows = traffic_rows(rng, rng.randint(1, 8))
        table = pa.Table.from_pylist(rows)
        col = rng.choice(["ts", "produce_bytes", "fetch_bytes", "requests"])
        at = rng.randrange(table.num_rows)
        cells = table.column(col).to_pylist()
        kind = rng.randrange(4)
        if kind == 0:
            cells[at] = rng.choice(values)
            arr = pa.array(cells, pa.float64())
        elif kind == 1:
            arr = pa.array([str(c) for c in cells])
        elif kind == 2:
            arr = pa.array([rng.random() < 0.5 for _ in cells])
        else:
            arr = pa.array([int(c) if c == c and abs(c) < 2**62 else -5 for c in cells], pa.int64())
        table = table.set_column(table.schema.get_field_index(col), col, arr)
        path = tmp_path / f"p{k % 20}.parquet"
        pq.write_table(table, path)
        if rng.random() < 0.1:  # a truncated file
            path.write_bytes(path.read_bytes()[: rng.randrange(path.stat().st_size)])
        check_outcome(path, "parquet", f"KQUOTACTL_FUZZ_SEED={SEED} parquet example {k}")


def explain_outcome(reader, data: bytes, seed_note: str) -> None:
    try:
        out = reader(io.BytesIO(data), "in.txt")
        list(out)
    except QuotaError as e:
        msg = str(e)
        assert "\n" not in msg and msg.startswith("in.txt: "), (seed_note, msg, data[:400])
        rest = msg[len("in.txt: ") :]
        assert PLACE.match(rest) or rest.startswith("no events"), (seed_note, msg, data[:400])
        assert not any(j in msg for j in JARGON), (seed_note, msg, data[:400])
    except Exception as e:
        raise AssertionError((seed_note, f"{type(e).__name__}: {e}", data[:400])) from e


def test_fuzzed_explain_inputs_are_read_or_refused_in_one_line():
    rng = random.Random(SEED + 3)
    for k in range(fuzz_examples(2000)):
        note = f"KQUOTACTL_FUZZ_SEED={SEED} explain example {k}"
        which = rng.randrange(4)
        if which == 0:
            rows = [{"user": r["user"], "client-id": r["client_id"], "ip": r["ip"]} for r in traffic_rows(rng, 5)]
            base = csv_text(rows).encode()
            explain_outcome(read_connections, mutate(rng, base, True), note)
        elif which == 1:
            rows = [{"user": r["user"], "client-id": r["client_id"]} for r in traffic_rows(rng, 5)]
            explain_outcome(read_connections, mutate(rng, jsonl_text(rows).encode(), False), note)
        elif which == 2:
            base = "".join(f"{i * 100} {rng.choice([0, 400, 1.5])}\n" for i in range(6)).encode()
            explain_outcome(read_events, mutate(rng, base.replace(b" ", b","), True), note)
        else:
            base = "".join(json.dumps({"time_ms": i * 100, "value": 400}) + "\n" for i in range(6)).encode()
            explain_outcome(read_events, mutate(rng, base, False), note)


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kquotactl", *args], capture_output=True, text=True, timeout=300, check=False
    )


def fuzzed_files(tmp_path: Path, count: int, seed: int) -> list[Path]:
    rng = random.Random(seed)
    out = []
    for k in range(count):
        fmt = rng.choice(["csv", "jsonl"])
        rows = traffic_rows(rng, 6)
        base = (csv_text(rows) if fmt == "csv" else jsonl_text(rows)).encode()
        path = tmp_path / f"cli{k}.{fmt}"
        path.write_bytes(mutate(rng, base, fmt == "csv"))
        out.append(path)
    return out


def assert_cli_outcome(r: subprocess.CompletedProcess[str], path: Path, note: str) -> None:
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, (note, r.stderr)
    if r.returncode == 0:
        return
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 1 and len(lines) == 1, (note, r.returncode, r.stderr)
    assert lines[0].startswith(f"kquotactl: error: {path}: "), (note, lines[0])


def test_fuzzed_files_through_the_command_line(tmp_path):
    quotas = tmp_path / "q.yaml"
    quotas.write_text("quotas:\n  - entity: {user: alice}\n    config: {producer_byte_rate: 1000}\n")
    for path in fuzzed_files(tmp_path, 6, SEED + 4):
        r = cli("impact", "run", str(path), "-f", str(quotas), "--engine", "local")
        assert_cli_outcome(r, path, f"KQUOTACTL_FUZZ_SEED={SEED} {path.name}")


@pytest.mark.spark
@pytest.mark.reliability
def test_fuzzed_files_give_the_same_line_on_both_engines(tmp_path):
    quotas = tmp_path / "q.yaml"
    quotas.write_text("quotas:\n  - entity: {user: alice}\n    config: {producer_byte_rate: 1000}\n")
    bad = [p for p in fuzzed_files(tmp_path, 40, SEED + 5) if check_outcome(p, _fmt(p), "spark sample") != "ok"]
    for path in bad[:4]:
        note = f"KQUOTACTL_FUZZ_SEED={SEED} {path.name}"
        local, spark = (cli("impact", "run", str(path), "-f", str(quotas), "--engine", e) for e in ("local", "spark"))
        assert_cli_outcome(spark, path, note)
        assert (spark.returncode, spark.stderr) == (local.returncode, local.stderr), note


def _fmt(path: Path) -> str:
    return "csv" if path.suffix == ".csv" else "json"


@pytest.mark.spark
@pytest.mark.reliability
def test_fuzzed_files_that_pass_are_read_alike_by_both_engines(spark, tmp_path):
    """A mutation that is still valid (odd names, quoting, numbers in every spelling the check accepts) must give
    the same report on both engines: the check promises that a file it passes is one both read alike."""
    from impact_cases import run_engine
    from kquotactl.core.entities import Entity

    quotas = {Entity(user="alice"): {"producer_byte_rate": 100}, Entity(client_id="app"): {"request_rate": 1}}
    files = fuzzed_files(tmp_path, 60, SEED + 6)
    good = [p for p in files if check_outcome(p, _fmt(p), "spark valid sample") == "ok"]
    assert good, f"KQUOTACTL_FUZZ_SEED={SEED}: no valid mutation in the sample"
    for path in good[:4]:
        note = f"KQUOTACTL_FUZZ_SEED={SEED} {path.name}: {path.read_bytes()[:300]!r}"
        assert run_engine("spark", str(path), quotas, spark=spark) == run_engine("local", str(path), quotas), note
