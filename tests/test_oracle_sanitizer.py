"""Differential: kquotactl's sanitizer against Kafka's ``org.apache.kafka.common.utils.Sanitizer`` (every version)."""

from __future__ import annotations

import random

import pytest

from fixtures_oracle import ORACLE_VERSIONS, assert_no_mismatches, random_cases
from kquotactl.core.sanitizer import desanitize, sanitize

pytestmark = pytest.mark.jvm

# Characters that exercise every branch: the safe set, URLEncoder's specials (* + ~ space), '%', '/', multi-byte.
_ALPHABET = "aZ09._-*+~ %/=,@<>?&#\\\"'é€ü中😀\t\n\x7f"


def _name(rng: random.Random) -> str:
    pick = rng.random()
    if pick < 0.6:
        return "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 12)))
    # any Unicode scalar value (no lone surrogates: neither argv nor a manifest can carry one as text)
    chars = []
    for _ in range(rng.randint(1, 8)):
        cp = rng.choice((rng.randint(0x20, 0x7E), rng.randint(0xA0, 0xD7FF), rng.randint(0xE000, 0x10FFFF)))
        chars.append(chr(cp))
    return "".join(chars)


def _escaped(rng: random.Random) -> str:
    """Strings a sanitized znode name may hold, valid or not: escapes of valid and invalid UTF-8, stray '%' and '+'."""
    parts = []
    for _ in range(rng.randint(0, 8)):
        r = rng.random()
        if r < 0.3:
            parts.append(sanitize(_name(rng)))
        elif r < 0.5:
            parts.append("%" + rng.choice("0123456789ABCDEFabcdefgG") + rng.choice("0123456789ABCDEFabcdef"))
        elif r < 0.6:
            parts.append(rng.choice(["%", "%4", "+", "%%", "%C3", "%E2%82", "%F0%9F%98", "%80", "%FF", "%ED%A0%80"]))
        elif r < 0.65:  # Integer.parseInt's view of the two characters: a sign, Unicode digits, full-width letters
            parts.append("%" + "".join(rng.choice("+-0Fa\u0663\uff21\uff46\u0966x \U0001d7d8") for _ in range(2)))
        else:
            parts.append(rng.choice(["a", "Z", "9", ".", "-", "_", "~", " ", "é"]))
    return "".join(parts)


def _ours(fn, text: str) -> dict[str, str]:
    try:
        return {"out": fn(text)}
    except ValueError:
        return {"error": "IllegalArgumentException"}


def _kafka(answer: dict[str, str]) -> dict[str, str]:
    return {"error": answer["error"]} if "error" in answer else answer


def _assert_matches_kafka(kafka_oracle, seed: int, version: str, op: str, texts: list[str]) -> None:
    fn = sanitize if op == "sanitize" else desanitize
    kafka = kafka_oracle(version, "SanitizerOracle").ask_many([{"op": op, "s": t} for t in texts])
    assert_no_mismatches(texts, (_ours(fn, t) for t in texts), map(_kafka, kafka), seed, version)


@pytest.mark.parametrize("version", ORACLE_VERSIONS)
def test_sanitize_matches_kafka(kafka_oracle, oracle_seed, version):
    _assert_matches_kafka(kafka_oracle, oracle_seed, version, "sanitize", random_cases(oracle_seed, _name))


@pytest.mark.parametrize("version", ORACLE_VERSIONS)
def test_desanitize_matches_kafka(kafka_oracle, oracle_seed, version):
    _assert_matches_kafka(kafka_oracle, oracle_seed, version, "desanitize", random_cases(oracle_seed, _escaped))


def _byte_run(rng: random.Random) -> bytes:
    """Bytes biased to UTF-8's edges: lead bytes of every length, continuations, surrogates, overlongs, > U+10FFFF."""
    pool = [0x41, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF]
    return bytes(rng.choice(pool) if rng.random() < 0.8 else rng.randrange(256) for _ in range(rng.randint(1, 7)))


def _malformed(rng: random.Random) -> str:
    return "".join(f"%{b:02X}" for b in _byte_run(rng)) + rng.choice(["", "a", "+"])


@pytest.mark.parametrize("version", ORACLE_VERSIONS)
def test_malformed_utf8_is_replaced_as_java_replaces_it(kafka_oracle, oracle_seed, version):
    """A name another tool stored with invalid UTF-8 escapes reads back with Java's U+FFFD count, not Python's."""
    texts = random_cases(oracle_seed, _malformed)
    _assert_matches_kafka(kafka_oracle, oracle_seed, version, "desanitize", texts)
