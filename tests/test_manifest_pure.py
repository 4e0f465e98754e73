"""Manifests without a cluster: loading with file:line errors, the JSON Schema, planning, lint."""

from __future__ import annotations

import json
import random
import textwrap
from pathlib import Path

import pytest

from kquotactl.backends.base import QuotaBackend
from kquotactl.backends.manifest import ManifestBackend
from kquotactl.cli.errorwords import worded
from kquotactl.core.entities import DEFAULT, Entity, EntityType
from kquotactl.core.errors import TooManyDeletions, UsageError
from kquotactl.core.filters import EntityFilter, FilterComponent, MatchType
from kquotactl.core.manifest import ManifestError, PruneRule, Source
from kquotactl.manifests.loader import json_schema, load_manifests, load_text
from kquotactl.render.plans import plan_summary

D = DEFAULT

EXAMPLE = textwrap.dedent(
    """\
    prune: ["users/svc-*", "clients/*"]   # what this manifest owns
    quotas:
      - entity: {user: alice}
        config: {producer_byte_rate: 1048576, consumer_byte_rate: 2097152}
      - entity: {user: alice, client-id: "batch job"}
        config: {request_percentage: 50}
      - entity: {user: "<default>"}
        config: {producer_byte_rate: 102400}
      - entity: {user: "<default>", client-id: "<default>"}
        config: {request_rate: 100}
      - entity: {ip: 192.0.2.10}
        config: {connection_creation_rate: 20}
      - entity: {user: {name: "<default>"}}
        config: {consumer_byte_rate: 10MiB}
        owner: team-a
        reason: a real user called <default>
        ticket: 1234
    """
)


def problems(text: str, name: str = "m.yaml") -> list[str]:
    with pytest.raises(ManifestError) as e:
        load_text(text, name)
    return e.value.problems


# -- loading ------------------------------------------------------------------------------------------


def test_the_issue_example_loads_with_defaults_real_default_names_units_and_metadata() -> None:
    m = load_text(EXAMPLE, "m.yaml")
    cfg = m.config_map()
    assert cfg[Entity(user="alice")] == {"producer_byte_rate": 1048576, "consumer_byte_rate": 2097152}
    assert cfg[Entity(user="alice", client_id="batch job")] == {"request_percentage": 50.0}
    assert cfg[Entity(user=D)] == {"producer_byte_rate": 102400}
    assert cfg[Entity(user=D, client_id=D)] == {"request_rate": 100}
    assert cfg[Entity(ip="192.0.2.10")] == {"connection_creation_rate": 20}
    real = m.get(Entity(user="<default>"))
    assert real is not None and real.config == {"consumer_byte_rate": 10 * 1024 * 1024}
    assert real.meta() == {"owner": "team-a", "reason": "a real user called <default>", "ticket": "1234"}
    assert real.source == Source("m.yaml", 13) and real.key_sources["consumer_byte_rate"] == Source("m.yaml", 14)
    assert [r.pattern for r in m.prune] == ["users/svc-*", "clients/*"]
    assert isinstance(cfg[Entity(user=D, client_id=D)]["request_rate"], int)
    assert [r.entity for r in m.records()][:2] == [Entity(user=D), Entity(user="<default>")]


