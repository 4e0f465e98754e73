"""Staged tightening, pure: stage values (property tests), the staged plan's rules, the manifest's ``stages:``,
durations, and the observed regression rule."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kquotactl.core.changes import QuotaRecord
from kquotactl.core.entities import Entity
from kquotactl.core.errors import UsageError
from kquotactl.core.keys import KEYS, LONG_MAX
from kquotactl.core.manifest import ManifestError
from kquotactl.core.plan import make_plan
from kquotactl.core.stages import StagedPlan, StageShape, stage_values, staged_plan
from kquotactl.core.timespec import parse_duration
from kquotactl.manifests.loader import load_text
from kquotactl.observe.throttled import Sample, predicted_throttle_ms, stage_regressions, top_rows

SHAPES = st.sampled_from(list(StageShape))


def _check(values: tuple[float, ...], current: float, target: float, n: int) -> None:
    assert len(values) == n
    assert values[-1] == target
    assert all(target <= v <= current for v in values)
    assert all(a >= b for a, b in itertools.pairwise(values))  # never up again


@settings(max_examples=300, deadline=None)
@given(
    st.integers(1, LONG_MAX),
    st.integers(1, LONG_MAX),
    st.integers(1, 20),
    SHAPES,
    st.sampled_from(["producer_byte_rate", "consumer_byte_rate"]),
)
def test_long_stage_values_are_monotone_whole_and_end_exactly_at_the_target(
    a: int, b: int, n: int, shape: StageShape, key: str
) -> None:
    current, target = max(a, b), min(a, b)
    if current == target:
        current += 1
    values = stage_values(KEYS[key], current, target, n, shape)
    assert all(isinstance(v, int) for v in values)
    _check(values, current, target, n)


@settings(max_examples=300, deadline=None)
@given(st.integers(2, 2**31 - 1), st.integers(1, 2**31 - 2), st.integers(1, 20), SHAPES)
def test_int_stage_values(current: int, target: int, n: int, shape: StageShape) -> None:
    if target >= current:
        target = current - 1
    _check(stage_values(KEYS["connection_creation_rate"], current, target, n, shape), current, target, n)


@settings(max_examples=300, deadline=None)
@given(
    st.floats(1e-9, 1e300, allow_nan=False, allow_infinity=False),
    st.floats(1e-9, 1e300, allow_nan=False, allow_infinity=False),
    st.integers(1, 20),
    SHAPES,
)
def test_double_stage_values(a: float, b: float, n: int, shape: StageShape) -> None:
    current, target = max(a, b), min(a, b)
    if current == target:
        return
    _check(stage_values(KEYS["request_percentage"], current, target, n, shape), current, target, n)


def test_geometric_lowers_by_the_same_factor_and_linear_by_the_same_amount() -> None:
    key = KEYS["producer_byte_rate"]
    assert stage_values(key, 1_000_000, 100_000, 4, StageShape.GEOMETRIC) == (562342, 316228, 177828, 100000)
    assert stage_values(key, 1_000_000, 100_000, 3, StageShape.LINEAR) == (700000, 400000, 100000)
    assert stage_values(key, 5, 4, 3, StageShape.GEOMETRIC) == (5, 5, 4)  # too few whole numbers: a value repeats


LIVE = [
    QuotaRecord(Entity(user="alice"), {"producer_byte_rate": 1_000_000, "consumer_byte_rate": 100}),
    QuotaRecord(Entity(user="bob"), {"producer_byte_rate": 800}),
    QuotaRecord(Entity(user="carol"), {"producer_byte_rate": 800, "request_percentage": 50.0}),
]
MANIFEST = """\
prune: ["users/carol"]
quotas:
  - entity: {user: alice}
    config: {producer_byte_rate: 100000, consumer_byte_rate: 200}
  - entity: {user: bob}
    config: {producer_byte_rate: 100}
    stages: 2
  - entity: {user: dave}
    config: {producer_byte_rate: 100}
  - entity: {user: carol}
    config: {producer_byte_rate: 800}
