"""core/partial.py: the one builder of a PartialFailure (ZooKeeper transactions, admin requests, apply chunks) and
render.records.partial_report, its one renderer."""

from __future__ import annotations

from kquotactl.core.changes import EntityChange, EntityResult, Outcome
from kquotactl.core.entities import Entity
from kquotactl.core.errors import EXIT_INTERRUPTED, BackendUnavailable, Interrupted, PartialFailure
from kquotactl.core.partial import apply_failure, interrupted, partial_failure, split_outcomes
from kquotactl.render.records import partial_report

CHANGES = [EntityChange(Entity(user=f"u{i}"), {"request_percentage": 10.0}) for i in range(5)]
E = [c.entity for c in CHANGES]
DONE = {E[0]: EntityResult(E[0], Outcome.APPLIED), E[1]: EntityResult(E[1], Outcome.UNCHANGED)}


def test_split_outcomes_in_the_order_of_the_changes() -> None:
    assert split_outcomes(CHANGES, DONE, [E[3], E[2]]) == (["user=u0"], ["user=u4"], ["user=u2", "user=u3"])


def test_a_zookeeper_transaction_in_flight_is_all_or_none() -> None:
    err = partial_failure(BackendUnavailable("lost"), CHANGES, DONE, [E[2]], atomic=True)
    assert isinstance(err, PartialFailure)
    assert (err.applied, err.not_applied, err.unknown) == (["user=u0"], ["user=u3", "user=u4"], ["user=u2"])
    assert str(err) == (
        "lost; applied 1 entity (user=u0); outcome unknown for 1 (one transaction, all or none of them written: "
        "user=u2); not applied: 2 — re-run to converge"
    )
    # nothing applied but a transaction of unknown fate: still a partial failure
    assert isinstance(partial_failure(BackendUnavailable("lost"), CHANGES, {}, [E[0]], atomic=True), PartialFailure)


def test_an_admin_request_in_flight_may_or_may_not_have_been_applied() -> None:
    err = partial_failure(BackendUnavailable("gone"), CHANGES, DONE, [E[2], E[3]], atomic=False)
    assert isinstance(err, PartialFailure) and err.unknown == ["user=u2", "user=u3"]
    assert str(err) == (
        "gone; applied 1 entity (user=u0); 2 in the failed request may or may not have been applied; "
        "1 not applied — re-run to converge"
    )
    settled = partial_failure(BackendUnavailable("gone"), CHANGES, DONE, [], atomic=False)  # read back: none unknown
    assert str(settled) == "gone; applied 1 entity (user=u0); 3 not applied — re-run to converge"
    plain = BackendUnavailable("gone")
    assert partial_failure(plain, CHANGES, {}, [], atomic=False) is plain  # nothing applied: the error as is
    unsure = partial_failure(plain, CHANGES, {}, [E[0]], atomic=False)  # nothing applied, one of unknown fate
    assert isinstance(unsure, PartialFailure) and unsure.unknown == ["user=u0"]


def test_interrupted_and_apply_failures_render_one_way() -> None:
    stop = interrupted(CHANGES, DONE, [E[2]])
    assert isinstance(stop, Interrupted) and stop.exit_code == EXIT_INTERRUPTED
    assert str(stop).startswith("interrupted: 1 entity applied, 2 not applied, outcome unknown for 1")
    assert "all or none" in str(stop) and stop.cause == "interrupted"
    lines, final = partial_report(apply_failure(stop, ["a"], ["b", "c"], ["d"], interrupted=True))
    assert lines == ["kquotactl: apply stopped: " + str(stop),
                     "  1 entity applied, 2 not applied, 1 of unknown outcome",
                     "outcome unknown: d", "not applied: b", "not applied: c", "applied: a"]  # fmt: skip
    assert str(final) == (
        "interrupted apply: 1 entity applied, 2 not applied, 1 of unknown outcome; re-run apply to converge"
    )
    assert final.exit_code == EXIT_INTERRUPTED
    _, partial = partial_report(apply_failure(BackendUnavailable("x"), [], ["b"]))
    assert str(partial) == "partial apply: 0 entities applied, 1 not applied; re-run apply to converge"
    assert partial.exit_code == 1


def test_an_admin_request_interrupted_in_flight_is_not_called_all_or_none() -> None:
    stop = interrupted(CHANGES, DONE, [E[2], E[3]], atomic=False)
    assert "all or none" not in str(stop) and "each entity applied or not" in str(stop)
    assert (stop.applied, stop.not_applied, stop.unknown) == (["user=u0"], ["user=u4"], ["user=u2", "user=u3"])


def test_a_large_stop_prints_the_summary_first_and_names_the_full_report() -> None:
    applied = [f"user=a{i}" for i in range(3000)]
    missing = [f"user=m{i}" for i in range(1990)]
    stop = apply_failure(BackendUnavailable("gone"), applied, missing, ["user=x"] * 10)
    lines, final = partial_report(stop, report="/tmp/r.txt", notes=["note"], how="to continue: X")
    assert lines[:4] == [
        "kquotactl: apply stopped: gone",
        "  3000 entities applied, 1990 not applied, 10 of unknown outcome",
        "  note",
        "  every entity in /tmp/r.txt; the first 20:",
    ]
    assert lines[4:14] == ["outcome unknown: user=x"] * 10 and lines[14] == "not applied: user=m0"
    assert len(lines) == 4 + 20 + 1 and lines[-1] == "... and 4980 more in /tmp/r.txt"
    assert str(final).endswith("; to continue: X") and final.exit_code == 1
    # nothing claims one transaction across requests in any wording of a stop
    assert all("all or none" not in x and "one transaction" not in x for x in [*lines, str(final)])


def test_the_entities_in_flight_are_read_back_with_one_filter_as_narrow_as_they_allow() -> None:
    from kquotactl.core.entities import DEFAULT
    from kquotactl.core.entities import EntityType as T
    from kquotactl.core.filters import EntityFilter, FilterComponent, MatchType

    users = [Entity(user=f"u{i}") for i in range(3)]
    assert EntityFilter.covering(users[:1]) == EntityFilter.exact(users[0])
    assert EntityFilter.covering(users) == EntityFilter((FilterComponent(T.USER, MatchType.ANY),), strict=True)
    pairs = [Entity(user="alice", client_id=c) for c in ("a", "b", DEFAULT)]
    flt = EntityFilter.covering(pairs)
    assert flt.component(T.USER) == FilterComponent(T.USER, MatchType.EXACT, "alice")
    assert flt.component(T.CLIENT_ID) == FilterComponent(T.CLIENT_ID, MatchType.ANY)
    assert EntityFilter.covering([Entity(user=DEFAULT, client_id="x"), Entity(user=DEFAULT, client_id="y")]).component(
        T.USER
    ) == FilterComponent(T.USER, MatchType.DEFAULT)
    assert EntityFilter.covering([*users, *pairs]) == EntityFilter.all()
    for group in (users, pairs, [*users, *pairs]):  # every one of them matches, nothing of another shape does
        flt = EntityFilter.covering(group)
        assert all(flt.matches(e) for e in group)
    assert not EntityFilter.covering(users).matches(pairs[0])