def test_names_keep_their_literal_spelling_and_ips_are_canonical() -> None:
    m = load_text(
        "quotas:\n- {entity: {user: 007, client-id: 1.50}, config: {producer_byte_rate: 1}}\n"
        "- {entity: {ip: '2001:DB8:0::1'}, config: {connection_creation_rate: 3}}\n"
    )
    assert Entity(user="007", client_id="1.50") in m
    assert Entity(ip="2001:db8::1") in m


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("quotas:\n  - entity: {user: a}\n    config: {producer_byte_rat: 5}\n", 3, "did you mean producer_byte_rate"),
        ("quotas:\n  - entity: {user: a}\n    config:\n      producer_byte_rate: -1\n", 4, "greater than 0"),
        ("quotas:\n  - entity: {user: a}\n    config:\n      x: 1\n      consumer_byte_rate: 1.5\n", 4, "unknown key"),
        ("quotas:\n  - entity: {user: a}\n    config:\n\n      consumer_byte_rate: 1.5\n", 5, "whole number"),
        ("quotas:\n  - entity: {user: a}\n    config: {consumer_byte_rate: .nan}\n", 3, "NaN"),
        ("quotas:\n  - entity: {user: a}\n    config: {consumer_byte_rate: 10XB}\n", 3, "unknown unit"),
        ("quotas:\n  - entity: {user: a}\n    config: {consumer_byte_rate: true}\n", 3, "must be a number"),
        ("quotas:\n  - entity: {ip: 1.2.3.4}\n    config: {connection_creation_rate: 2147483648}\n", 3, "too large"),
        ("quotas:\n  - entity: {ip: 1.2.3.4}\n    config: {producer_byte_rate: 5}\n", 3, "not valid for ips"),
        ("quotas:\n  - entity: {user: a}\n    config: {connection_creation_rate: 5}\n", 3, "only valid for ips"),
        (
            "quotas:\n  - entity: {ip: 1.2.3.4, user: a}\n    config: {connection_creation_rate: 5}\n",
            2,
            "INVALID_REQUEST",
        ),
        ("quotas:\n  - entity: {ip: host.example}\n    config: {connection_creation_rate: 5}\n", 2, "valid IP"),
        ("quotas:\n  - entity: {user: a, user: b}\n    config: {producer_byte_rate: 5}\n", 2, "duplicate key 'user'"),
        (
            "quotas:\n  - entity: {user: a}\n    config:\n      producer_byte_rate: 5\n      producer_byte_rate: 6\n",
            5,
            "duplicate key 'producer_byte_rate'",
        ),
        ("quotas:\n  - entity: {user: ''}\n    config: {producer_byte_rate: 5}\n", 2, "name is empty"),
        ("quotas:\n  - entity: {user: ~}\n    config: {producer_byte_rate: 5}\n", 2, '"<default>"'),
        ("quotas:\n  - entity: {user: yes}\n    config: {producer_byte_rate: 5}\n", 2, "boolean"),
        ("quotas:\n  - entity: {usr: a}\n    config: {producer_byte_rate: 5}\n", 2, "did you mean user"),
        ("quotas:\n  - entity: {}\n    config: {producer_byte_rate: 5}\n", 2, "entity is empty"),
        ("quotas:\n  - entity: {user: a}\n    config: {}\n", 3, "config is empty"),
        ("quotas:\n  - entity: {user: a}\n", 2, "no config"),
        ("quotas:\n  - config: {producer_byte_rate: 1}\n", 2, "no entity"),
        (
            "quotas:\n  - entity: {user: a}\n    config: {producer_byte_rate: 1}\n    ownr: me\n",
            4,
            "did you mean owner",
        ),
        ("quota:\n  - entity: {user: a}\n", 1, "did you mean quotas"),
        ("quotas: {user: a}\n", 1, "must be a list"),
        ("prune: [users]\nquotas: []\n", 1, "prune pattern 'users'"),
        ("prune: users/*\n", 1, "prune must be a list"),
        (
            "quotas:\n  - entity: {user: a}\n    config: {producer_byte_rate: 1}\n  - entity: {user: a}\n"
            "    config: {consumer_byte_rate: 1}\n",
            4,
            "declared twice (first at m.yaml:2)",
        ),
        ("quotas:\n  - entity: {user: a\n    config: {}\n", 3, "invalid YAML"),
        ("base: &b {producer_byte_rate: 1}\n", 1, "unknown key 'base'"),
        ("quotas:\n  - entity: {user: a}\n    config: {<<: {producer_byte_rate: 1}}\n", 3, "merge keys"),
    ],
)
def test_errors_name_the_line_of_the_offending_value_or_key(text: str, line: int, message: str) -> None:
    found = problems(text)
    assert any(p.startswith(f"m.yaml:{line}: ") and message in p for p in found), found


def test_every_problem_is_reported_and_the_error_is_one_line() -> None:
    text = (
        "quotas:\n  - entity: {user: a}\n    config: {producer_byte_rate: 0}\n  - entity: {user: b}\n"
        "    config: {producer_byte_rate: x}\n"
    )
    with pytest.raises(ManifestError) as e:
        load_text(text, "m.yaml")
    assert [p.split(":")[1] for p in e.value.problems] == ["3", "5"]
    assert "\n" not in str(e.value) and "1 more problem" in str(e.value)


