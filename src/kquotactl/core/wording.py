"""Plural wording for what kquotactl prints: pure, so the core (``plan``) and the renderers share one home."""

from __future__ import annotations


def counted(n: int, singular: str, plural: str | None = None) -> str:
    """``1 entity``, ``2 entities``, ``0 warnings``: the one home of plurals in what kquotactl prints."""
    if n == 1:
        return f"{n} {singular}"
    if plural is None:
        plural = singular[:-1] + "ies" if singular.endswith("y") and singular[-2:-1] not in "aeiou" else singular + "s"
    return f"{n} {plural}"
