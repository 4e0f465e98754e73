"""The services called from Python, without click, against a real ZooKeeper (the ``chroot`` fixture)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator

import pytest

from kquotactl.backends.base import QuotaBackend
from kquotactl.backends.factory import open_backend
from kquotactl.connection.cluster import ConnectionOptions
from kquotactl.core.changes import Outcome, build_change
from kquotactl.core.entities import Entity
from kquotactl.core.errors import PartialFailure, TooManyDeletions
from kquotactl.core.plan import DEFAULT_MAX_DELETIONS
from kquotactl.manifests.loader import load_text
from kquotactl.render.records import partial_report
from kquotactl.services.plans import apply, plan
from kquotactl.services.quotas import alter, describe, load_quota_set

MANIFEST = """
prune: ["users/svc-*"]
quotas:
  - entity: {user: svc-a}
    config: {producer_byte_rate: 1MiB}
  - entity: {user: svc-b}
    config: {consumer_byte_rate: 2MiB}
  - entity: {user: svc-c, client-id: app}
    config: {request_percentage: 50}
"""


@pytest.fixture
def backend(chroot) -> Iterator[QuotaBackend]:  # type: ignore[no-untyped-def]
    b = open_backend(ConnectionOptions(zookeeper=chroot.connect))
    yield b
    b.close()


@pytest.mark.zookeeper
def test_describe_alter_plan_apply_round_trip(backend: QuotaBackend) -> None:
    assert describe(backend).records == []
    altered = alter(backend, build_change(Entity(user="svc-old"), {"producer_byte_rate": "5"}))
    assert altered.rejection is None and [r.outcome for r in altered.results] == [Outcome.APPLIED]
    assert [(r.entity, dict(r.config)) for r in describe(backend).records] == [
        (Entity(user="svc-old"), {"producer_byte_rate": 5})
    ]

    planned = plan(backend, load_text(MANIFEST), prune=True)
    assert planned.plan.counts()["create"] == 3 and planned.plan.counts()["delete"] == 1
    log = io.StringIO()
    applied = apply(backend, planned.plan, log=log, keep_records=True, chunk=2)  # two backend calls
    assert applied.partial is None and applied.failed == []
    assert applied.counts["applied"] == 4 and len(applied.applied) == 4
    lines = [json.loads(x) for x in log.getvalue().splitlines()]
    assert [x["path"] for x in lines] == [x["path"] for x in applied.records]
    assert {x["outcome"] for x in lines} == {"applied"} and all("time" in x for x in lines)

    assert not plan(backend, load_text(MANIFEST), prune=True).plan.pending  # in sync: a second apply is a no-op
    index = load_quota_set(backend).index
    assert index.resolve("producer_byte_rate", "svc-a", "x").limit == 1024 * 1024
    rejected = alter(backend, build_change(Entity(user="nobody"), {}, ["consumer_byte_rate"]))
    assert rejected.rejection is not None and "Invalid config(s): consumer_byte_rate" in str(rejected.rejection)


@pytest.mark.zookeeper
def test_a_partial_failure_is_returned_as_data(backend: QuotaBackend, chroot) -> None:  # type: ignore[no-untyped-def]
    from kazoo.security import make_acl

    manifest = load_text(MANIFEST.replace("svc-c, client-id: app", "svc-c"))
    the_plan = plan(backend, manifest).plan
    users = f"{chroot.root}/config/users"
    read_only = [make_acl("world", "anyone", read=True, admin=True)]  # admin: the ACL can be restored
    calls = []

    def lock_after_the_first_chunk(done: object) -> None:  # a real refusal by ZooKeeper, between two backend calls
        calls.append(done)
        chroot.zk.set_acls(users, read_only)

    try:
        result = apply(backend, the_plan, chunk=1, progress=lock_after_the_first_chunk)
    finally:
        chroot.zk.set_acls(users, [make_acl("world", "anyone", all=True)])
    assert calls and isinstance(result.partial, PartialFailure), result
    # the refused transaction's answer tells nothing (a refusal looks like a lost answer): its entity is read back,
    # found at its old values, and reported not applied; nothing stays unknown
    assert result.partial.applied == ["user=svc-a"] and result.counts["applied"] == 1
    assert (result.partial.unknown, result.partial.not_applied) == ([], ["user=svc-b", "user=svc-c"])
    assert result.read_back == "read back the 1 entity in flight: 0 applied, 1 not applied"
    assert "refused to write" in result.partial.cause
    lines, final = partial_report(result.partial)
    assert lines[2:] == ["not applied: user=svc-b", "not applied: user=svc-c", "applied: user=svc-a"]
    assert str(final).startswith("partial apply: 1 entity applied, 2 not applied;") and final.exit_code == 1
    assert [r.entity for r in describe(backend).records] == [Entity(user="svc-a")]  # what it says is what is there


@pytest.mark.zookeeper
def test_the_deletion_guard_refuses_before_writing(backend: QuotaBackend) -> None:
    for i in range(3):
        alter(backend, build_change(Entity(user=f"svc-{i}"), {"producer_byte_rate": "5"}))
    the_plan = plan(backend, load_text('prune: ["users/svc-*"]\nquotas: []\n'), prune=True).plan
    with pytest.raises(TooManyDeletions):
        apply(backend, the_plan, max_deletions=2)
    assert len(describe(backend).records) == 3


def test_apply_and_the_cli_share_the_default_deletion_limit() -> None:
    from kquotactl.cli.commands.apply import apply as apply_command

    (option,) = [p for p in apply_command.params if p.name == "max_deletions"]
    assert option.default == DEFAULT_MAX_DELETIONS


def test_one_quota_set_loader_for_files_and_backends(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "q.yaml"
    path.write_text(MANIFEST)
    from kquotactl.backends.manifest import ManifestBackend

    by_files = load_quota_set([str(path)]).index
    by_backend = load_quota_set(ManifestBackend.open([str(path)])).index
    for user, client in [("svc-a", ""), ("svc-c", "app"), ("svc-c", "other"), ("x", "")]:
        for key in ("producer_byte_rate", "consumer_byte_rate", "request_percentage"):
            assert by_files.resolve(key, user, client) == by_backend.resolve(key, user, client)


def test_replay_resolves_its_limit_or_says_which_input_is_missing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from kquotactl.cli.errorwords import worded
    from kquotactl.core.errors import MissingInput
    from kquotactl.core.explain import Connection
    from kquotactl.services.explain import replay

    path = tmp_path / "q.yaml"
    path.write_text(MANIFEST)
    loads = []

    def quota_set():  # type: ignore[no-untyped-def]
        loads.append(1)
        return load_quota_set([str(path)]).index

    events = [(t * 100, 200_000.0) for t in range(30)]
    given = replay(events, limit="1MiB")
    assert (given.key, given.limit, len(given.steps)) == ("producer_byte_rate", 1024 * 1024, 30) and not loads
    resolved = replay(events, conn=Connection.of("svc-a", "x", None), quota_set=quota_set)
    assert resolved.limit == 1024 * 1024 and loads == [1]
    assert [s.throttle_ms for s in resolved.steps] == [s.throttle_ms for s in given.steps]
    cases = [
        ({}, "--replay needs the quota: give --limit VALUE, or a connection (--user/--client-id/--ip)"),
        ({"conn": Connection.of("svc-a", None, None), "key": "connection_creation_rate"}, "give --ip"),
        ({"conn": Connection.of(None, None, "10.0.0.1")}, "unlimited for this connection"),
        ({"conn": Connection.of("nobody", None, None)}, "nothing would be throttled (give --limit)"),
    ]
    for kwargs, words in cases:
        with pytest.raises(MissingInput) as e:
            replay(events, quota_set=quota_set, **kwargs)  # type: ignore[arg-type]
        assert "--" not in str(e.value) and words in worded(e.value)


# -- each check in one place: refused before a connection is opened, before anything is written --------------------


def _never_opened() -> QuotaBackend:
    raise AssertionError("the backend was opened for a change the service refuses")


class _NoWire:
    """A wire that must not be used: every attribute is a failure."""

    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"the backend used its connection ({name}) for a change it refuses")


def test_alter_refuses_before_it_opens_the_backend() -> None:
    """The service checks the change first (check_alter), then opens the backend: the CLI hands it the opener."""
    from kquotactl.core.errors import InvalidValue
    from kquotactl.services.quotas import check_alter

    unknown = build_change(Entity(user="a"), {"request_rate": "5"})  # offline only: no Kafka release knows it
    with pytest.raises(InvalidValue, match="request_rate is not a quota key of any Apache Kafka release"):
        alter(_never_opened, unknown)
    budget = build_change(Entity(user="a"), {"request_percentage": "50"})
    with pytest.raises(InvalidValue, match="request_percentage cannot be a cluster-wide budget"):
        alter(_never_opened, budget, cluster_wide=True)
    check_alter(budget)  # per broker it is fine


def test_a_backend_used_directly_refuses_an_unknown_key_before_any_request() -> None:
    """Every backend's alter starts with backends.base.check_writes: a Python caller holding a backend (no service)
    cannot write a key no Kafka release knows, nor one entity twice in a batch."""
    from kquotactl.backends.kafka.quotas import AdminBackend
    from kquotactl.core.errors import InvalidValue, UsageError

    admin = AdminBackend(_NoWire())  # type: ignore[arg-type]
    with pytest.raises(InvalidValue, match="request_rate"):
        admin.alter([build_change(Entity(user="a"), {"request_rate": "5"})])
    twice = build_change(Entity(user="a"), {"producer_byte_rate": "5"})
    with pytest.raises(UsageError, match="appears twice"):
        admin.alter([twice, twice])


def test_apply_refuses_a_plan_before_its_first_chunk() -> None:
    """check_applicable: too many deletions, or a key no live cluster accepts (a plan made offline may set one),
    refused before the backend is asked anything; the apply command asks it before it shows the plan."""
    from kquotactl.backends.kafka.quotas import AdminBackend
    from kquotactl.backends.manifest import ManifestBackend
    from kquotactl.core.errors import InvalidValue
    from kquotactl.services.plans import check_applicable

    live = ManifestBackend(load_text("quotas:\n  - {entity: {user: svc-x}, config: {producer_byte_rate: 1}}\n"))
    wanted = load_text("prune: ['users/svc-*']\nquotas:\n  - {entity: {user: svc-a}, config: {request_rate: 5}}\n")
    the_plan = plan(live, wanted, prune=True, offline=True).plan
    with pytest.raises(TooManyDeletions):
        check_applicable(the_plan, max_deletions=0)
    with pytest.raises(InvalidValue, match="request_rate"):
        check_applicable(the_plan)
    with pytest.raises(InvalidValue, match="request_rate"):
        apply(AdminBackend(_NoWire()), the_plan)  # type: ignore[arg-type]


@pytest.mark.zookeeper
def test_a_logged_apply_resumes_from_python(backend: QuotaBackend, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """resume: the entities of a logged plan not done, refused before connecting when the log is for another
    cluster or the manifest asks for other values; a finished log leaves nothing."""
    from kquotactl.core.errors import UsageError
    from kquotactl.services.plans import apply_log_header, read_apply_log, resume

    the_plan = plan(backend, load_text(MANIFEST)).plan
    log = tmp_path / "apply.log"
    log.write_text(apply_log_header(the_plan, {"cluster": "zk:1/x"}))  # stopped before any entity was written
    logged = read_apply_log(str(log))
    assert logged is not None

    def never() -> QuotaBackend:
        raise AssertionError("connected")

    with pytest.raises(UsageError, match="logs an apply to zk:1/x, not zk:2/y"):
        resume(never, logged, path=str(log), cluster="zk:2/y")
    other = load_text(MANIFEST.replace("1MiB", "3MiB"))
    with pytest.raises(UsageError, match="asks for other values than the apply logged in"):
        resume(never, logged, path=str(log), cluster="zk:1/x", manifest=other)

    resumed = resume(lambda: backend, logged, path=str(log), cluster="zk:1/x")
    assert (resumed.done, resumed.total, len(resumed.plan.diffs)) == (0, 3, 3) and resumed.backend is backend
    with log.open("a") as fh:
        assert apply(backend, resumed.plan, log=fh).counts["applied"] == 3
    again = resume(backend, read_apply_log(str(log)), path=str(log), cluster="zk:1/x")  # type: ignore[arg-type]
    assert (again.done, again.total, again.plan.pending) == (3, 3, False)


@pytest.mark.zookeeper
def test_a_staged_apply_runs_and_resumes_from_python(backend: QuotaBackend, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """run_stages writes the schedule first, so resume_staged needs only the log; a run stopped before its first
    stage resumes at stage 1 and a finished one has nothing left."""
    from kquotactl.core.stages import StageShape, staged_plan
    from kquotactl.services.staged import read_staged_log, resume_staged, run_stages

    alter(backend, build_change(Entity(user="svc-a"), {"producer_byte_rate": "8MiB"}))
    the_plan = plan(backend, load_text(MANIFEST)).plan
    staged = staged_plan(the_plan, 3, StageShape("geometric"), {})
    log = tmp_path / "stages.log"
    from kquotactl.services.staged import staged_log_header

    log.write_text(staged_log_header(staged, 0.0, {"cluster": "here"}))  # the header only: stopped before stage 1
    resumed = resume_staged(lambda: backend, read_staged_log(str(log)), path=str(log), cluster="here")
    assert resumed.first == 1 and set(resumed.done.values()) == {0}
    events = []
    with log.open("a") as fh:
        result = run_stages(backend, staged, interval=0, done=resumed.done, log=fh, on_event=events.append)
    assert result.finished and [e.what for e in events].count("applied") == 3
    assert [dict(r.config) for r in describe(backend).records if r.entity == Entity(user="svc-a")] == [
        {"producer_byte_rate": 1024 * 1024}
    ]
    assert resume_staged(backend, read_staged_log(str(log)), path=str(log), cluster="here").first is None


def test_alter_checks_its_change_before_connecting() -> None:
    """check_alter: a budget that sets nothing, a key with no cluster-wide budget, refused before any cluster is
    asked; the error carries data and the CLI names the flag."""
    from kquotactl.cli.errorwords import worded
    from kquotactl.core.errors import InvalidValue, MissingInput
    from kquotactl.services.quotas import check_alter

    with pytest.raises(MissingInput) as nothing:
        check_alter(build_change(Entity(user="a"), {}, ["producer_byte_rate"]), cluster_wide=True)
    assert nothing.value.kind == "cluster-budgets"
    assert worded(nothing.value) == "--cluster-wide needs the budgets to set (--add-config KEY=VALUE)"
    with pytest.raises(InvalidValue, match="request_percentage cannot be a cluster-wide budget"):
        check_alter(build_change(Entity(user="a"), {"request_percentage": "50"}), cluster_wide=True)


@pytest.mark.zookeeper
def test_impact_replays_traffic_against_the_live_set_and_a_manifest(backend: QuotaBackend, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """services.impact: the live quota set (opened only when no manifest is given) compared with a manifest, on
    the local engine, the report as data."""
    from kquotactl.impact.replay import Window
    from kquotactl.services import impact

    alter(backend, build_change(Entity(user="u"), {"producer_byte_rate": "100"}))
    traffic = tmp_path / "t.jsonl"
    traffic.write_text("".join(json.dumps({"ts": t, "user": "u", "produce_bytes": 1000}) + "\n" for t in (0.75, 1.5)))
    manifest = tmp_path / "q.yaml"
    manifest.write_text("quotas:\n  - entity: {user: u}\n    config: {producer_byte_rate: 1MiB}\n")
    sets = impact.quota_sets([], [str(manifest)], lambda: backend)
    assert sets.base is not None
    steps: list[str] = []
    replay = impact.Replay(Window(), [str(traffic)], engine="local")
    result = impact.run(replay, sets, say=steps.append)
    assert result["summary"]["engine"] == "local" and [r["entity_path"] for r in result["quota_ids"]] == ["users/u"]
    assert "compare" in result and "replaying the same traffic against the base quota set" in steps


def test_log_errors_carry_data_and_the_cli_words_them(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The services name no flag: a log with nothing to resume and a manifest that asks for other values are errors
    with data; cli/errorwords.py adds how to write a log or start again (the messages as before)."""
    from kquotactl.cli.errorwords import worded
    from kquotactl.core.errors import LogMismatch, MissingInput, NothingLogged
    from kquotactl.services.plans import read_apply_log
    from kquotactl.services.staged import read_staged_log

    empty = tmp_path / "empty.log"
    empty.write_text("\n")
    with pytest.raises(NothingLogged) as plain:
        read_apply_log(str(empty))
    assert "--" not in str(plain.value)
    assert worded(plain.value) == f"{empty}: no apply in this log to resume (apply --log FILE writes one)"
    with pytest.raises(NothingLogged) as staged:
        read_staged_log(str(empty))
    assert worded(staged.value) == f"{empty}: no staged apply in this log (apply --stages N --log FILE writes one)"
    mismatch = LogMismatch("q.yaml:3", "users/a", "s.log", staged=True)
    assert worded(mismatch) == (
        "q.yaml:3: users/a asks for other values than the logged stages in s.log: not resumed, nothing written "
        "(plan and apply --stages again)"
    )
    assert worded(LogMismatch("q.yaml:3", "users/a", "a.log")).endswith("in a.log: not resumed, nothing written "
                                                                         "(plan and apply again)")  # fmt: skip
    brokers = MissingInput("budget-brokers")
    assert "--" not in str(brokers) and worded(brokers).endswith("give the broker count they divide by (--brokers N)")