def test_files_and_directories_merge_and_the_same_entity_twice_names_both_places(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.yaml").write_text(
        "prune: [users/*]\nquotas:\n- {entity: {user: a}, config: {request_rate: 1}}\n"
    )
    (tmp_path / "d" / "b.yml").write_text('{"quotas": [{"entity": {"client-id": "c"}, "config": {"request_rate": 2}}]}')
    (tmp_path / "d" / "notes.txt").write_text("ignored")
    (tmp_path / "top.yaml").write_text(
        "quotas:\n- {entity: {ip: '<default>'}, config: {connection_creation_rate: 9}}\n"
    )
    m = load_manifests([str(tmp_path / "top.yaml"), str(tmp_path / "d")])
    assert set(m.config_map()) == {Entity(user="a"), Entity(client_id="c"), Entity(ip=D)}
    assert [r.pattern for r in m.prune] == ["users/*"]
    (tmp_path / "dup.yaml").write_text("quotas:\n\n- {entity: {user: a}, config: {request_rate: 1}}\n")
    with pytest.raises(ManifestError) as e:
        load_manifests([str(tmp_path / "d"), str(tmp_path / "dup.yaml")])
    assert e.value.problems == [
        f"{tmp_path / 'dup.yaml'}:3: entity users/a is declared twice (first at {tmp_path / 'd' / 'a.yaml'}:3); "
        "merge the entries"
    ]


def test_missing_paths_and_empty_inputs() -> None:
    with pytest.raises(ManifestError, match="no such file"):
        load_manifests(["/nonexistent/x.yaml"])
    with pytest.raises(ManifestError, match="no manifest given"):
        load_manifests([])
    assert len(load_text("")) == 0 and len(load_text("quotas:\n")) == 0
    assert len(load_manifests(["-"], stdin_text="quotas: []\n")) == 0


@pytest.mark.parametrize(
    ("pattern", "entity", "owned"),
    [
        ("users/svc-*", Entity(user="svc-1"), True),
        ("users/svc-*", Entity(user="svc-1", client_id="x"), True),  # a user's pairs go with the user
        ("users/svc-*", Entity(user="alice"), False),
        ("users/svc-*", Entity(client_id="svc-1"), False),
        ("users/*", Entity(user=D), False),  # wildcards match real names only
        ("users/<default>", Entity(user=D), True),
        ("users/<default>", Entity(user=D, client_id="c"), True),
        ("users/*/clients/*", Entity(user="a", client_id="c"), True),
        ("users/*/clients/*", Entity(user="a"), False),
        ("users/*/clients/*", Entity(user="a", client_id=D), False),
        ("users/*/clients/<default>", Entity(user="a", client_id=D), True),
        ("clients/*", Entity(client_id="batch job"), True),
        ("clients/*", Entity(client_id=D), False),
        ("ips/10.*", Entity(ip="10.1.2.3"), True),
        ("ips/*", Entity(ip=D), False),
        ("users/A*", Entity(user="alice"), False),  # case-sensitive, like principals
    ],
)
def test_prune_scope_globs_on_real_names(pattern: str, entity: Entity, owned: bool) -> None:
    assert PruneRule(pattern, Source("m", 1)).matches(entity) is owned


# -- JSON Schema ------------------------------------------------------------------------------------------


def test_the_shipped_json_schema_accepts_valid_manifests_and_rejects_malformed_ones(tmp_path: Path) -> None:
    import jsonschema
    import yaml

    schema = json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    docs_example = Path(__file__).resolve().parent.parent / "docs" / "examples" / "quotas.yaml"
    for text in [EXAMPLE, *([docs_example.read_text()] if docs_example.exists() else [])]:
        load_text(text)  # our own loader agrees
        assert list(validator.iter_errors(yaml.safe_load(text))) == []
    bad = [
        {"quota": []},
        {"quotas": [{"entity": {"user": "a"}}]},
        {"quotas": [{"entity": {"user": "a"}, "config": {"producer_byte_rate": -1}}]},
        {"quotas": [{"entity": {"user": "a"}, "config": {"connection_creation_rate": 1}}]},
        {"quotas": [{"entity": {"ip": "1.2.3.4"}, "config": {"producer_byte_rate": 1}}]},
        {"quotas": [{"entity": {"ip": "1.2.3.4", "user": "a"}, "config": {"connection_creation_rate": 1}}]},
        {"quotas": [{"entity": {"user": "a"}, "config": {"producer_byte_rate": "10XB"}}]},
        {"prune": ["users"]},
    ]
    for doc in bad:
        assert list(validator.iter_errors(doc)), doc


