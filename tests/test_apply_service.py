"""``apply`` as one two-phase service (services/applying.py) against a real ZooKeeper (``chroot``): prepare writes
nothing and refuses what it must before anything is shown; commit writes, logs and resumes; the refusals that depend
on what was read are data, worded by the CLI with the options, one line, exit 1, nothing written."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import write_manifest, zk_cli
from kquotactl.backends.base import QuotaBackend
from kquotactl.backends.factory import open_backend
from kquotactl.cli.errorwords import worded
from kquotactl.connection.cluster import ConnectionOptions
from kquotactl.core.changes import build_change
from kquotactl.core.entities import Entity
from kquotactl.core.errors import ApplyRefused, TooManyDeletions
from kquotactl.core.keys import PRODUCE_KEY
from kquotactl.manifests.loader import load_text
from kquotactl.services.applying import ApplySettings, prepare
from kquotactl.services.plans import plan
from kquotactl.services.quotas import alter, describe

pytestmark = pytest.mark.zookeeper

LOWER = f"""\
quotas:
  - entity: {{user: alice}}
    config: {{{PRODUCE_KEY}: 1000}}
  - entity: {{user: bob}}
    config: {{consumer_byte_rate: 2000}}
"""


@pytest.fixture
def backend(chroot) -> Iterator[QuotaBackend]:  # type: ignore[no-untyped-def]
    b = open_backend(ConnectionOptions(zookeeper=chroot.connect))
    alter(b, build_change(Entity(user="alice"), {PRODUCE_KEY: "100000"}))
    yield b
    b.close()


def values(backend: QuotaBackend) -> dict[str, dict[str, float]]:
    return {str(r.entity.user): dict(r.config) for r in describe(backend).records}


def test_prepare_writes_nothing_and_commit_applies_logs_and_a_resume_finds_nothing_left(
    backend: QuotaBackend, tmp_path: Path
) -> None:
    manifest = load_text(LOWER)
    before = values(backend)
    log = str(tmp_path / "apply.log")

    def planner():  # type: ignore[no-untyped-def]
        planned = plan(backend, manifest)
        return planned.backend, planned.plan, planned.manifest

    pending = prepare(lambda: backend, ApplySettings(log_path=log), cluster="zk", planner=planner)
    assert pending.pending and pending.staged is None and pending.target == {"backend": "zookeeper", "cluster": "zk"}
    assert values(backend) == before  # the first phase reads only
    seen: list = []
    committed = pending.commit(on_applied=seen.append)
    assert committed.applied is not None and seen == [committed.applied] and committed.verified is None
    assert committed.applied.counts["applied"] == 2
    assert values(backend) == {"alice": {PRODUCE_KEY: 1000}, "bob": {"consumer_byte_rate": 2000}}
    lines = [json.loads(line) for line in Path(log).read_text().splitlines()]
    assert "plan" in lines[0] and sorted(line["outcome"] for line in lines[1:]) == ["applied", "applied"]

    said: list[str] = []
    resumed = prepare(lambda: backend, ApplySettings(), cluster="zk", resume_path=log, say=said.append)
    assert not resumed.pending and said == [f"nothing to resume: every entity of {log} is applied"]


def test_prepare_stages_a_lowered_limit_and_refuses_what_does_not_fit(backend: QuotaBackend, tmp_path: Path) -> None:
    manifest = load_text(LOWER)

    def planner():  # type: ignore[no-untyped-def]
        return backend, plan(backend, manifest).plan, manifest

    staged = prepare(lambda: backend, ApplySettings(stages=3, interval=0.0), cluster="zk", planner=planner)
    assert staged.staged is not None and staged.staged.count == 3 and staged.interval == 0.0
    with pytest.raises(ApplyRefused) as needed:
        prepare(lambda: backend, ApplySettings(stages=3), cluster="zk", planner=planner)
    assert (needed.value.kind, needed.value.fields) == ("interval-needed", {"count": "3"})
    with pytest.raises(ApplyRefused) as unstaged:
        prepare(lambda: backend, ApplySettings(interval=60.0), cluster="zk", planner=planner)
    assert unstaged.value.kind == "interval-unstaged" and "--" not in str(unstaged.value)
    empty = load_text('prune: ["users/*"]\nquotas: []\n')
    with pytest.raises(TooManyDeletions):
        prepare(
            lambda: backend,
            ApplySettings(max_deletions=0),
            cluster="zk",
            planner=lambda: (backend, plan(backend, empty, prune=True).plan, empty),
        )
    assert values(backend) == {"alice": {PRODUCE_KEY: 100000}}  # nothing written by any of them


def test_the_refusals_after_reading_are_worded_with_the_options_as_before(chroot, backend, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The CLI lines of :class:`ApplyRefused`, exactly as the command said them when it checked them itself."""
    manifest = write_manifest(tmp_path, LOWER)
    log = str(tmp_path / "apply.log")
    cases = [
        (
            ["apply", "-f", manifest, "--interval", "5m", "--yes"],
            "--interval is the wait between stages: it goes with --stages N (or --resume LOG)",
        ),
        (["apply", "-f", manifest, "--stages", "3", "--yes"], "a staged apply (3 stages) needs --interval DURATION "
         "(5m, 90s, 1h)"),
    ]  # fmt: skip
    for args, line in cases:
        r = zk_cli(chroot, *args)
        assert (r.exit_code, r.stderr) == (1, f"kquotactl: error: {line}\n"), args
    assert values(backend) == {"alice": {PRODUCE_KEY: 100000}}
    r = zk_cli(chroot, "apply", "-f", manifest, "--log", log, "--yes")
    assert r.exit_code == 0, r.stderr
    for args, line in [
        (["--interval", "1s"], f"{log} logs an apply without stages: --interval, --prometheus, --scrape do not apply"),
        (["--verify-sample", "2"], "--verify-sample goes with --verify"),
    ]:
        r = zk_cli(chroot, "apply", "--resume", log, "--yes", *args)
        assert (r.exit_code, r.stderr) == (1, f"kquotactl: error: {line}\n"), args
    for kind, fields in [
        ("stage-options", {"path": "a.log"}),
        ("verify-sample", {}),
        ("interval-unstaged", {}),
        ("interval-needed", {"count": "4"}),
    ]:
        e = ApplyRefused(kind, **fields)
        assert "--" not in str(e) and worded(e).count("--") >= 1 and e.exit_code == 1
