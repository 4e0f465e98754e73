"""Property-based tests (hypothesis) for the sanitizer, the --add-config grammar and value parsing."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from kquotactl.core.entities import Entity
from kquotactl.core.grammar import parse_add_config
from kquotactl.core.keys import KEYS, parse_value
from kquotactl.core.sanitizer import desanitize, sanitize

text = st.text(st.characters(exclude_categories=("Cs",)), max_size=60)


@given(text)
def test_sanitize_round_trips_and_only_emits_safe_characters(name: str) -> None:
    s = sanitize(name)
    assert re.fullmatch(r"[A-Za-z0-9._%-]*", s)
    assert "/" not in s
    assert desanitize(s) == name


@given(text)
def test_sanitized_names_never_collide_with_the_default_marker(name: str) -> None:
    assert sanitize(name) != "<default>"


@given(text.filter(lambda s: s != ""), text.filter(lambda s: s != ""))
def test_entity_path_round_trips(user: str, client: str) -> None:
    e = Entity(user=user, client_id=client)
    assert e.path.count("/") == 3  # a name can never add path segments
    assert Entity.from_path(e.path) == e


key_st = st.from_regex(r"[a-zA-Z0-9._-]{1,20}", fullmatch=True)
plain_value = st.from_regex(r"[a-zA-Z0-9._-]{0,12}", fullmatch=True)
list_value = st.lists(st.from_regex(r"[a-zA-Z0-9._-]{1,6}", fullmatch=True), min_size=1, max_size=4)


@settings(max_examples=300)
@given(st.dictionaries(key_st, st.one_of(plain_value, list_value), min_size=1, max_size=6))
def test_add_config_grammar_round_trips_plain_and_bracketed_values(config: dict) -> None:
    parts = []
    for k, v in config.items():
        parts.append(f"{k}=[{','.join(v)}]" if isinstance(v, list) else f"{k}={v}")
    parsed = parse_add_config(",".join(parts))
    expected = {k: ",".join(v) if isinstance(v, list) else v for k, v in config.items()}
    assert parsed == expected


@given(st.text(max_size=40))
def test_add_config_grammar_never_crashes(s: str) -> None:
    from kquotactl.core.errors import UsageError

    try:
        parse_add_config(s)
    except UsageError as e:
        assert "\n" not in str(e)


@given(st.integers(min_value=1, max_value=2**63 - 1))
def test_long_values_round_trip_exactly(n: int) -> None:
    assert parse_value(KEYS["producer_byte_rate"], str(n)) == n


@given(st.text(max_size=30))
def test_value_parsing_accepts_or_rejects_cleanly(s: str) -> None:
    from kquotactl.core.errors import InvalidValue

    for key in KEYS.values():
        try:
            v = parse_value(key, s)
        except InvalidValue as e:
            assert key.name in str(e) and "\n" not in str(e)
        else:
            assert v > 0