# -- the offline manifest backend ------------------------------------------------------------------------------


def test_manifest_backend_describes_with_the_live_filter_semantics() -> None:
    b = ManifestBackend(load_text(EXAMPLE))
    assert isinstance(b, QuotaBackend)
    users = EntityFilter((FilterComponent(EntityType.USER, MatchType.ANY),), strict=True)
    assert [r.entity for r in b.describe(users)] == [Entity(user=D), Entity(user="<default>"), Entity(user="alice")]
    defaults = EntityFilter((FilterComponent(EntityType.USER, MatchType.DEFAULT),), strict=False)
    assert [r.entity for r in b.describe(defaults)] == [Entity(user=D), Entity(user=D, client_id=D)]
    assert [r.config for r in b.describe(EntityFilter.exact(Entity(ip="192.0.2.10")))] == [
        {"connection_creation_rate": 20}
    ]
    assert b.describe(EntityFilter.exact(Entity(user="nobody"))) == []
    assert len(b.describe()) == 6
    with pytest.raises(UsageError, match="read-only"):
        b.alter([])


def test_records_round_trip_through_json() -> None:
    m = load_text(EXAMPLE)
    assert json.loads(json.dumps([r.to_json() for r in m.records()]))[0] == {
        "entity": {"user": None},
        "config": {"producer_byte_rate": 102400},
    }


# -- planning -----------------------------------------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from kquotactl.core.changes import QuotaRecord  # noqa: E402
from kquotactl.core.lint import lint, shadowing_entity  # noqa: E402
from kquotactl.core.plan import Plan, check_deletions, fingerprint, make_plan  # noqa: E402
from kquotactl.core.precedence import precedence_rank as precedence  # noqa: E402
from kquotactl.manifests.export import dump_manifest_yaml, export_document  # noqa: E402


def recs(state: dict[Entity, dict]) -> list[QuotaRecord]:
    return [QuotaRecord(e, c) for e, c in state.items()]


def manifest_of(state: dict[Entity, dict], prune: list[str] = ()) -> str:  # type: ignore[assignment]
    doc = export_document(recs(state))
    if prune:
        doc = {"prune": list(prune), **doc}
    return dump_manifest_yaml(doc)


def test_plan_adds_changes_and_without_prune_never_removes() -> None:
    live = {
        Entity(user="a"): {"producer_byte_rate": 1, "request_percentage": 5.0},
        Entity(user="x"): {"request_rate": 1},
    }
    want = {Entity(user="a"): {"producer_byte_rate": 2}, Entity(client_id=D): {"consumer_byte_rate": 3}}
    plan = make_plan(load_text(manifest_of(want)), recs(live))
    assert [(d.entity, d.action.value, [(k.key, k.op.value, k.old, k.new) for k in d.keys]) for d in plan.diffs] == [
        (Entity(user="a"), "update", [("producer_byte_rate", "change", 1, 2)]),
        (Entity(client_id=D), "create", [("consumer_byte_rate", "add", None, 3)]),
    ]
    assert plan.deletions == 0 and plan.unmanaged == 1 and plan.unchanged == 0
    assert plan.changes()[0].set == {"producer_byte_rate": 2} and plan.changes()[0].remove == frozenset()


def test_in_sync_is_an_empty_plan_and_doubles_compare_as_numbers() -> None:
    state = {Entity(user="a"): {"request_percentage": 50.0, "producer_byte_rate": 1024}}
    plan = make_plan(
        load_text("quotas:\n- {entity: {user: a}, config: {request_percentage: 50, producer_byte_rate: 1KiB}}"),
        recs(state),
    )
    assert not plan.pending and plan.unchanged == 1 and plan_summary(plan).startswith("in sync")


def test_a_limit_moving_to_a_more_specific_level_is_written_before_the_general_one_is_removed() -> None:
    live = {Entity(user=D): {"producer_byte_rate": 100}, Entity(client_id="c"): {"request_percentage": 1.0}}
    want = {
        Entity(user="alice"): {"producer_byte_rate": 100},  # the limit moves from users/<default> to alice...
        Entity(user="alice", client_id="c"): {"request_percentage": 1.0},  # ...and from clients/c to the pair
        Entity(ip=D): {"connection_creation_rate": 5},
    }
    plan = make_plan(load_text(manifest_of(want, ["users/<default>", "clients/*"])), recs(live), prune=True)
    order = [(d.entity, d.action.value) for d in plan.diffs]
    assert order == [
        (Entity(user="alice"), "create"),
        (Entity(user="alice", client_id="c"), "create"),
        (Entity(ip=D), "create"),
        (Entity(user=D), "delete"),
        (Entity(client_id="c"), "delete"),
    ]
    assert plan.deletions == 2


