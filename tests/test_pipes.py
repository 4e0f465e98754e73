"""Exit codes through pipes (issue 26): the exit code is decided by the command's result; a reader that goes away
(`| head -1`) only stops the output. Real pipes through bash (`set -o pipefail`, PIPESTATUS), against a real
ZooKeeper and a real KRaft broker; the CLI runs from this checkout (PYTHONPATH is inherited).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import run_cli

KQ = f"{shlex.quote(sys.executable)} -m kquotactl"


def piped(command: str, reader: str = "head -1", timeout: float = 180) -> tuple[int, int, str, str]:
    """``kquotactl ARGS | reader`` in bash: (kquotactl's exit code, the reader's, what the reader printed,
    kquotactl's stderr)."""
    script = f'set -o pipefail; {KQ} {command} 2>{{err}} | {reader}; echo "${{PIPESTATUS[*]}}" >&2'
    err_file = Path(os.environ.get("TMPDIR", "/tmp")) / f"kq-pipe-{os.getpid()}.err"
    p = subprocess.run(
        ["bash", "-c", script.replace("{err}", shlex.quote(str(err_file)))],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    codes = p.stderr.strip().splitlines()[-1].split()
    err = err_file.read_text()
    err_file.unlink()
    return int(codes[0]), int(codes[1]), p.stdout, err


def many(tmp_path: Path, n: int, value: int = 1, name: str = "q.yaml") -> str:
    p = tmp_path / name
    p.write_text(
        "quotas:\n"
        + "".join(f"- {{entity: {{user: u{i:05d}}}, config: {{producer_byte_rate: {i + value}}}}}\n" for i in range(n))
    )
    return shlex.quote(str(p))


@pytest.mark.zookeeper
def test_plan_into_head_exits_2_when_changes_are_pending(chroot, tmp_path) -> None:
    z = f"--zookeeper {chroot.connect}"
    rc, head, out, err = piped(f"{z} plan -f {many(tmp_path, 3000)} -o table")
    assert (rc, head) == (2, 0), err  # not 0 ("in sync"): 3,000 entities are pending
    assert out.strip() and "Traceback" not in err and "error" not in err
    rc, _, _, err = piped(f"{z} plan -f {many(tmp_path, 3000)} -o json")
    assert rc == 2, err
    assert not chroot.exists("/config/users")  # plan never writes


@pytest.mark.zookeeper
def test_plan_in_sync_into_head_still_exits_0(chroot, tmp_path) -> None:
    m = many(tmp_path, 2000)
    assert run_cli("--zookeeper", chroot.connect, "apply", "-f", shlex.split(m)[0], "--yes").exit_code == 0
    rc, _, out, err = piped(f"--zookeeper {chroot.connect} plan -f {m} -o json")
    assert rc == 0 and out.strip(), err


def test_validate_into_head_exits_1_on_a_bad_manifest(tmp_path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "quotas:\n" + "".join(f"- {{entity: {{user: u{i}}}, config: {{producer_byte_rat: 5}}}}\n" for i in range(3000))
    )
    for fmt in ("json", "yaml", "junit", "sarif", "markdown"):
        rc, head, out, err = piped(f"validate -f {shlex.quote(str(bad))} -o {fmt}")
        assert (rc, head) == (1, 0), (fmt, err)
        assert out.strip() and "3000 problems in the manifest" in err, (fmt, err[-300:])


def test_validate_strict_into_head_exits_1_on_warnings(tmp_path) -> None:
    p = tmp_path / "q.yaml"  # each pair's producer_byte_rate is shadowed by nothing, but CN=... users warn (lint)
    p.write_text(
        "quotas:\n"
        + "".join(
            f"- {{entity: {{user: 'CN=svc{i},O=acme'}}, config: {{producer_byte_rate: 5}}}}\n" for i in range(2000)
        )
    )
    rc, _, out, err = piped(f"validate -f {shlex.quote(str(p))} --strict -o json")
    assert rc == 1 and "--strict" in err and out.strip(), err[-300:]


@pytest.mark.zookeeper
def test_apply_and_export_and_describe_into_head_report_what_happened(chroot, tmp_path) -> None:
    z = f"--zookeeper {chroot.connect}"
    m = many(tmp_path, 2000)
    rc, _, _, err = piped(f"{z} apply -f {m} --dry-run -o json")  # dry run: changes still pending
    assert rc == 2, err
    rc, _, out, err = piped(f"{z} apply -f {m} --yes -o json")  # a closed pipe does not stop the apply midway
    assert rc == 0 and out.strip(), err
    assert len(chroot.children("/config/users")) == 2000
    for command in ("export", "describe -o json", "describe -o table", "describe -o kafka"):
        rc, _, out, err = piped(f"{z} {command}")
        assert rc == 0 and out.strip() and "error" not in err, (command, err)


def test_a_failure_after_the_output_is_cut_is_still_a_failure(tmp_path) -> None:
    """The old rule (a closed pipe exits 0) turned any later finding into success."""
    m = many(tmp_path, 2000)
    conns = tmp_path / "conns.jsonl"
    conns.write_text("".join(json.dumps({"user": f"u{i:05d}"}) + "\n" for i in range(3000)) + "{not json\n")
    rc, head, out, err = piped(f"explain -f {m} --connections {shlex.quote(str(conns))} -o json")
    assert (rc, head) == (1, 0) and out.strip(), err[-300:]
    assert "3001" in err, err  # the bad line is named, though nobody read the output before it


@pytest.mark.zookeeper
def test_explain_into_head_exits_as_describe_does(chroot, tmp_path) -> None:
    m = many(tmp_path, 2000)
    conns = tmp_path / "conns.jsonl"
    conns.write_text("".join(json.dumps({"user": f"u{i:05d}"}) + "\n" for i in range(3000)))
    for fmt in ("json", "table", "yaml"):
        rc, _, out, err = piped(f"explain -f {m} --connections {shlex.quote(str(conns))} -o {fmt}")
        assert rc == 0 and out.strip() and err == "", (fmt, err)
    rc, _, out, err = piped(f"explain -f {m} --user u00001 -o table")
    assert rc == 0 and out.strip(), err
    run_cli("--zookeeper", chroot.connect, "apply", "-f", shlex.split(m)[0], "--yes")
    rc, _, _, err = piped(f"--zookeeper {chroot.connect} describe --user nobody -o table")
    rc2, _, _, err2 = piped(f"--zookeeper {chroot.connect} explain --user nobody -o table")
    assert rc == rc2 == 0, (err, err2)


@pytest.mark.kafka
def test_through_a_real_broker_plan_and_describe_into_head(kraft, tmp_path) -> None:
    b = f"--bootstrap-server {kraft.bootstrap}"
    m = many(tmp_path, 1500)
    rc, _, out, err = piped(f"{b} plan -f {m} -o table")
    assert rc == 2 and out.strip(), err
    rc, _, _, err = piped(f"{b} apply -f {m} --yes -o json")
    assert rc == 0, err
    rc, _, out, err = piped(f"{b} describe -o kafka")
    assert rc == 0 and out.strip() and err == "", err
    rc, _, _, err = piped(f"{b} plan -f {m} -o table")
    assert rc == 0, err


def test_a_broken_pipe_that_is_not_stdout_is_an_error_not_success(tmp_path) -> None:
    """Only stdout's reader going away is quiet; any other broken pipe is reported, exit 1."""
    from kquotactl.cli import app

    class Boom(BrokenPipeError):
        pass

    def fail(*_a: object, **_k: object) -> None:
        raise Boom(32, "Broken pipe")

    mp = pytest.MonkeyPatch()
    mp.setattr(app, "_invoke", fail)
    try:
        r = run_cli("describe")
    finally:
        mp.undo()
    assert r.exit_code == 1 and "Broken pipe" in r.stderr, (r.exit_code, r.stderr)


@pytest.mark.zookeeper
def test_top_watch_stops_when_its_reader_goes_away(chroot, exporter) -> None:
    """`top --watch` into `head`: it would refresh into a closed pipe forever; it ends, exit 0."""
    run_cli("--zookeeper", chroot.connect, "alter", "--client-id", 'a "b"', "--add-config", "producer_byte_rate=2000")
    rc, head, out, err = piped(
        f"--zookeeper {chroot.connect} top --scrape {exporter} --watch 0.5 -o table", reader="head -c 100", timeout=60
    )
    assert (rc, head) == (0, 0) and out, err
    rc, _, out, err = piped(f"--zookeeper {chroot.connect} top --scrape {exporter} -o json")
    assert rc == 0 and out.strip(), err


@pytest.mark.zookeeper
def test_a_closed_stdout_from_the_start_is_no_crash_and_keeps_the_exit_code(chroot, tmp_path) -> None:
    """`kquotactl plan ... >&-` (stdout closed before start): no internal error; the result decides the status."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("quotas: [\n")
    for command, want in (
        (f"--zookeeper {chroot.connect} plan -f {many(tmp_path, 10)}", 2),
        (f"validate -f {shlex.quote(str(bad))}", 1),
        (f"--zookeeper {chroot.connect} describe", 0),
    ):
        p = subprocess.run(["bash", "-c", f"{KQ} {command} >&-"], capture_output=True, text=True, timeout=120)
        assert p.returncode == want and "internal error" not in p.stderr, (command, p.returncode, p.stderr)