"""


def _staged(n: int = 3) -> StagedPlan:
    manifest = load_text(MANIFEST)
    return staged_plan(make_plan(manifest, LIVE, prune=True), n, StageShape.GEOMETRIC, manifest.stages())


def test_raises_new_and_removed_keys_go_in_the_first_stage_lowered_ones_step_by_step() -> None:
    staged = _staged()
    assert staged.count == 3
    by = {e.entity.user: e for e in staged.entities}
    alice = by["alice"]
    assert [dict(s) for s in alice.steps] == [
        {"producer_byte_rate": 464159, "consumer_byte_rate": 200},  # the raise at once
        {"producer_byte_rate": 215444, "consumer_byte_rate": 200},
        {"producer_byte_rate": 100000, "consumer_byte_rate": 200},
    ]
    assert [dict(s) for s in by["bob"].steps] == [{"producer_byte_rate": 283}, {"producer_byte_rate": 100}]
    assert [dict(s) for s in by["dave"].steps] == [{"producer_byte_rate": 100}]  # new: one stage
    assert [dict(s) for s in by["carol"].steps] == [{"producer_byte_rate": 800}]  # a removed key is a raise
    # stage plans: bob and dave are done before the last stage; each stage writes only what moves
    assert {d.entity.user for d in staged.stage(1).diffs} == {"alice", "bob", "dave", "carol"}
    assert {d.entity.user for d in staged.stage(2).diffs} == {"alice", "bob"}
    assert {d.entity.user for d in staged.stage(3).diffs} == {"alice"}
    assert staged.expected(3)[Entity(user="bob")] == {"producer_byte_rate": 100}


def test_the_schedule_round_trips_through_json() -> None:
    staged = _staged()
    assert StagedPlan.from_json(staged.to_json()) == staged


def test_stages_in_the_manifest_are_checked_with_their_line() -> None:
    for bad in ("0", "x", "101", "2.5", "[1]"):
        text = f"quotas:\n  - entity: {{user: a}}\n    config: {{producer_byte_rate: 10}}\n    stages: {bad}\n"
        with pytest.raises(ManifestError) as e:
            load_text(text, "m.yaml")
        assert e.value.problems == [
            f"m.yaml:4: stages must be a whole number from 1 to 100, not {bad if bad != '[1]' else 'a list'!r}"
        ]


def test_parse_interval() -> None:
    """--interval is a duration as --since spells it (one parser), and may be 0."""
    got = [parse_duration(t, "--interval", allow_zero=True) for t in ("5m", "90s", "1h", "500ms", "30", "1.5", "0")]
    assert got == [300, 90, 3600, 0.5, 30, 1.5, 0]
    for bad in ("", "5x", "-1s", "m", "nan"):
        with pytest.raises(UsageError, match="--interval"):
            parse_duration(bad, "--interval", allow_zero=True)


def _rows(usage: float, throttle: float, limit: int) -> list:
    from kquotactl.core.precedence import QuotaIndex

    samples = [
        Sample("byte_rate", "b1", usage, "Produce", "alice", ""),
        Sample("throttle_time", "b1", throttle, "Produce", "alice", ""),
    ]
    return top_rows(samples, QuotaIndex([QuotaRecord(Entity(user="alice"), {"producer_byte_rate": limit})]))


def test_regression_rule_predicts_from_the_demand_before_the_stage() -> None:
    # throttled 1100 ms at 1000 B/s: demand 1000 * (1 + 1100/11000) = 1100 B/s; at 500 B/s: (1100/500 - 1) * 11 s
    assert predicted_throttle_ms(1000, 1100, 500) == pytest.approx(13200)
    before = _rows(1000, 1100, 1000)
    assert stage_regressions(before, _rows(500, 13000, 500)) == []  # as predicted
    worse = stage_regressions(before, _rows(500, 40000, 500))
    assert len(worse) == 1 and worse[0].startswith("user alice: producer_byte_rate throttled 40000 ms on broker b1")
    assert stage_regressions([], _rows(500, 900, 500)) == []  # within the slack
    assert len(stage_regressions([], _rows(500, 5000, 500))) == 1  # newly throttled with nothing predicted


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--stages", "3", "--interval", "soon"],
            "--interval 'soon' is not a duration (e.g. 90s, 30m, 24h, 7d, 1h30m)",
        ),
        (["--prometheus", "http://p:9090"], "--prometheus and --scrape check between stages: they go with --stages N"),
        (["--stages", "2", "--scrape", "a:1", "--prometheus", "http://p"], "give either --prometheus URL or --scrape"),
        (["--resume", "x.log", "--stages", "2"], "--resume LOG continues the logged apply: --plan, --stages"),
    ],
)
def test_staged_apply_usage_errors_come_before_any_connection(tmp_path, args: list[str], message: str) -> None:
    from conftest import run_cli

    m = tmp_path / "m.yaml"
    m.write_text("quotas:\n  - entity: {user: a}\n    config: {producer_byte_rate: 10}\n")
    r = run_cli("--zookeeper", "127.0.0.1:1/none", "apply", "-f", str(m), "--yes", *args)
    assert r.exit_code == 1
    assert r.stderr.startswith(f"kquotactl: error: {message}"), r.stderr