def test_an_entity_that_both_sets_and_removes_is_one_change_ordered_between_adds_and_removals() -> None:
    live = {
        Entity(user="svc-a"): {"producer_byte_rate": 1, "consumer_byte_rate": 2},
        Entity(user="svc-b"): {"request_rate": 1},
    }
    want = {Entity(user="svc-a"): {"producer_byte_rate": 5}, Entity(user="svc-c"): {"request_rate": 1}}
    plan = make_plan(load_text(manifest_of(want, ["users/svc-*"])), recs(live), prune=True)
    assert [d.entity.user for d in plan.diffs] == ["svc-c", "svc-a", "svc-b"]
    [_, mixed, _] = plan.changes()
    assert mixed.set == {"producer_byte_rate": 5} and mixed.remove == frozenset({"consumer_byte_rate"})


def test_precedence_levels_follow_the_broker() -> None:
    assert [
        precedence(e)
        for e in (
            Entity(user="u", client_id="c"),
            Entity(user="u", client_id=D),
            Entity(user="u"),
            Entity(user=D, client_id="c"),
            Entity(user=D, client_id=D),
            Entity(user=D),
            Entity(client_id="c"),
            Entity(client_id=D),
            Entity(ip="1.2.3.4"),
            Entity(ip=D),
        )
    ] == list(range(1, 11))


def test_the_deletion_guard_counts_entities_that_lose_quotas() -> None:
    live = {Entity(user=f"svc-{i}"): {"producer_byte_rate": 1, "request_rate": 2} for i in range(3)}
    plan = make_plan(
        load_text(manifest_of({Entity(user="svc-0"): {"producer_byte_rate": 1}}, ["users/svc-*"])),
        recs(live),
        prune=True,
    )
    assert plan.deletions == 3
    check_deletions(plan, 3)
    with pytest.raises(TooManyDeletions, match="removes quotas from 3 entities, more than the limit of 2") as e:
        check_deletions(plan, 2)
    assert (e.value.deletions, e.value.limit) == (3, 2)
    assert worded(e.value) == (
        "the plan removes quotas from 3 entities, more than --max-deletions 2; "
        "check the prune scope, or raise --max-deletions if this is intended"
    )


def test_fingerprints_see_every_value_and_ignore_order() -> None:
    a = {Entity(user="a"): {"producer_byte_rate": 1}, Entity(user=D): {"request_percentage": 2.0}}
    assert fingerprint(recs(a)) == fingerprint(list(reversed(recs(a))))
    assert fingerprint(recs(a)) != fingerprint(recs({**a, Entity(user="a"): {"producer_byte_rate": 2}}))
    assert fingerprint(recs(a)) != fingerprint(
        recs({Entity(user="<default>"): {"producer_byte_rate": 1}, Entity(user=D): {"request_percentage": 2.0}})
    )
    assert fingerprint([]) != fingerprint(recs(a))


def test_saved_plans_round_trip_and_edited_plans_are_validated_again() -> None:
    live = {Entity(user="svc-x"): {"request_rate": 3}}
    plan = make_plan(load_text(EXAMPLE), recs(live), prune=True)
    data = json.loads(json.dumps(plan.to_json({"backend": "zookeeper", "cluster": "zk:2181"})))
    again = Plan.from_json(data)
    assert again.fingerprint == plan.fingerprint and again.prune
    assert [d.change() for d in again.diffs] == plan.changes()
    assert [d.meta for d in again.diffs] == [d.meta for d in plan.diffs]
    noop = json.loads(json.dumps(data))
    noop["changes"][0]["after"] = noop["changes"][0]["before"]
    assert len(Plan.from_json(noop).diffs) == len(plan.diffs) - 1  # an edited no-op entry is dropped
    data["changes"][0]["after"] = {"request_percentage": -1}
    with pytest.raises(UsageError, match="greater than 0"):
        Plan.from_json(data, "p.json")
    with pytest.raises(UsageError, match="not a kquotactl plan"):
        Plan.from_json({"quotas": []}, "p.json")


