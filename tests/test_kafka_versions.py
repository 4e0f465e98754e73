"""The one table of what changed between Kafka releases (core.kafkaversions), and --kafka-version's bounds."""

from __future__ import annotations

import pytest

from conftest import run_cli
from kquotactl.core.kafkaversions import CHANGES, NEWEST_KNOWN, behaviour
from kquotactl.core.rate import replay_token_bucket, sampled_stat_for
from kquotactl.testing.versions import NEWEST, RELEASES


def test_the_newest_release_the_harness_runs_is_the_newest_behaviour_known() -> None:
    assert RELEASES[NEWEST].version == NEWEST_KNOWN
    assert behaviour(None).switches == behaviour(NEWEST_KNOWN).switches == {c.name for c in CHANGES}


@pytest.mark.parametrize(
    ("version", "on", "off"),
    [
        ((2, 6), set(), {"mutation_quota", "min_window_1ms", "sample_ring"}),
        ((3, 3, 0), {"mutation_quota", "no_static_defaults", "min_window_1ms"}, {"sample_ring"}),
        ((4, 1, 1), {"sample_ring", "share_fetch_quota"}, {"quota_types_cleared", "mutation_throttle_narrowed_first"}),
        ((4, 2, 0), {"quota_types_cleared", "mutation_throttle_narrowed_first", "share_fetch_quota"}, set()),
    ],
)
def test_each_change_starts_at_its_release(version, on, off) -> None:
    b = behaviour(version)
    assert all(b.has(n) for n in on) and not any(b.has(n) for n in off)
    with pytest.raises(KeyError):
        b.has("no such change")


def test_the_sampled_rate_flags_come_from_the_table() -> None:
    assert sampled_stat_for((3, 2)) == {"legacy": True, "min_window_1ms": False}
    assert sampled_stat_for((3, 7)) == {"legacy": True, "min_window_1ms": True}
    assert sampled_stat_for(None) == {"legacy": False, "min_window_1ms": True}


def test_a_mutation_throttle_past_an_int_wraps_from_4_2_as_the_java_managers_do() -> None:
    """Limit -100 and a hugely negative bucket: Scala's max-then-narrow reads 0, Java's narrow-then-max wraps."""
    events = [(0, 10.0), (100, 5.0)]
    old = replay_token_bucket(events, -100.0, samples=2, window_ms=1000, mode="permissive", kafka_version=(4, 1))
    new = replay_token_bucket(events, -100.0, samples=2, window_ms=1000, mode="permissive", kafka_version=(4, 4))
    assert [s.throttle_ms for s in old] == [0, 0]
    assert all(s.throttle_ms > 2**28 for s in new)


def test_kafka_version_refuses_a_release_newer_than_it_knows() -> None:
    r = run_cli("explain", "--user", "alice", "--kafka-version", "4.5", "--observed", "producer_byte_rate=1MiB")
    assert r.exit_code != 0
    assert "knows Kafka's quota behaviour up to 4.4" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_each_key_arrives_with_a_change_of_the_table() -> None:
    """A key's ``arrived_with`` names a change of the table (or none: every admin-API release knows it), and the
    refusal of a release follows it: refused below the change's release, known from it on."""
    from kquotactl.core.changes import release_refusal
    from kquotactl.core.entities import Entity
    from kquotactl.core.kafkaversions import since
    from kquotactl.core.keys import KEYS, KeyScope

    names = {c.name for c in CHANGES}
    for key, spec in KEYS.items():
        assert spec.arrived_with in names or spec.arrived_with == "", key
        entity = Entity.of(ip="10.0.0.1") if spec.kind is KeyScope.IP else Entity.of(user="u")
        first = since(spec.arrived_with) if spec.arrived_with else (2, 6)
        for release in [(2, 6), (2, 7), (2, 8), (3, 9), NEWEST_KNOWN[:2]]:
            refused = release_refusal(entity, [key], release)  # type: ignore[arg-type]
            assert (refused is not None) == (release < first), (key, release, refused)
    assert release_refusal(Entity.of(ip="10.0.0.1"), [], (2, 7)) == "ip quotas need Kafka 2.8 or later"
    with pytest.raises(KeyError):
        since("no such change")


@pytest.mark.parametrize(
    ("registration", "release"),
    [
        (b'{"version":4,"host":"h","port":1,"jmx_port":-1,"endpoints":[]}', (2, 6)),
        (b'{"version":5,"features":{},"host":"h","port":1}', None),
        (b'{"version":4,"features":{}}', None),  # features: 2.7 or later, whatever the version says
        (b"not json", None),
        (b"[1, 2]", None),
        (b'{"host":"h"}', None),  # no version: nothing told
    ],
)
def test_a_broker_registration_tells_2_6_or_older_only(registration, release) -> None:
    from kquotactl.core.kafkaversions import registration_release

    assert registration_release(registration) == release
