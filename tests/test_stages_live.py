"""apply --stages against a real ZooKeeper (``chroot``) and a real KRaft broker (``kraft``): a 3-stage apply
reaches the target, Ctrl-C (SIGINT to the process) after stage 2 reports where each entity is and ``--resume``
finishes, a value changed by someone else between stages stops it, and a resume refuses live values the log does
not know."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import run_cli
from kquotactl.backends.factory import open_backend
from kquotactl.connection.cluster import ConnectionOptions
from kquotactl.core.changes import EntityChange
from kquotactl.core.entities import Entity
from kquotactl.core.stages import StageShape, staged_plan
from kquotactl.manifests.loader import load_text
from kquotactl.services.plans import plan
from kquotactl.services.staged import apply_stages

pytestmark = [pytest.mark.zookeeper, pytest.mark.kafka]

BEFORE = """\
quotas:
  - entity: {user: alice}
    config: {producer_byte_rate: 1000000}
  - entity: {user: bob}
    config: {consumer_byte_rate: 5000}
"""
AFTER = """\
quotas:
  - entity: {user: alice}
    config: {producer_byte_rate: 100000, consumer_byte_rate: 2000}
  - entity: {user: bob}
    config: {consumer_byte_rate: 1000}
    stages: 2
"""
ALICE = [464159, 215444, 100000]  # 1,000,000 -> 100,000 in 3 geometric stages (whole numbers, rounded up)


@pytest.fixture(params=["zookeeper", "kraft"])
def target(request, tmp_path) -> list[str]:
    if request.param == "zookeeper":
        return ["--zookeeper", request.getfixturevalue("chroot").connect]
    return ["--bootstrap-server", request.getfixturevalue("kraft").bootstrap]


def write(tmp_path: Path, text: str, name: str) -> str:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return str(p)


def live(target: list[str]) -> dict[str, dict]:
    r = run_cli(*target, "describe", "-o", "json")
    assert r.exit_code == 0, r.stderr
    return {d["entity"]["user"]: d["config"] for d in json.loads(r.stdout)}


def start(target: list[str], tmp_path: Path) -> tuple[str, str]:
    """The BEFORE state applied; the AFTER manifest's path and a log path."""
    r = run_cli(*target, "apply", "-f", write(tmp_path, BEFORE, "before.yaml"), "--yes")
    assert r.exit_code == 0, r.stderr
    return write(tmp_path, AFTER, "after.yaml"), str(tmp_path / "stages.log")