# -- lint -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shadow", "entity", "dead"),
    [
        (Entity(user=D), Entity(client_id="c"), True),  # the classic: a default user quota hides client-id quotas
        (Entity(user=D), Entity(client_id=D), True),
        (Entity(user=D, client_id=D), Entity(user=D), False),  # an empty client-id still resolves at users/<default>
        (Entity(user=D, client_id="c"), Entity(client_id="c"), False),  # an empty user name still reaches clients/c
        (Entity(user="u", client_id=D), Entity(user="u"), False),  # u with an empty client-id uses users/u
        (Entity(user=D, client_id="c"), Entity(user=D), False),  # only client c's connections are covered
        (Entity(user="u"), Entity(client_id="c"), False),  # only user u's connections
        (Entity(user="u"), Entity(user=D), False),
        (Entity(user="u", client_id="c"), Entity(user="u"), False),
        (Entity(user="u", client_id=D), Entity(user="v"), False),
        (Entity(user=D), Entity(user="u"), False),  # more general never shadows more specific
        (Entity(ip="1.2.3.4"), Entity(ip=D), False),
    ],
)
def test_shadowing_follows_the_eight_levels(shadow: Entity, entity: Entity, dead: bool) -> None:
    quotas = (
        {shadow: {"producer_byte_rate": 1}, entity: {"producer_byte_rate": 2}}
        if shadow.ip is None
        else {shadow: {"connection_creation_rate": 1}, entity: {"connection_creation_rate": 2}}
    )
    key = "connection_creation_rate" if entity.ip is not None else "producer_byte_rate"
    assert (shadowing_entity(entity, key, quotas) == shadow) is dead
    assert shadowing_entity(entity, "consumer_byte_rate", quotas) is None  # per key


def test_lint_names_the_shadowed_keys_and_the_entry_that_hides_them() -> None:
    m = load_text(
        "quotas:\n"
        "- {entity: {user: '<default>'}, config: {consumer_byte_rate: 1}}\n"
        "- {entity: {client-id: app}, config: {consumer_byte_rate: 2, producer_byte_rate: 3}}\n"
        "- {entity: {user: bob}, config: {consumer_byte_rate: 4}}\n",
        "m.yaml",
    )
    warnings = [str(w) for w in lint(m)]
    assert warnings == [
        "m.yaml:3: warning: clients/app consumer_byte_rate never applies: every connection it could match resolves "
        "consumer_byte_rate at users/<default> (m.yaml:2) first"
    ]


# -- export round trip (property) ---------------------------------------------------------------------------------

names = st.one_of(
    st.sampled_from(
        [
            "<default>",
            "yes",
            "no",
            "null",
            "~",
            "007",
            "1.5",
            "1e3",
            "a: b",
            "- x",
            "#c",
            "'q'",
            '"d"',
            "CN=a,O=b c",
            "ünï",
            " lead",
            "tab\there",
            "*",
            "&anchor",
            "{x}",
            "[y]",
            "%",
        ]
    ),
    st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=12),
)
users = st.one_of(st.just(D), names)
entities = st.one_of(
    st.builds(lambda u: Entity.of(user=u), users),
    st.builds(lambda c: Entity.of(client_id=c), users),
    st.builds(lambda u, c: Entity.of(user=u, client_id=c), users, users),
    st.sampled_from([Entity(ip=D), Entity(ip="10.0.0.1"), Entity(ip="2001:db8::1")]),
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(entities, st.integers(1, 2**63 - 1), min_size=1, max_size=8), st.floats(0.001, 1e12))
def test_export_then_load_is_lossless_for_any_names(state: dict[Entity, int], pct: float) -> None:
    quotas = {
        e: (
            {"connection_creation_rate": min(v, 2**31 - 1)}
            if e.ip is not None
            else {"producer_byte_rate": v, "request_percentage": pct}
        )
        for e, v in state.items()
    }
    text = dump_manifest_yaml(export_document(recs(quotas)))
    assert load_text(text).config_map() == quotas
    assert load_text(json.dumps(export_document(recs(quotas)))).config_map() == quotas


