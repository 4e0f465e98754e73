"""Issue 26, section 2: what an apply applied is always known and always logged.

A real CLI process applies 5,000 entities to a real ZooKeeper and a real KRaft broker and is stopped half-way by a
real signal (SIGINT as Ctrl-C sends it, SIGTERM as a CI runner does), or loses its ZooKeeper. Then: the ``--log``
holds exactly the entities whose live values changed, the summary comes first and names the full report, the exit
code keeps its meaning, and ``apply --resume LOG`` finishes the job until ``plan`` says in sync.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import run_cli

N = 5000
SRC = Path(__file__).resolve().parents[1] / "src"


def manifest(tmp_path: Path, n: int = N, name: str = "q.yaml", base: int = 1) -> str:
    p = tmp_path / name
    p.write_text(
        "quotas:\n"
        + "".join(f"- {{entity: {{user: u{i:05d}}}, config: {{producer_byte_rate: {i + base}}}}}\n" for i in range(n))
    )
    return str(p)


def cli(*args: str, **kw) -> subprocess.Popen:
    """The real console entry point in its own process (signals reach it as they reach a user's kquotactl)."""
    return subprocess.Popen([sys.executable, "-m", "kquotactl", *args], text=True, **kw)


def test_the_cli_processes_run_this_checkout() -> None:
    out = subprocess.run(
        [sys.executable, "-c", "import kquotactl; print(kquotactl.__file__)"], capture_output=True, text=True
    )
    assert Path(out.stdout.strip()).resolve().is_relative_to(SRC), out.stdout


def log_lines(log: Path) -> list[dict]:
    """The log's lines (but a last line cut short by a full disk)."""
    text = log.read_text()
    whole = text if text.endswith("\n") else text.rpartition("\n")[0]
    return [json.loads(x) for x in whole.splitlines() if x.strip()]


def logged_applied(log: Path) -> list[str]:
    """The users the log says were applied (every run in the log)."""
    return [x["entity"]["user"] for x in log_lines(log) if x.get("outcome") == "applied"]


def wait_for_lines(log: Path, at_least: int, p: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and p.poll() is None:
        if log.exists() and log.read_text().count('"outcome": "applied"') >= at_least:
            return
        time.sleep(0.01)
    raise AssertionError(f"the log never reached {at_least} applied lines (exit {p.poll()})")


def report_of(err: str) -> tuple[set[str], set[str], set[str]]:
    """applied / not applied / unknown, from the full report file the summary names."""
    words = {w.rstrip(";:") for line in err.splitlines() for w in line.split()}
    (path,) = {w for w in words if w.startswith("/") and "kquotactl-apply-" in w}
    lines = Path(path).read_text().splitlines()
    Path(path).unlink()

    def of(prefix: str) -> set[str]:
        return {x.split(": ", 1)[1].removeprefix("user=") for x in lines if x.startswith(prefix + ": ")}

    return of("applied"), of("not applied"), of("outcome unknown")


def live_users(target: list[str]) -> dict[str, int]:
    r = run_cli(*target, "describe", "--entity-type", "users", "-o", "json")
    assert r.exit_code == 0, r.stderr
    return {x["entity"]["user"]: x["config"]["producer_byte_rate"] for x in json.loads(r.stdout)}


def stop_half_way(target: list[str], tmp_path: Path, sig: int, wait_for: int) -> tuple[int, str, Path, str]:
    m, log = manifest(tmp_path), tmp_path / "apply.log"
    p = cli(*target, "apply", "-f", m, "--yes", "--log", str(log), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wait_for_lines(log, wait_for, p)  # the first writes have landed (and were logged as they landed)
    p.send_signal(sig)
    _out, err = p.communicate(timeout=180)
    return p.returncode, err, log, m


@pytest.mark.parametrize(
    ("sig", "code", "cause"),
    [(signal.SIGINT, 130, "interrupted (Ctrl-C)"), (signal.SIGTERM, 143, "terminated (SIGTERM)")],
    ids=["SIGINT", "SIGTERM"],
)
@pytest.mark.parametrize(
    "where", [pytest.param("zookeeper", marks=pytest.mark.zookeeper), pytest.param("kraft", marks=pytest.mark.kafka)]
)
def test_a_5000_entity_apply_stopped_half_way_logs_exactly_what_changed_and_resumes(
    request, tmp_path, where, sig, code, cause
) -> None:
    if where == "zookeeper":
        target = ["--zookeeper", request.getfixturevalue("chroot").connect]
        wait_for = 1000  # two of ten transactions of 500 entities
    else:
        target = ["--bootstrap-server", request.getfixturevalue("kraft").bootstrap]
        wait_for = 2000  # the first of three AlterClientQuotas requests (2,000 entries each) answered
    rc, err, log, m = stop_half_way(target, tmp_path, sig, wait_for)
    print(err)  # (shown when it fails)
    lines = err.splitlines()
    assert rc == code, err[-3000:]
    assert "Traceback" not in err and "internal error" not in err
    # the summary first, a screenful of entities, then the error line with how to continue
    assert lines[0] == f"kquotactl: apply stopped: {cause}", err[:2000]
    assert len(lines) < 40, f"{len(lines)} lines"
    assert lines[-1].startswith(f"kquotactl: error: {cause.split()[0]} apply: "), lines[-1]
    assert lines[-1].endswith(f"to continue: kquotactl apply --resume {log}"), lines[-1]
    applied, missing, unknown = report_of(err)
    assert len(applied) + len(missing) + len(unknown) == N
    assert len(applied) >= wait_for and missing, (len(applied), len(missing))
    assert not unknown, "the cluster answers: the writes in flight are read back, none stays unknown"
    assert f"{len(applied)} entities applied, {len(missing)} not applied" in lines[1]
    # the log holds one line per entity applied, and those are exactly the entities whose live values changed
    logged = logged_applied(log)
    live = live_users(target)
    assert len(logged) == len(set(logged)) and set(logged) == applied == set(live), (
        len(logged), len(applied), len(live)
    )  # fmt: skip
    # the rest of the apply from the log alone, then in sync
    r = run_cli(*target, "apply", "--resume", str(log), "--yes")
    assert r.exit_code == 0, r.stderr
    assert f"resuming {log}: {len(applied)} entities of {N} done" in r.stderr
    assert f"applied {len(missing)} entities" in r.stdout + r.stderr
    assert run_cli(*target, "plan", "-f", m).exit_code == 0
    assert sorted(logged_applied(log)) == sorted(f"u{i:05d}" for i in range(N))  # the whole log: each once
    r = run_cli(*target, "apply", "--resume", str(log), "--yes")
    assert r.exit_code == 0 and "nothing to resume" in r.stderr, r.stderr


@pytest.mark.zookeeper
def test_a_lost_zookeeper_mid_apply_logs_every_committed_transaction(tmp_path) -> None:
    """The server is killed between transactions: the log holds every committed one; the transaction in flight
    cannot be read back (nothing answers) and stays unknown, said as such; exit 1; resume converges."""
    from kazoo.client import KazooClient

    from kquotactl.testing.servers import ZooKeeperServer

    m, log = manifest(tmp_path, 3000), tmp_path / "apply.log"
    with ZooKeeperServer() as server:
        admin = KazooClient(server.connect)
        admin.start()
        admin.ensure_path("/c/brokers/ids")
        admin.stop()
        admin.close()
        target = ["--zookeeper", server.connect + "/c", "--timeout", "3"]
        p = cli(
            *target, "apply", "-f", m, "--yes", "--log", str(log), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        wait_for_lines(log, 500, p)
        server.stop(signal.SIGKILL)
        _out, err = p.communicate(timeout=180)
        assert p.returncode == 1, err[-3000:]
        lines = err.splitlines()
        assert lines[0].startswith("kquotactl: apply stopped: ") and "ZooKeeper" in lines[0], lines[0]
        assert len(lines) < 40 and "Traceback" not in err
        applied, missing, unknown = report_of(err)
        assert len(applied) + len(missing) + len(unknown) == 3000 and missing
        if unknown:
            assert "could not be read back" in err
        server.start()
        live = set(live_users(target))
        logged = set(logged_applied(log))
        assert logged == applied and applied <= live <= applied | unknown  # what it says is what is there
        r = run_cli(*target, "apply", "--resume", str(log), "--yes")
        assert r.exit_code == 0, r.stderr
        assert run_cli(*target, "plan", "-f", m).exit_code == 0


@pytest.mark.zookeeper
def test_a_log_that_cannot_be_written_stops_the_apply_and_resume_reads_the_cluster(chroot, tmp_path) -> None:
    """The disk fills up (a file size limit) while the second transaction's lines are written: the apply stops
    at once (exit 1) saying the log misses them, the report still counts them applied (they were committed), and
    resume, reading past the cut last line, finds them on the cluster and does only the rest."""
    import resource

    n = 1500  # three transactions of 500
    m = manifest(tmp_path, n)
    # the same apply into a twin chroot (same name length) gives the size of the header and the first 500 lines
    twin = chroot.root[:-1] + ("x" if chroot.root[-1] != "x" else "y")
    chroot.zk.ensure_path(twin + "/brokers/ids")
    try:
        full = tmp_path / "full.log"
        twin_target = ["--zookeeper", chroot.connect.replace(chroot.root, twin)]
        assert run_cli(*twin_target, "apply", "-f", m, "--yes", "--log", str(full)).exit_code == 0
    finally:
        chroot.zk.delete(twin, recursive=True)
    limit = len("".join(x + "\n" for x in full.read_text().splitlines()[:501]).encode()) + 100
    target, log = ["--zookeeper", chroot.connect], tmp_path / "apply.log"

    def small_files() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    p = cli(*target, "apply", "-f", m, "--yes", "--log", str(log), stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, preexec_fn=small_files)  # fmt: skip
    _out, err = p.communicate(timeout=180)
    assert p.returncode == 1, err[-3000:]
    lines = err.splitlines()
    assert lines[0].startswith(f"kquotactl: apply stopped: cannot write the log {log}: File too large;"), lines[0]
    assert "the last 500 entities applied may be missing from it" in lines[0]
    applied, missing, unknown = report_of(err)
    live = set(live_users(target))
    assert len(applied) == 1000 and applied == live and len(missing) == 500 and not unknown
    logged = logged_applied(log)
    assert len(logged) == 500 and set(logged) < live and not log.read_text().endswith("\n")  # a cut last line
    r = run_cli(*target, "apply", "--resume", str(log), "--yes")
    assert r.exit_code == 0, r.stderr
    assert f"resuming {log}: 1000 entities of {n} done" in r.stderr and "applied 500 entities" in r.stdout + r.stderr
    assert run_cli(*target, "plan", "-f", m).exit_code == 0


@pytest.mark.zookeeper
def test_resume_refuses_when_the_live_values_are_not_what_the_log_expects(chroot, tmp_path) -> None:
    target = ["--zookeeper", chroot.connect]
    m, log = manifest(tmp_path, 30), tmp_path / "apply.log"
    assert run_cli(*target, "apply", "-f", m, "--yes", "--log", str(log)).exit_code == 0
    # a run whose last 10 answers never came: the log stops early, the writes had landed
    text = log.read_text().splitlines()
    log.write_text("\n".join(text[:-10]) + "\n")
    r = run_cli(*target, "apply", "--resume", str(log), "--yes")
    assert r.exit_code == 0 and "nothing to resume" in r.stderr, r.stderr
    # someone else changes one logged entity and one unlogged one: refused, nothing written
    assert run_cli(*target, "alter", "--user", "u00003", "--add-config", "producer_byte_rate=777").exit_code == 0
    assert run_cli(*target, "alter", "--user", "u00027", "--add-config", "producer_byte_rate=778").exit_code == 0
    before = chroot.snapshot()
    r = run_cli(*target, "apply", "--resume", str(log), "--yes")
    assert r.exit_code == 1 and len(r.stderr.splitlines()) == 1, r.stderr
    assert "not resumed, nothing written: the live values of 2 entities (users/u00003, users/u00027)" in r.stderr
    assert "users/u00003 has producer_byte_rate=777" in r.stderr
    assert chroot.snapshot() == before
    # and a manifest that no longer asks for the logged values is refused too
    other = manifest(tmp_path, 30, "other.yaml", base=5)
    r = run_cli(*target, "apply", "--resume", str(log), "-f", other, "--yes")
    assert r.exit_code == 1 and "asks for other values than the apply logged" in r.stderr, r.stderr


@pytest.mark.zookeeper
def test_resume_refuses_a_log_without_an_apply_and_another_cluster(chroot, tmp_path) -> None:
    target = ["--zookeeper", chroot.connect]
    empty = tmp_path / "empty.log"
    empty.write_text("")
    r = run_cli(*target, "apply", "--resume", str(empty), "--yes")
    assert r.exit_code == 1 and "no apply in this log to resume" in r.stderr, r.stderr
    m, log = manifest(tmp_path, 3), tmp_path / "apply.log"
    assert run_cli(*target, "apply", "-f", m, "--yes", "--log", str(log)).exit_code == 0
    r = run_cli("--zookeeper", chroot.connect + "x", "apply", "--resume", str(log), "--yes")
    assert r.exit_code == 1 and f"logs an apply to {chroot.connect}" in r.stderr, r.stderr
    r = run_cli(*target, "apply", "--resume", str(log), "--interval", "5s", "--yes")
    assert r.exit_code == 1 and "an apply without stages" in r.stderr, r.stderr


# -- the confirmation prompt ----------------------------------------------------------------------------------


def prompt(chroot, tmp_path) -> tuple[subprocess.Popen, int]:
    """apply without --yes on a terminal, stopped at its question."""
    import pty

    master, slave = pty.openpty()
    p = cli(
        "--zookeeper", chroot.connect, "apply", "-f", manifest(tmp_path, 2),
        stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    os.close(slave)
    seen = ""
    deadline = time.monotonic() + 60
    while "Apply changes to 2 entities" not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([p.stderr], [], [], 1)
        if ready:
            seen += os.read(p.stderr.fileno(), 4096).decode()
    assert "Apply changes to 2 entities" in seen, seen
    return p, master  # (at once: Python's input() drops a Ctrl-C that lands as the prompt appears; ours must not)


@pytest.mark.zookeeper
@pytest.mark.parametrize(
    ("how", "code", "said"),
    [
        ("SIGINT", 130, "interrupted (Ctrl-C) at the prompt: not applied, nothing was written"),
        ("SIGTERM", 143, "terminated (SIGTERM) at the prompt: not applied, nothing was written"),
        ("EOF", 2, "no answer at the prompt (end of input): not applied, nothing was written"),
    ],
)
def test_ctrl_c_sigterm_or_end_of_input_at_the_prompt_write_nothing(chroot, tmp_path, how, code, said) -> None:
    before = chroot.snapshot()
    p, master = prompt(chroot, tmp_path)
    if how == "EOF":
        os.write(master, b"\x04")  # Ctrl-D on a terminal
    else:
        p.send_signal(getattr(signal, how))
    _out, err = p.communicate(timeout=60)
    os.close(master)
    assert p.returncode == code, err
    assert err.strip().splitlines()[-1] == f"kquotactl: error: {said}", err
    assert "Aborted" not in err and "Traceback" not in err
    assert chroot.snapshot() == before


# -- the writes in flight, read back (the service, on a real ZooKeeper) ------------------------------------------


class AnswerLost:
    """The real ZooKeeper backend, except that Ctrl-C comes after its writes land and before their answers: every
    entity of the call is of unknown outcome to the caller, as with a transaction on the wire."""

    def __init__(self, backend, meddle=None) -> None:
        self.backend, self.meddle = backend, meddle
        self.name, self.warnings = backend.name, backend.warnings

    def alter(self, changes, **kw):
        from kquotactl.core.errors import Interrupted

        kw.pop("progress", None)
        self.backend.alter(changes, **kw)  # landed
        if self.meddle:
            self.meddle()
        raise Interrupted("interrupted", [], [], [c.entity.label() for c in changes])

    def __getattr__(self, name):
        return getattr(self.backend, name)


@pytest.mark.zookeeper
def test_writes_whose_answer_never_came_are_read_back_logged_and_counted(chroot, tmp_path) -> None:
    import io

    from kquotactl.backends.factory import open_backend
    from kquotactl.connection.cluster import ConnectionOptions
    from kquotactl.core.changes import build_change
    from kquotactl.core.entities import Entity
    from kquotactl.manifests.loader import load_text
    from kquotactl.render.records import partial_report
    from kquotactl.services.plans import apply, plan
    from kquotactl.services.quotas import alter

    text = Path(manifest(tmp_path, 6)).read_text()
    with open_backend(ConnectionOptions(zookeeper=chroot.connect)) as real:
        the_plan = plan(real, load_text(text)).plan
        log = io.StringIO()
        result = apply(AnswerLost(real), the_plan, log=log, chunk=3)
        assert result.partial is not None and result.partial.exit_code == 130
        # the first chunk's 3 writes landed: read back, counted applied, logged; the second chunk was never sent
        assert result.partial.applied == ["user=u00000", "user=u00001", "user=u00002"]
        assert result.partial.not_applied == ["user=u00003", "user=u00004", "user=u00005"]
        assert not result.partial.unknown and result.counts["applied"] == 3
        assert result.read_back == "read back the 3 entities in flight: 3 applied, 0 not applied"
        lines = [json.loads(x) for x in log.getvalue().splitlines()]
        assert [(x["entity"]["user"], x["outcome"], x["message"]) for x in lines] == [
            (f"u0000{i}", "applied", "read back") for i in range(3)
        ]
        # someone else changes one of them between the write and the read: it stays unknown, and is said so
        the_plan = plan(real, load_text(Path(manifest(tmp_path, 6, base=100)).read_text())).plan

        def meddle() -> None:
            alter(real, build_change(Entity(user="u00001"), {"producer_byte_rate": "7"}))

        result = apply(AnswerLost(real, meddle), the_plan, chunk=3)
        assert result.partial is not None and result.partial.unknown == ["user=u00001"]
        assert (
            result.read_back
            == "read back the 3 entities in flight: 2 applied, 0 not applied, 1 changed by someone else"
        )
        lines, final = partial_report(result.partial)
        assert lines[2] == "outcome unknown: user=u00001" and "1 of unknown outcome" in str(final)