def test_three_stages_reach_the_target_and_the_log_holds_every_stage(target, tmp_path) -> None:
    after, log = start(target, tmp_path)
    r = run_cli(*target, "plan", "-f", after, "--stages", "3")
    assert r.exit_code == 2, r.stderr
    assert "in 3 stages (geometric):" in r.stdout
    assert "464159" in r.stdout and "215444" in r.stdout
    t0 = time.monotonic()
    r = run_cli(*target, "apply", "-f", after, "--stages", "3", "--interval", "1s", "--log", log, "--yes")
    assert r.exit_code == 0, r.stderr
    assert time.monotonic() - t0 >= 2  # two waits of 1 s between three stages
    assert "stage 3/3: checked" in r.stderr and "applied all 3 stages" in r.stdout
    assert live(target) == {
        "alice": {"producer_byte_rate": 100000, "consumer_byte_rate": 2000},
        "bob": {"consumer_byte_rate": 1000},
    }
    lines = [json.loads(x) for x in Path(log).read_text().splitlines()]
    assert lines[0]["staged"]["stages"] == 3
    written = [(x["entity"]["user"], x["stage"], x["after"]) for x in lines[1:]]
    assert written == [
        ("alice", 1, {"producer_byte_rate": ALICE[0], "consumer_byte_rate": 2000}),
        ("bob", 1, {"consumer_byte_rate": 2237}),
        ("alice", 2, {"producer_byte_rate": ALICE[1], "consumer_byte_rate": 2000}),
        ("bob", 2, {"consumer_byte_rate": 1000}),
        ("alice", 3, {"producer_byte_rate": ALICE[2], "consumer_byte_rate": 2000}),
    ]
    r = run_cli(*target, "apply", "--resume", log, "--yes")  # finished: nothing to resume
    assert r.exit_code == 0 and "nothing to resume" in r.stdout
    # back up: raises only, so nothing to stage
    r = run_cli(*target, "apply", "-f", str(tmp_path / "before.yaml"), "--stages", "3", "--interval", "1s", "--yes")
    assert r.exit_code == 0, r.stderr
    assert "no limit is lowered: nothing to stage, applied at once" in r.stderr
    assert live(target)["alice"]["producer_byte_rate"] == 1000000


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_after_stage_two_reports_each_entity_and_resume_finishes(target, tmp_path, sig, code) -> None:
    """Ctrl-C, or SIGTERM as a CI runner sends it (exit 143), in the wait before stage 3."""
    after, log = start(target, tmp_path)
    cmd = [sys.executable, "-m", "kquotactl", *target, "apply", "-f", after, "--stages", "3"]
    proc = subprocess.Popen(
        [*cmd, "--interval", "3s", "--log", log, "--yes"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    seen = []
    assert proc.stderr is not None
    for line in proc.stderr:  # the wait before stage 3: stages 1 and 2 are written and checked
        seen.append(line)
        if line.startswith("waiting") and "stage 3/3" in line:
            break
    else:
        pytest.fail("".join(seen))
    proc.send_signal(sig)  # within the 3 s wait (the line is its first act)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == code, "".join(seen) + err
    assert "stopped at stage 3 of 3: interrupted" in err
    assert (
        f"users/alice: stage 2 of 3 (producer_byte_rate 210 KiB/s ({ALICE[1]}), consumer_byte_rate 1.95 KiB/s (2000))"
        in err
    )
    assert "users/bob: done (consumer_byte_rate 1000 B/s)" in err
    assert f"to continue: kquotactl apply --resume {log}" in err
    assert live(target)["alice"]["producer_byte_rate"] == ALICE[1]
    r = run_cli(*target, "apply", "--resume", log, "-f", after, "--yes")
    assert r.exit_code == 0, r.stderr
    assert "resuming" in r.stderr and "stage 3/3: checked" in r.stderr
    assert live(target)["alice"] == {"producer_byte_rate": 100000, "consumer_byte_rate": 2000}


def test_a_value_changed_by_someone_else_between_stages_stops_it_and_resume_refuses(target, tmp_path) -> None:
    after, log = start(target, tmp_path)
    opts = ConnectionOptions(**{target[0].lstrip("-").replace("-", "_"): target[1]})
    with open_backend(opts) as backend:
        manifest = load_text(AFTER)
        staged = staged_plan(plan(backend, manifest).plan, 3, StageShape.GEOMETRIC, manifest.stages())

        def someone_else(seconds: float) -> None:  # between stage 1 and 2, another tool writes alice
            backend.alter([EntityChange(Entity(user="alice"), {"producer_byte_rate": 777})])

        result = apply_stages(backend, staged, interval=0, sleep=someone_else)
    assert result.stopped_at == 2
    assert result.stopped == "the live values are not what stage 1 left (changed by someone else)"
    assert result.details == [
        f"users/alice: producer_byte_rate is 777 B/s on the cluster, expected 453 KiB/s ({ALICE[0]})"
    ]
    assert result.done == {Entity(user="alice"): 1, Entity(user="bob"): 1}
    # the CLI: stopped after stage 1 by Ctrl-C, then someone changes a value: resume refuses in one line
    r = run_cli(
        *target,
        "alter",
        "--entity-type",
        "users",
        "--entity-name",
        "alice",
        "--add-config",
        "producer_byte_rate=1000000",
    )
    assert r.exit_code == 0, r.stderr
    r = run_cli(*target, "apply", "-f", after, "--stages", "3", "--interval", "1s", "--log", log, "--yes")
    assert r.exit_code == 0, r.stderr
    run_cli(
        *target, "alter", "--entity-type", "users", "--entity-name", "bob", "--add-config", "consumer_byte_rate=4242"
    )
    Path(log).write_text(
        "\n".join(x for x in Path(log).read_text().splitlines() if '"stage": 2' not in x and '"stage": 3' not in x)
        + "\n"
    )  # as if stopped after stage 1
    r = run_cli(*target, "apply", "--resume", log, "--yes")
    assert r.exit_code == 1
    assert r.stderr.strip().splitlines()[-1] == (
        "kquotactl: error: not resumed, nothing written: the live values of users/alice, users/bob are not what "
        "the log says stage 1 left (someone else changed them): users/alice: producer_byte_rate is 97.7 KiB/s "
        f"(100000) on the cluster, expected 453 KiB/s ({ALICE[0]})"
    )