def test_anchors_aliases_and_several_documents_in_one_file() -> None:
    text = (
        "quotas:\n- entity: {user: a}\n  config: &c {producer_byte_rate: 1}\n- entity: {user: b}\n  config: *c\n"
        "---\nprune: [users/*]\nquotas:\n- {entity: {user: d}, config: {request_rate: 2}}\n"
    )
    m = load_text(text, "m.yaml")
    assert m.config_map() == {
        Entity(user="a"): {"producer_byte_rate": 1},
        Entity(user="b"): {"producer_byte_rate": 1},
        Entity(user="d"): {"request_rate": 2},
    }
    assert [r.pattern for r in m.prune] == ["users/*"] and m.get(Entity(user="d")).source == Source("m.yaml", 9)
    assert problems("quotas:\n- entity: {user: a}\n  config: *nope\n") == [
        "m.yaml:3: invalid YAML: an alias '*NAME' that refers to no anchor '&NAME' (quote a value starting with '*')"
    ]


# -- nesting guard: ours, before the YAML library's own limit (whose wording changes between releases) ----------


@pytest.mark.parametrize(
    "text, line",
    [
        ("quotas: " + "[" * 100_000 + "]" * 100_000 + "\n", 1),  # far past libyaml's own limit (1,000 levels)
        ("quotas: " + "[" * 1_001 + "]" * 1_001 + "\n", 1),
        ("quotas: " + "{a: " * 5000 + "1" + "}" * 5000 + "\n", 1),
        ("quotas:\n" + "  [\n" * 40 + "  ]\n" * 40, 34),  # one bracket per line: the 33rd level is on line 34
        ("quotas: [" + "'x', [" * 40 + "]" * 41 + "\n", 1),  # quoted scalars between the levels
        ("quotas: [" + "o'b, [" * 40 + "]" * 41 + "\n", 1),  # an apostrophe inside a plain scalar quotes nothing
    ],
)
def test_deep_flow_nesting_is_refused_with_our_message_and_line(text, line):
    with pytest.raises(ManifestError) as e:
        load_text(text, "deep.yaml")
    assert f"deep.yaml:{line}: invalid YAML: nested deeper than 32 levels" in str(e.value)


@pytest.mark.parametrize(
    "text",
    [
        "quotas: []\nnote: '" + "[" * 50 + "'\n",  # brackets in a single-quoted scalar
        'quotas: []\nnote: "' + "{" * 50 + '\\"[["\n',  # ...in a double-quoted one, with an escaped quote
        "quotas: []  # " + "[" * 50 + "\n",  # ...in a comment
        "quotas: []\nnote: a" + "[" * 50 + "\n",  # ...inside a block plain scalar
        "quotas: []\nnote: a#" + "[" * 50 + "\n",  # '#' without a blank before it starts no comment
        "quotas: []\nnotes:\n" + "".join('- [a, \'b]]]\', "c\\"[["]  # [[[[\n' for _ in range(40)),
    ],
)
def test_brackets_that_open_nothing_do_not_count_as_nesting(text):
    import yaml

    from kquotactl.manifests.loader import _check_flow_nesting

    assert yaml.safe_load(text)["quotas"] == []  # valid YAML, however many brackets it shows
    _check_flow_nesting(text)  # raises on a false positive


# -- the composer against PyYAML's own (the oracle for tags, values and lines) -------------------------------------

_SCALARS = [
    "0", "7", "42", "1048576", "007", "089", "0_1", "1_000", "0x1F", "0b101", "0o17", "1:30", "190:20:30", "-1",
    "+5", "1e5", "1.5", "1.5e+3", ".5", ".inf", "-.Inf", ".NaN", "~", "null", "Null", "", "yes", "No", "on", "OFF",
    "true", "y", "n", "svc-1", "alice", "<default>", "10.0.0.1", "2001:db8::1", "=", "<<", "2026-11-27",
    "2001-12-14t21:59:43.10-05:00", "\u0663", "\u00b2", "1\u0663", "7\u00b2",
    "\uff11\uff12", "12a", "1 2", "a b", "-", "+", "0.", "._",
]  # fmt: skip


def _yaml_scalar(rng: random.Random) -> str:
    text = rng.choice(_SCALARS)
    style = rng.random()
    if style < 0.2:
        return "'" + text.replace("'", "''") + "'"
    if style < 0.3:
        return json.dumps(text)
    return text  # plain: some are no valid YAML where they stand, which both composers must refuse alike


