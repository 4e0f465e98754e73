"""explain's input files (issue 26, section 3): connections (CSV, JSON lines) and replay events. A bad line is one
error line naming the file, the line and what was expected; bytes that are not UTF-8 are named by their value and
their place on the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import run_cli

QUOTAS = "quotas:\n  - entity: {user: alice}\n    config: {producer_byte_rate: 1000}\n"


def one_error_line(r, path: Path, fragment: str) -> None:
    lines = r.stderr.strip().splitlines()
    assert r.exit_code == 1, (r.exit_code, r.stderr)
    assert len(lines) == 1 and lines[0].startswith(f"kquotactl: error: {path}: "), r.stderr
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    for jargon in ("could not convert", "JSONDecodeError", "codec", "\\udc", "Expecting value: line"):
        assert jargon not in lines[0], lines[0]
    assert fragment in lines[0], (fragment, lines[0])


CONNECTIONS = [
    ("quote.csv", b'user,client-id\nalice,"app\nbob,x\n', "line 2: a quoted field is never closed"),
    ("inner.csv", b'user,client-id\nalice,"a"b"\n', 'line 2: a quote inside a quoted field must be doubled ("")'),
    ("fields.csv", b"user,client-id\nalice,a,b\n", "line 2: 3 fields but the header has 2"),
    ("latin1.csv", b"user,client-id\ncaf\xe9,x\n", "line 2: byte 4 (0xE9) is not UTF-8; expected UTF-8 text"),
    ("bad.jsonl", b'{"user": "alice"}\n{"user": \n', "line 2: not valid JSON at character 1: expecting value"),
    ("latin1.jsonl", b'{"user": "alice"}\n{"user": "caf\xe9"}\n', "line 2: byte 14 (0xE9) is not UTF-8"),
    ("number.jsonl", b'{"user": "alice"}\n{"user": 5}\n', "line 2: user must be text, not 5"),
    ("ip.csv", b"user,ip\nalice,10.0.0.999\n", "line 2: "),
    # a header cell holding a quoted line break (KQUOTACTL_FUZZ_SEED=1490272078 of test_fuzz_readers): shown escaped
    ("header.csv", b'",client-id\nx",app\nbob,x\n', "(got ',client-id\\nx', app)"),
]


@pytest.mark.parametrize(("name", "content", "fragment"), CONNECTIONS, ids=[c[0] for c in CONNECTIONS])
def test_a_bad_connections_file_is_one_line_with_its_line(tmp_path, name, content, fragment):
    (tmp_path / "q.yaml").write_text(QUOTAS)
    path = tmp_path / name
    path.write_bytes(content)
    r = run_cli("explain", "-f", str(tmp_path / "q.yaml"), "--connections", str(path), "-o", "json")
    one_error_line(r, path, fragment)


def test_a_multiline_quoted_name_is_still_one_connection(tmp_path):
    (tmp_path / "q.yaml").write_text(QUOTAS)
    path = tmp_path / "ok.csv"
    path.write_bytes(b'user,client-id\nalice,"two\nlines"\n')
    r = run_cli("explain", "-f", str(tmp_path / "q.yaml"), "--connections", str(path), "-o", "json")
    assert r.exit_code == 0, r.stderr
    assert '"client-id":"two\\nlines"' in r.stdout.replace(" ", "")


EVENTS = [
    ("abc.txt", b"0 400\nabc 5\n", "line 2: time 'abc' is not a number of milliseconds"),
    ("nan.txt", b"0 400\n100 nan\n", "line 2: value 'nan' is not a number"),
    ("big.txt", b"0 400\n100 1e400\n", "line 2: value '1e400' is too large"),
    ("neg.txt", b"0 400\n100 -5\n", "line 2: value '-5' is negative"),
    ("far.txt", b"0 400\n1e30 5\n", "line 2: time '1e30' ms is out of range"),
    ("frac.txt", b"0 400\n1.5 5\n", "line 2: time '1.5' is not a whole number of milliseconds"),
    ("latin1.txt", b"0 \xe9\n", "line 1: byte 3 (0xE9) is not UTF-8"),
    ("key.jsonl", b'{"time_ms": 0, "value": 1}\n{"value": 1}\n', "line 2: no time_ms"),
    ("text.jsonl", b'{"time_ms": 0, "value": 1}\n{"time_ms": "x", "value": 1}\n', "line 2: time 'x' is not"),
    ("broken.jsonl", b'{"time_ms": 0, "value": 1}\n{"time_ms": 0,\n', "line 2: not valid JSON at character"),
]


@pytest.mark.parametrize(("name", "content", "fragment"), EVENTS, ids=[c[0] for c in EVENTS])
def test_a_bad_replay_file_is_one_line_with_its_line(tmp_path, name, content, fragment):
    (tmp_path / "q.yaml").write_text(QUOTAS)
    path = tmp_path / name
    path.write_bytes(content)
    r = run_cli("explain", "-f", str(tmp_path / "q.yaml"), "--user", "alice", "--replay", str(path))
    one_error_line(r, path, fragment)
