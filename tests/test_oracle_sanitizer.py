"""Differential: kquotactl's sanitizer against Kafka's ``org.apache.kafka.common.utils.Sanitizer`` (every version)."""

from __future__ import annotations

import random

import pytest

from fixtures_oracle import ORACLE_VERSIONS
from kquotactl.sanitizer import desanitize, sanitize
from kquotactl.testing.oracle import cases_per_run, mismatches

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
            parts.append(rng.choice(["%", "%4", "+", "%%", "%C3", "%E2%82", "%F0%9F%98", "%80", "%FF"]))
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


@pytest.mark.parametrize("version", ORACLE_VERSIONS)
def test_sanitize_matches_kafka(kafka_oracle, oracle_seed, version):
    rng = random.Random(oracle_seed)
    names = [_name(rng) for _ in range(cases_per_run())]
    kafka = kafka_oracle(version, "SanitizerOracle").ask_many([{"op": "sanitize", "s": n} for n in names])
    bad = list(mismatches(names, (_ours(sanitize, n) for n in names), map(_kafka, kafka)))
    assert not bad, f"seed {oracle_seed} (KQUOTACTL_ORACLE_SEED={oracle_seed}), Kafka {version}: {bad}"


@pytest.mark.parametrize("version", ORACLE_VERSIONS)
def test_desanitize_matches_kafka(kafka_oracle, oracle_seed, version):
    rng = random.Random(oracle_seed)
    texts = [_escaped(rng) for _ in range(cases_per_run())]
    kafka = kafka_oracle(version, "SanitizerOracle").ask_many([{"op": "desanitize", "s": t} for t in texts])
    bad = list(mismatches(texts, (_ours(desanitize, t) for t in texts), map(_kafka, kafka)))
    assert not bad, f"seed {oracle_seed} (KQUOTACTL_ORACLE_SEED={oracle_seed}), Kafka {version}: {bad}"