def _yaml_doc(rng: random.Random, depth: int = 0) -> str:
    """A random flow-style YAML value: scalars of every resolution, nested mappings and lists."""
    r = rng.random()
    if depth > 3 or r < 0.5:
        return _yaml_scalar(rng)
    if r < 0.75:
        return "[" + ", ".join(_yaml_doc(rng, depth + 1) for _ in range(rng.randrange(4))) + "]"
    keys = {rng.choice(["user", "config", "a", "b", "quotas", "7", "x y"]) for _ in range(rng.randrange(4))}
    return "{" + ", ".join(f"{json.dumps(k)}: {_yaml_doc(rng, depth + 1)}" for k in sorted(keys)) + "}"


def _same_tree(ours, theirs, where: str) -> None:
    import yaml

    from kquotactl.manifests.loader import _Mapping, _Scalar, _Sequence

    kinds = {_Scalar: yaml.ScalarNode, _Sequence: yaml.SequenceNode, _Mapping: yaml.MappingNode}
    assert kinds[type(ours)] is type(theirs), where
    assert (ours.tag, ours.line) == (theirs.tag, theirs.start_mark.line), where
    if isinstance(ours, _Scalar):
        assert ours.value == theirs.value, where
    elif isinstance(ours, _Sequence):
        assert len(ours.value) == len(theirs.value), where
        for a, b in zip(ours.value, theirs.value, strict=True):
            _same_tree(a, b, where)
    else:
        assert len(ours.value) == len(theirs.value), where
        for (ka, va), (kb, vb) in zip(ours.value, theirs.value, strict=True):
            _same_tree(ka, kb, where)
            _same_tree(va, vb, where)


def test_composer_gives_pyyamls_tags_values_and_lines_on_random_documents() -> None:
    """The composer's shortcuts (plain names and decimal ints resolved without the resolver) and its inline
    scalars agree with ``yaml.compose_all`` on every node, for random documents over tricky scalars."""
    import yaml

    from kquotactl.manifests.loader import _compose_all

    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    for i in range(300):
        lines = [f"k{j}: {_yaml_doc(rng)}" for j in range(rng.randrange(1, 6))]
        lines += [f"- {_yaml_scalar(rng)}" for _ in range(rng.randrange(3))] if rng.random() < 0.2 else []
        text = "\n".join(lines) + "\n"
        try:
            theirs = list(yaml.compose_all(text, Loader=yaml.CSafeLoader))
        except yaml.YAMLError:
            with pytest.raises(yaml.YAMLError):
                list(_compose_all(text))
            continue
        ours = list(_compose_all(text))
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs, strict=True):
            _same_tree(a, b, f"seed {seed}, case {i}:\n{text}")


@pytest.mark.parametrize("text", _SCALARS)
def test_composer_resolves_each_scalar_as_pyyaml_does(text: str) -> None:
    import yaml

    from kquotactl.manifests.loader import _compose_all

    for written in (text, json.dumps(text), "'" + text.replace("'", "''") + "'"):
        doc = f"k: {written}\n"
        try:
            theirs = yaml.compose(doc, Loader=yaml.CSafeLoader)
        except yaml.YAMLError:
            continue
        [ours] = list(_compose_all(doc))
        _same_tree(ours, theirs, doc)


def test_a_kept_unparsable_value_is_data_and_the_cli_adds_the_command() -> None:
    """The core marks the note on a stored value brokers cannot parse that the plan keeps (``Plan.kept``) and names
    no command; the CLI adds the one that removes it, and nothing to a value the manifest rewrites."""
    from kquotactl.cli.errorwords import KEEP_HINT
    from kquotactl.cli.manifestargs import hinted

    live = [
        QuotaRecord(Entity(user="a"), {}, unparsed={"producer_byte_rate": " 7"}),
        QuotaRecord(Entity(user="b"), {}, unparsed={"producer_byte_rate": "1024.0"}),
    ]
    plan = make_plan(load_text(manifest_of({Entity(user="b"): {"producer_byte_rate": 10}})), live)
    kept = (
        "users/a: producer_byte_rate is stored as ' 7', which brokers cannot parse; "
        "the manifest does not set it, so it stays"
    )
    assert kept in plan.notes and plan.kept == {kept}
    assert not any("--" in n for n in plan.notes)
    rewritten = next(n for n in plan.notes if n.startswith("users/b"))
    assert [hinted(n, plan.kept) for n in (kept, rewritten)] == [kept + KEEP_HINT, rewritten]
    assert KEEP_HINT == " (remove it with alter --delete-config)"