def test_verify_refusals_carry_data_and_the_cli_words_them() -> None:
    """drive_target names no flag: a producer that cannot be the entity's connection is VerifyRefused with the
    names as data; cli/errorwords.py says which option fixes it (the messages as before)."""
    from kquotactl.cli.errorwords import VERIFY, worded
    from kquotactl.core.errors import VerifyRefused
    from kquotactl.services.verify import drive_target

    with pytest.raises(VerifyRefused) as no_bootstrap:
        drive_target(ConnectionOptions(zookeeper="zk:1"), Entity(user="a"), None, None)
    assert no_bootstrap.value.kind == "no-bootstrap" and "--" not in str(no_bootstrap.value)
    assert worded(no_bootstrap.value).startswith("--drive runs a producer: give --bootstrap-server")
    with pytest.raises(VerifyRefused) as user:
        drive_target(ConnectionOptions(bootstrap_server="b:9092"), Entity(user="alice"), None, None)
    assert user.value.fields == {"entity": "alice", "user": "ANONYMOUS"} and "--" not in str(user.value)
    assert worded(user.value) == (
        "--drive: the entity is user 'alice' but the producer authenticates as 'ANONYMOUS' "
        "(give that user's credentials with --command-config)"
    )
    assert set(VERIFY) == set(VerifyRefused.MESSAGES)  # every kind worded


