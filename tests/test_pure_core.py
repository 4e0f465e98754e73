"""Pure core: sanitizer, grammar, key validation (no I/O)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kquotactl.cli.entityargs import ENTITY_DEFAULT
from kquotactl.core.entities import Entity
from kquotactl.core.errors import InvalidValue, UsageError
from kquotactl.core.grammar import parse_add_config
from kquotactl.core.keys import KEYS, parse_value
from kquotactl.core.sanitizer import desanitize, sanitize

SANITIZER_VECTORS = [
    ("CN=user1", "CN%3Duser1"),
    ("user with spaces", "user%20with%20spaces"),
    ("a*b", "a%2Ab"),
    ("a+b", "a%2Bb"),
    ("<default>", "%3Cdefault%3E"),
    ("client1?@%", "client1%3F%40%25"),
    ("O=A client,CN=localhost", "O%3DA%20client%2CCN%3Dlocalhost"),
    ("QuotasTestConsumer-!@#$%^&*()", "QuotasTestConsumer-%21%40%23%24%25%5E%26%2A%28%29"),
    ("ünïcødé", "%C3%BCn%C3%AFc%C3%B8d%C3%A9"),
    ("a.b_c-d~e", "a.b_c-d%7Ee"),
    ("x/y", "x%2Fy"),
    ("1.2.3.4", "1.2.3.4"),
    ("::1", "%3A%3A1"),
    ("%2A", "%252A"),
]


@pytest.mark.parametrize(("name", "expected"), SANITIZER_VECTORS)
def test_sanitize_matches_kafka_vectors(name: str, expected: str) -> None:
    assert sanitize(name) == expected
    assert desanitize(expected) == name


def test_desanitize_rejects_malformed_escapes() -> None:
    with pytest.raises(ValueError, match="Incomplete trailing escape"):
        desanitize("100%")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a=b,c=d", {"a": "b", "c": "d"}),
        ("a=b,c=,d=e,f=", {"a": "b", "c": "", "d": "e", "f": ""}),
        ("a=b,c=[d,e ,f],g=[h,i]", {"a": "b", "c": "d,e ,f", "g": "h,i"}),
        ("a=b,", {"a": "b"}),
        ("a=b,,", {"a": "b"}),
        (" a = b , c = d ", {"a": "b", "c": "d"}),
        ("k=[v1,v2],k2=v3]", {"k": "v1,v2,k2=v3"}),
        ("=v", {"": "v"}),
        ("k=[a=b]", {"k": "a=b"}),
        ("k= [ 1 ] ", {"k": "1"}),
    ],
)
def test_add_config_grammar_vectors(text: str, expected: dict[str, str]) -> None:
    assert parse_add_config(text) == expected


def test_add_config_refuses_a_key_given_twice_where_kafka_keeps_the_last() -> None:
    with pytest.raises(UsageError, match="k given twice"):
        parse_add_config("k=1,k=2")


@pytest.mark.parametrize(
    "text", ["a==", "a=[b,c,d=e", ",a=b", "a=b,,c=d", "k=a]b", "k=]x[", "k", "", "k=v=w", "a=b, ,c=d"]
)
def test_add_config_grammar_errors(text: str) -> None:
    with pytest.raises(UsageError, match="key=val"):
        parse_add_config(text)


@pytest.mark.parametrize(
    ("key", "text", "value"),
    [
        ("producer_byte_rate", "1024", 1024),
        ("producer_byte_rate", "1e6", 1_000_000),
        ("producer_byte_rate", " 1024 ", 1024),
        ("producer_byte_rate", "1024.0", 1024),
        ("producer_byte_rate", "10MiB", 10 * 1024 * 1024),
        ("consumer_byte_rate", "5MB", 5_000_000),
        ("request_percentage", "12.5", 12.5),
        ("request_percentage", "200", 200.0),
        ("controller_mutation_rate", "0.5", 0.5),
        ("connection_creation_rate", "20", 20),
        ("request_rate", "100", 100),
        ("producer_byte_rate", str(2**63 - 1), 2**63 - 1),
        ("connection_creation_rate", str(2**31 - 1), 2**31 - 1),
    ],
)
def test_values_accepted(key: str, text: str, value: float) -> None:
    parsed = parse_value(KEYS[key], text)
    assert parsed == value
    assert type(parsed) is type(value)


@pytest.mark.parametrize(
    ("key", "text", "why"),
    [
        ("producer_byte_rate", "abc", "not a number"),
        ("producer_byte_rate", "NaN", "NaN and Infinity"),
        ("request_percentage", "Infinity", "NaN and Infinity"),
        ("producer_byte_rate", "0", "greater than 0"),
        ("producer_byte_rate", "-5", "greater than 0"),
        ("request_percentage", "0.0", "greater than 0"),
        ("producer_byte_rate", "10.5", "whole number"),
        ("connection_creation_rate", "2.5", "whole number"),
        ("producer_byte_rate", str(2**63), "too large for LONG"),
        ("connection_creation_rate", str(2**31), "too large for INT"),
        ("request_percentage", "1e400", "too large for DOUBLE"),
        ("producer_byte_rate", "", "empty"),
        ("producer_byte_rate", "1_000", "not a number"),
        ("producer_byte_rate", "0x10", "not a number"),
        ("request_percentage", "10MiB", "unit"),
        ("producer_byte_rate", "10XB", "unknown unit"),
    ],
)
def test_values_rejected_with_the_key_and_value_named(key: str, text: str, why: str) -> None:
    with pytest.raises(InvalidValue) as e:
        parse_value(KEYS[key], text)
    assert why in str(e.value)
    assert key in str(e.value)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize(
    ("args", "line"),
    [
        # kafka-configs names the first type of its command line: flags before defaults, client before user
        ({"user": "alice", "client_defaults": True}, "Completed updating config for user alice."),
        ({"user": "alice", "client": "app"}, "Completed updating config for client app."),
        ({"user_defaults": True, "client": "app"}, "Completed updating config for client app."),
        (
            {"user_defaults": True, "client_defaults": True},
            "Completed updating default config for clients in the cluster.",
        ),
        ({"ip": "192.0.2.1"}, "Completed updating config for ip 192.0.2.1."),
        (
            {"entity_types": ["users", "clients"], "entity_names": ["u", ENTITY_DEFAULT]},
            "Completed updating config for user u.",
        ),
        (
            {"entity_types": ["clients", "users"], "entity_names": [ENTITY_DEFAULT, "u"]},
            "Completed updating default config for clients in the cluster.",
        ),
    ],
)
def test_bootstrap_alter_line_names_kafka_configs_head_entity(args: dict, line: str) -> None:
    from kquotactl.cli.entityargs import EntityArgs, alter_head, entity_for_alter
    from kquotactl.core.changes import EntityResult, Outcome
    from kquotactl.render.records import kafka_alter_line

    a = EntityArgs(**args)
    result = EntityResult(entity_for_alter(a), Outcome.APPLIED)
    assert kafka_alter_line(result, "bootstrap", alter_head(a)) == line


def test_table_prints_names_that_look_like_rich_markup_as_they_are() -> None:
    import io

    from kquotactl.core.changes import QuotaRecord
    from kquotactl.core.entities import Entity, EntityType
    from kquotactl.render.records import records_table

    out = io.StringIO()
    name = "[/x] [bold]y[/bold]"
    records_table(
        [QuotaRecord(Entity.from_components({EntityType.USER: name}), {"producer_byte_rate": 1024})], out, False
    )
    assert name in out.getvalue()


def test_a_batch_names_each_entity_once() -> None:
    from kquotactl.core.changes import EntityChange, check_one_change_per_entity
    from kquotactl.core.entities import Entity

    check_one_change_per_entity(
        [EntityChange(Entity(user="a"), {"producer_byte_rate": 1}), EntityChange(Entity(user="b"))]
    )
    with pytest.raises(UsageError, match="appears twice"):
        check_one_change_per_entity([EntityChange(Entity(user="a")), EntityChange(Entity(user="a"))])


@pytest.mark.parametrize(
    "names",
    [
        ["alice", "bob"],
        ["a" * 150, "b"],  # too wide: one block per entity either way
        ["日本語ユーザー", "🚀rocket", "e\u0301clair", "tab\there", "line\nbreak", "<default>", "[/x]"],
        [f"user-{i}" for i in range(50)],
    ],
)
@pytest.mark.parametrize("color", [False, True])
def test_table_layout_is_rich_own_with_widths_fixed_ahead(monkeypatch, names, color) -> None:
    """Fixing the column widths ahead (fast path for big tables) must not change a single character."""
    import io

    import kquotactl.render.records as render
    from kquotactl.core.changes import QuotaRecord
    from kquotactl.core.entities import Entity

    records = [
        QuotaRecord(
            Entity(user=n, client_id=(f"c-{n}" if i % 2 else None)),
            {"producer_byte_rate": 1024 * (i + 1), "request_percentage": 12.5} if i % 3 else {"consumer_byte_rate": 7},
        )
        for i, n in enumerate(names)
    ]
    fast = io.StringIO()
    render.records_table(records, fast, color)
    monkeypatch.setattr(render, "_fix_widths", lambda *a: None)  # rich measures every cell itself
    plain = io.StringIO()
    render.records_table(records, plain, color)
    assert fast.getvalue() == plain.getvalue()


_ascii_names = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1, max_size=40)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(st.none(), _ascii_names),
            st.one_of(st.none(), _ascii_names),
            st.dictionaries(
                st.sampled_from(["producer_byte_rate", "consumer_byte_rate", "request_percentage"]),
                st.integers(1, 10**12),
                min_size=1,
            ),
        ),
        max_size=6,
    ),
    st.booleans(),
)
def test_piped_table_is_written_without_rich_and_reads_exactly_as_rich_lays_it_out(cases, unparsed) -> None:
    """Without colour, a plain-ASCII table that fits is written by ``plain_table`` (rich's console is not loaded):
    character for character what rich writes, trailing spaces, names such as ":smile:" or "[/x]" included."""
    import io

    import kquotactl.render.records as render
    from kquotactl.core.changes import QuotaRecord

    records = [
        QuotaRecord(
            Entity(user=u if u or c else "u", client_id=c),
            config,
            unparsed={"request_percentage": "NaN"} if unparsed and i == 0 else {},
        )
        for i, (u, c, config) in enumerate(cases)
    ]
    direct = io.StringIO()
    render.records_table(records, direct, False)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(render, "plain_table", lambda *a: None)  # rich lays it out
        laid_out = io.StringIO()
        render.records_table(records, laid_out, False)
    assert direct.getvalue() == laid_out.getvalue()
    assert len(direct.getvalue().splitlines()) == (len(records) + 1 if records else 1)


@pytest.mark.parametrize("color", [False, True])
def test_names_in_a_table_are_data_not_emoji_codes(color: bool) -> None:
    import io

    from kquotactl.core.changes import QuotaRecord
    from kquotactl.render.records import records_table

    out = io.StringIO()
    records_table([QuotaRecord(Entity(user=":smile: \u00e9"), {"producer_byte_rate": 1024})], out, color)  # é: rich
    assert ":smile: \u00e9" in out.getvalue()


def test_piped_table_falls_back_to_rich_for_what_plain_text_cannot_lay_out() -> None:
    from kquotactl.render.records import PIPE_WIDTH, plain_table

    assert plain_table(["USER", "k"], [False, True], [["alice", "10"]], PIPE_WIDTH) == ["USER    k", "alice  10"]
    assert plain_table(["USER"], [False], [["日本"]], PIPE_WIDTH) is None  # wide characters: rich measures
    assert plain_table(["USER"], [False], [["tab\there"]], PIPE_WIDTH) is None
    assert plain_table(["USER"], [False], [["a" * 201]], PIPE_WIDTH) is None  # too wide: rich's blocks


# -- stored state as brokers read it ------------------------------------------------------------------------------


def test_ip_names_written_canonical_as_brokers_read_them() -> None:
    from kquotactl.core.entities import canonical_ip

    assert canonical_ip("2001:DB8:0::1") == "2001:db8::1"
    assert canonical_ip("::ffff:1.2.3.4") == "1.2.3.4"  # InetAddress reads an IPv4-mapped address as IPv4
    assert canonical_ip("1.2.3") == "1.2.0.3" and canonical_ip("16909060") == "1.2.3.4"
    for bad in ("kafka-1", "%3A%3A1", "0x7f.1", "fe80::1%eth0", " 1.2.3.4", "[1.2.3.4]"):
        with pytest.raises(InvalidValue, match="must be a valid IP address"):
            canonical_ip(bad)


def test_ip_changes_go_to_every_stored_spelling_of_the_address() -> None:
    from kquotactl.core.changes import EntityChange
    from kquotactl.core.values import route_ip_changes

    ch = EntityChange(Entity.of(ip="2001:db8::1"), {"connection_creation_rate": 5})
    other = EntityChange(Entity.of(user="u"), {"producer_byte_rate": 1})
    routed = route_ip_changes([ch, other], ["2001:DB8:0::1", "10.0.0.1"])
    assert [c.entity for c in routed] == [Entity(ip="2001:DB8:0::1"), other.entity]
    assert route_ip_changes([ch], ["10.0.0.1"]) == [ch]  # nothing stored: written as given (canonical)
    both = route_ip_changes([ch], ["2001:db8::1", "2001:DB8::1"])
    assert sorted(str(c.entity.ip) for c in both) == ["2001:DB8::1", "2001:db8::1"]
    # a plan addresses each stored spelling itself: no change is duplicated
    per_spelling = [EntityChange(Entity(ip=n), {"connection_creation_rate": 5}) for n in ("2001:db8::1", "2001:DB8::1")]
    assert route_ip_changes(per_spelling, ["2001:db8::1", "2001:DB8::1"]) == per_spelling


def test_stored_findings_name_what_brokers_make_of_the_stored_state() -> None:
    from kquotactl.core.changes import QuotaRecord
    from kquotactl.core.values import stored_findings

    records = [
        QuotaRecord(Entity(ip="10.0.0.1"), {"connection_creation_rate": 5}),
        QuotaRecord(Entity(ip="::ffff:10.0.0.1"), {"connection_creation_rate": 6}),
        QuotaRecord(Entity(ip="kafka-1"), {"connection_creation_rate": 7}),
        QuotaRecord(Entity(user="u"), {}, unparsed={"producer_byte_rate": "1024.0"}),
    ]
    found = {f.code: f.message for f in stored_findings(records)}
    assert found["ip-duplicate"].startswith("2 stored names are the address 10.0.0.1: ips/10.0.0.1 (connection_cre")
    assert "applied last" in found["ip-duplicate"]
    assert found["ip-not-address"] == "ips/kafka-1: not an address literal: depends on the broker's resolver"
    assert found["unparsable-value"].startswith("users/u: producer_byte_rate is stored as '1024.0', which brokers")


def test_an_empty_ip_name_is_not_the_loopback_address() -> None:
    from kquotactl.core.entities import canonical_ip

    with pytest.raises(InvalidValue, match="empty"):
        canonical_ip("")  # InetAddress.getByName("") is the loopback address: never what an entity name means


def test_a_double_for_a_long_key_is_narrowed_as_java_narrows_it() -> None:
    """What a broker stores for a LONG value sent as a double: ``(v + 1e-6).toLong`` saturates at Long.MAX_VALUE
    (found by tests/test_oracle_write.py with seed 2235357277: 2**63 - 3 sent as a double)."""
    from kquotactl.core.keys import KEYS, format_value

    key = KEYS["producer_byte_rate"]
    assert format_value(key, float(2**63 - 3)) == str(2**63 - 1)
    assert format_value(key, 2**63 - 3) == str(2**63 - 3)  # an int is written as given (the ZooKeeper path)
    assert format_value(key, float("nan")) == "0"
    assert format_value(key, -1e300) == str(-(2**63))
    assert format_value(key, 1048576.0) == "1048576"


def test_check_number_of_an_int_agrees_with_the_decimal_path_at_every_edge() -> None:
    """check_number's shortcut for in-range ints gives what the Decimal path gives; out of range, the same error."""
    import random
    from decimal import Decimal

    from kquotactl.core.keys import INT_MAX, LONG_MAX, _check_decimal, check_number

    seed = random.randrange(2**32)
    rng = random.Random(seed)
    edges = [0, 1, -1, 2, INT_MAX, INT_MAX + 1, LONG_MAX, LONG_MAX + 1, -LONG_MAX, 10**30]
    values = (
        edges + [rng.randrange(-(2**64), 2**64) for _ in range(200)] + [rng.randrange(1, 10**7) for _ in range(200)]
    )
    for key in KEYS.values():
        for v in values:
            try:
                want: object = _check_decimal(key, Decimal(v), str(v))
            except InvalidValue as e:
                want = ("error", str(e))
            try:
                got: object = check_number(key, v)
            except InvalidValue as e:
                got = ("error", str(e))
            assert got == want and type(got) is type(want), f"{key.name} {v} (seed {seed})"


@pytest.mark.parametrize("which", ["replay", "replay_token_bucket"])
def test_replays_refuse_events_that_go_back_in_time(which: str) -> None:
    from kquotactl.core import rate

    replay = getattr(rate, which)
    assert len(replay([(0, 1.0), (5, 1.0), (5, 1.0)], 10.0)) == 3  # equal times are fine
    with pytest.raises(ValueError, match="event at 4 ms goes back in time \\(previous event at 5 ms\\)"):
        replay([(0, 1.0), (5, 1.0), (4, 1.0)], 10.0)
