"""The one home for building a :class:`~kquotactl.core.errors.PartialFailure`: which entities of a batch of changes
were applied, which were not, and which were in flight when the cluster stopped answering (or Ctrl-C came).

Both backends (ZooKeeper transactions, admin-API requests) and the apply service build theirs here;
:func:`kquotactl.render.records.partial_report` is the one renderer of it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from kquotactl.core.changes import EntityChange, EntityResult, Outcome
from kquotactl.core.entities import Entity
from kquotactl.core.errors import Interrupted, PartialFailure, QuotaError
from kquotactl.core.wording import counted


def split_outcomes(
    changes: Sequence[EntityChange], results: Mapping[Entity, EntityResult], in_flight: Collection[Entity] = ()
) -> tuple[list[str], list[str], list[str]]:
    """Labels of the entities applied, not applied, and of unknown outcome (``in_flight``: the transaction or
    request whose answer never came), in the order of ``changes``."""
    unknown_set = set(in_flight)
    applied, missing, unknown = [], [], []
    for ch in changes:
        r = results.get(ch.entity)
        if r is not None:
            if r.outcome is Outcome.APPLIED:
                applied.append(ch.entity.label())
        elif ch.entity in unknown_set:
            unknown.append(ch.entity.label())
        else:
            missing.append(ch.entity.label())
    return applied, missing, unknown


def partial_failure(
    error: QuotaError,
    changes: Sequence[EntityChange],
    results: Mapping[Entity, EntityResult],
    in_flight: Collection[Entity] = (),
    *,
    atomic: bool,
    read_back: bool = False,
) -> QuotaError:
    """``error`` as a :class:`PartialFailure` when some entities were applied before it or are of unknown outcome
    (nothing is half-written per entity), else ``error`` itself.

    ``atomic``: the batch in flight is one ZooKeeper transaction (all or none of it was written); otherwise one
    admin request, each of whose entities may or may not have been applied (the admin backend reads it back
    first, ``read_back``: what stays unknown, it could not read). A re-run converges either way.
    """
    if isinstance(error, PartialFailure):
        return error
    applied, missing, unknown = split_outcomes(changes, results, in_flight)
    if not applied and not unknown:
        return error
    shown = ", ".join(applied[:10]) + (f" and {len(applied) - 10} more" if len(applied) > 10 else "")
    if not atomic:
        said = [str(error)] + ([f"applied {counted(len(applied), 'entity')} ({shown})"] if applied else [])
        if unknown:
            said.append(f"{len(unknown)} in the failed request may or may not have been applied")
        said.append(f"{len(missing)} not applied — re-run to converge")
        return PartialFailure("; ".join(said), applied, missing, unknown, str(error), read_back)
    parts = [f"{error}; applied {counted(len(applied), 'entity')}" + (f" ({shown})" if applied else "")]
    if unknown:
        parts.append(
            f"outcome unknown for {len(unknown)} (one transaction, all or none of them written: "
            f"{', '.join(unknown[:3])}{' ...' if len(unknown) > 3 else ''})"
        )
    parts.append(f"not applied: {len(missing)} — re-run to converge")
    return PartialFailure("; ".join(parts), applied, missing, unknown, str(error))


def interrupted(
    changes: Sequence[EntityChange],
    results: Mapping[Entity, EntityResult],
    in_flight: Collection[Entity] = (),
    *,
    atomic: bool = True,
) -> Interrupted:
    """Ctrl-C in the middle of writes (exit 130); ``in_flight``: the write on the wire, a ZooKeeper transaction
    (``atomic``: all or none) or an admin request (each entity applied or not on its own)."""
    applied, missing, unknown = split_outcomes(changes, results, in_flight)
    shown = ", ".join(unknown[:3]) + (" ..." if len(unknown) > 3 else "")
    what = "one transaction, all or none" if atomic else "the request in flight, each entity applied or not"
    return Interrupted(
        f"interrupted: {counted(len(applied), 'entity')} applied, {len(missing)} not applied"
        + (f", outcome unknown for {len(unknown)} ({what}: {shown})" if unknown else ""),
        applied,
        missing,
        unknown,
        "interrupted",
    )


def apply_failure(
    error: QuotaError,
    applied: list[str],
    not_applied: list[str],
    unknown: Sequence[str] = (),
    *,
    interrupted: bool = False,
) -> PartialFailure:
    """What a multi-chunk apply reports when it stops: every entity applied so far (earlier chunks included), not
    applied (later chunks included) and of unknown outcome; ``error`` is the cause."""
    cls = Interrupted if interrupted else PartialFailure
    return cls(str(error), applied, not_applied, list(unknown))