@pytest.mark.zookeeper
def test_verify_from_python_waits_and_refuses_a_drive_before_connecting(backend: QuotaBackend, chroot) -> None:  # type: ignore[no-untyped-def]
    """services.verify.verify: the znode's values reported (or not within the timeout); a drive that could not be
    the entity's connection refused before the backend is opened."""
    from kquotactl.core.errors import VerifyRefused
    from kquotactl.services.verify import Drive, verify

    opts = ConnectionOptions(zookeeper=chroot.connect, timeout=0.3)
    alter(backend, build_change(Entity(user="v"), {"producer_byte_rate": "100"}))
    found = verify(lambda: backend, opts, Entity(user="v"))
    assert found.converged.converged and found.converged.expected == {"producer_byte_rate": 100}
    assert found.verdict is None
    late = verify(backend, opts, Entity(user="v"), {"producer_byte_rate": 200})
    assert not late.converged.converged and late.converged.lagging

    def never() -> QuotaBackend:
        raise AssertionError("connected")

    with pytest.raises(VerifyRefused, match="bootstrap address"):
        verify(never, opts, Entity(user="v"), drive=Drive(rate=1000, seconds=1, topic="t"))


def test_a_busy_drive_is_not_verified_with_data() -> None:
    """DriveBusy: exit 2 as every NotVerified, the quota-id and its load as data, the option named by the CLI."""
    from kquotactl.cli.errorwords import worded
    from kquotactl.core.verify import DriveBusy, NotVerified

    busy = DriveBusy("u", "c", 31.4, {"broker 1": 500.2})
    assert isinstance(busy, NotVerified) and busy.exit_code == 2 and "--" not in str(busy)
    assert (busy.user, busy.client_id, busy.busy) == ("u", "c", {"broker 1": 500.2})  # data, not words
    assert worded(busy) == (
        "--drive: the quota-id (user u, client-id c) still carries other traffic after 31s (broker 1: 500 B/s): its "
        "first throttle would not be the limit's alone, so it cannot verify the limit (nor find it wrong); drive a "
        "quota-id nothing else uses (--drive-client-id)"
    )


def test_an_inconclusive_drive_is_not_verified_with_data() -> None:
    """DriveInconclusive: exit 2, the first throttle as data; the options that tell are named by the CLI only."""
    from kquotactl.cli.errorwords import worded
    from kquotactl.core.verify import DriveInconclusive, NotVerified

    e = DriveInconclusive("user 'u'", 2140, 250)
    assert isinstance(e, NotVerified) and e.exit_code == 2 and "--" not in str(e)
    assert (e.broker_at_ms, e.broker_ms) == (2140, 250)
    assert worded(e) == (
        "user 'u': cannot tell: the broker's first throttle (250 ms at 2.1s) matches the simulation only if the "
        "quota-id's sensor was read while idle; drive again with --scrape or --prometheus"
    )
