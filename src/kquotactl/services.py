"""What the commands do, callable from Python without click: describe, alter, plan, apply, explain's pieces, and the
one loader of a quota set (manifests or a live backend) that explain and impact share.

Services take typed arguments (a :class:`~kquotactl.backends.base.QuotaBackend`, a manifest, entities, changes) and
return dataclasses; they never print and never name a command-line flag. The click commands in :mod:`kquotactl.cli`
parse their options, call a service and render what it returns; errors are raised as
:class:`~kquotactl.core.errors.QuotaError` (with data) and worded by the CLI (:mod:`kquotactl.cli.errorwords`).

For example::

    backend = open_backend(ConnectionOptions(zookeeper="zk:2181/kafka"))  # kquotactl.backends.factory
    result = apply(backend, plan(backend, load_manifests(["quotas.yaml"])).plan)  # kquotactl.manifests.loader
    result.partial is None, result.counts["applied"]
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

from kquotactl.backends.base import ProgressCallback, QuotaBackend
from kquotactl.core.errors import EXIT_INTERRUPTED, MissingInput, PartialFailure, QuotaError, UsageError
from kquotactl.core.model import EntityChange, EntityResult, Outcome, QuotaRecord, check_live_changes

if TYPE_CHECKING:  # the rest loads inside the services that use it: describe and alter stay light
    from kquotactl.core.explain import Connection, ThrottleModel
    from kquotactl.core.filters import EntityFilter
    from kquotactl.core.keys import QuotaKey
    from kquotactl.core.manifest import Manifest
    from kquotactl.core.plan import EntityDiff, Plan
    from kquotactl.core.precedence import QuotaIndex
    from kquotactl.core.principals import BrokerPrincipals
    from kquotactl.core.rate import ReplayStep

#: entities per backend call of :func:`apply`: bounds the backend's working set (reads, ops, results)
APPLY_CHUNK = 5000


def backend_warnings(backend: QuotaBackend) -> list[str]:
    """What the backend noticed while reading or writing (stored values brokers cannot parse, lagging brokers...)."""
    return list(backend.warnings)


# -- describe / alter ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Described:
    """The entities with quotas that matched, and what the backend noticed on the way."""

    records: list[QuotaRecord]
    warnings: list[str]


def describe(backend: QuotaBackend, flt: EntityFilter | None = None) -> Described:
    """Entities with at least one quota matching ``flt`` (every one when None), sorted like kafka-configs."""
    records = backend.describe(flt)
    return Described(records, backend_warnings(backend))


@dataclass(frozen=True)
class Altered:
    """One result per entity written (one per stored spelling when several stored ip names are the address)."""

    results: list[EntityResult]
    warnings: list[str]

    @property
    def rejection(self) -> QuotaError | None:
        """Why the change was refused (the core's error, with data, when the backend kept it), or None."""
        for result in self.results:
            if result.outcome in (Outcome.REJECTED, Outcome.NOT_ATTEMPTED):
                return result.error or QuotaError(result.message)
        return None


def alter(backend: QuotaBackend, change: EntityChange, *, dry_run: bool = False) -> Altered:
    """Set and remove keys of one entity, atomically (``dry_run``: validated, nothing written); a refused change is
    in :attr:`Altered.rejection`."""
    check_live_changes([change])
    results = backend.alter([change], validate_only=dry_run)
    return Altered(results, backend_warnings(backend))


# -- plan ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Planned:
    """A plan, the manifest it was made from, the backend's warnings and the plan's own notes that are not one of
    them (the same reading of the live state is said once)."""

    backend: QuotaBackend
    plan: Plan
    manifest: Manifest
    warnings: list[str]
    notes: list[str]


def plan(
    backend: QuotaBackend | Callable[[], QuotaBackend],
    manifest: Manifest,
    *,
    prune: bool = False,
    offline: bool = False,
    keep_hint: str = "",
) -> Planned:
    """Diff ``manifest`` against what ``backend`` describes (``prune``: inside the manifest's prune scope, live
    entities and keys it does not declare are removed; ``offline``: the backend is a saved export, so keys only a
    live cluster refuses are not checked). ``backend`` may be a function that opens it: then a manifest a cluster
    would refuse never connects. ``keep_hint``: see :func:`kquotactl.core.plan.make_plan`."""
    from kquotactl.core.manifest import ManifestError, live_problems
    from kquotactl.core.plan import make_plan

    if not offline and (problems := live_problems(manifest)):
        raise ManifestError(problems)
    if not isinstance(backend, QuotaBackend):
        backend = backend()
    live = backend.describe()
    warnings = backend_warnings(backend)
    the_plan = make_plan(manifest, live, prune=prune, keep_hint=keep_hint)
    shown = set(warnings)
    return Planned(backend, the_plan, manifest, warnings, [n for n in the_plan.notes if n not in shown])


@dataclass(frozen=True)
class SavedPlan:
    """A plan read back from its file (``path``); ``target``: the cluster it was made for."""

    plan: Plan
    path: str
    target: str | None


def read_plan_file(path: str) -> SavedPlan:
    """A plan saved by ``plan --out`` (every entity and value validated again: plans are files people can edit)."""
    from kquotactl.core.plan import Plan

    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as e:
        raise UsageError(f"cannot read the plan {path}: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise UsageError(f"cannot read the plan {path}: {e}") from None
    the_plan = Plan.from_json(data, path)
    target = (data.get("target") or {}).get("cluster")
    return SavedPlan(the_plan, path, str(target) if target else None)


def check_fresh(saved: SavedPlan, live: Sequence[QuotaRecord]) -> None:
    """Refuse a saved plan when the live quotas changed since it was made (its fingerprint)."""
    from kquotactl.core.plan import fingerprint

    if fingerprint(live) != saved.plan.fingerprint:
        raise QuotaError(
            f"the cluster changed since the plan {saved.path} was made (stale plan): nothing was written; "
            "run plan again"
        )


# -- apply -----------------------------------------------------------------------------------------------


@dataclass
class Applied:
    """What an apply did, per entity: ``counts`` per outcome, the ``failed`` results (rejected or not attempted),
    the labels applied, the result records (:func:`result_record`) when asked for, and ``partial``: when the apply
    stopped midway (the cluster went away, Ctrl-C), exactly which entities were applied, not applied and of
    unknown outcome (render it with :func:`kquotactl.render.records.partial_report`)."""

    counts: dict[str, int] = field(default_factory=lambda: {o.value: 0 for o in Outcome})
    failed: list[EntityResult] = field(default_factory=list)
    applied: list[str] = field(default_factory=list)
    records: list[dict[str, Any]] = field(default_factory=list)
    partial: PartialFailure | None = None


def result_record(result: EntityResult, diff: EntityDiff | None) -> dict[str, Any]:
    """One entity's result as ``apply -o json`` and the ``--log`` lines give it: with the manifest entry's path,
    source and metadata."""
    from kquotactl.core.manifest import entity_path_text

    out = result.to_json()
    if diff is not None:
        out["path"] = entity_path_text(diff.entity)
        if diff.source:
            out["source"] = diff.source
        out.update(diff.meta)
    return out


def apply(
    backend: QuotaBackend,
    the_plan: Plan,
    *,
    dry_run: bool = False,
    max_deletions: int | None = None,
    log: IO[str] | None = None,
    keep_records: bool = False,
    progress: ProgressCallback | None = None,
    chunk: int = APPLY_CHUNK,
) -> Applied:
    """Hand the plan to the backend in order, ``chunk`` entities at a time.

    Refused before anything is written when it removes quotas from more than ``max_deletions`` entities (default
    :data:`kquotactl.core.plan.DEFAULT_MAX_DELETIONS`) or sets a key no live cluster accepts. ``log``: one JSON
    line per entity result is appended (and flushed per chunk); ``keep_records``: the same records are kept in
    :attr:`Applied.records`. A failure after some entities were applied is returned as :attr:`Applied.partial`; one
    before any was applied is raised.
    """
    from kquotactl.core.partial import apply_failure
    from kquotactl.core.plan import DEFAULT_MAX_DELETIONS, check_deletions

    if max_deletions is None:
        max_deletions = DEFAULT_MAX_DELETIONS
    check_deletions(the_plan, max_deletions)
    check_live_changes(d.change() for d in the_plan.diffs)  # a saved plan too: refused before any chunk is written
    by_entity = {d.entity: d for d in the_plan.diffs}
    stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    out = Applied()

    def add(results: Iterable[EntityResult]) -> None:
        for r in results:
            out.counts[r.outcome.value] += 1
            if r.outcome in (Outcome.REJECTED, Outcome.NOT_ATTEMPTED):
                out.failed.append(r)
            elif r.outcome is Outcome.APPLIED:
                out.applied.append(r.entity.label())
            if log is not None or keep_records:
                record = result_record(r, by_entity.get(r.entity))
                if log is not None:
                    log.write(json.dumps({"time": stamp, **record}, ensure_ascii=False) + "\n")
                if keep_records:
                    out.records.append(record)
        if log is not None:
            log.flush()

    diffs = the_plan.diffs
    for start in range(0, len(diffs), chunk):
        part = diffs[start : start + chunk]
        later = [d.entity.label() for d in diffs[start + len(part) :]]
        try:
            results = backend.alter(
                [d.change() for d in part],
                validate_only=dry_run,
                expected={d.entity: d.before for d in part},
                progress=progress,
            )
        except PartialFailure as e:  # Interrupted (Ctrl-C in the backend) included: exit 130
            stopped = e.exit_code == EXIT_INTERRUPTED
            out.partial = apply_failure(
                e, out.applied + e.applied, e.not_applied + later, e.unknown, interrupted=stopped
            )
            return out
        except KeyboardInterrupt:  # Ctrl-C outside a backend's own bookkeeping: this chunk's fate is unknown
            unknown = [d.entity.label() for d in part]
            out.partial = apply_failure(QuotaError("interrupted"), list(out.applied), later, unknown, interrupted=True)
            return out
        except QuotaError as e:
            if not out.applied:
                raise QuotaError(f"{e}; nothing was applied") from None
            out.partial = apply_failure(e, list(out.applied), [d.entity.label() for d in diffs[start:]])
            return out
        add(results)
    return out


# -- quota sets (explain, impact) --------------------------------------------------------------------------


@dataclass(frozen=True)
class QuotaSet:
    """A quota set to resolve connections against, and what the backend noticed reading it."""

    index: QuotaIndex
    warnings: list[str]


def load_quota_set(
    source: QuotaBackend | Sequence[str],
    static_defaults: Mapping[str, int] | None = None,
    principals: BrokerPrincipals | None = None,
) -> QuotaSet:
    """The one loader of a quota set: manifest files or directories (offline, through the read-only manifest
    backend, the same protocol as a cluster) or a live backend's whole quota set.

    A ZooKeeper-mode broker tells every quota manager of every entity; a broker answering the admin API (KRaft) only
    the key's own: ``per_key_levels`` follows the backend (offline manifests answer as ZooKeeper does).
    ``principals``: the rules for manifests' ``principal:`` entries.
    """
    from kquotactl.core.precedence import QuotaIndex

    if isinstance(source, Sequence):
        from kquotactl.backends.manifest import ManifestBackend

        with ManifestBackend.open(list(source), principals) as offline:
            return load_quota_set(offline, static_defaults)
    records = source.describe()
    index = QuotaIndex(records, static_defaults=static_defaults, per_key_levels=source.name == "admin")
    return QuotaSet(index, backend_warnings(source))


def explain_lines(
    index: QuotaIndex, conns: Iterable[Connection], throttle: ThrottleModel | None = None, chain: bool = False
) -> Iterator[dict[str, Any] | str]:
    """Explain many connections, in order: one JSON object each (``chain``: with every level of the chain), or, on
    the bulk path without the chain, each already encoded as one compact JSON line."""
    from kquotactl.core.explain import LineEncoder, explain_json

    obs = throttle if throttle is not None and throttle.observed else None
    if chain:
        return (explain_json(index, c, obs, True) for c in conns)
    encoder = LineEncoder(index, obs)
    return (encoder.line(c) for c in conns)


@dataclass(frozen=True)
class Replayed:
    """A replay: the key, the limit it ran under (given, or resolved for the connection) and each recording's step."""

    key: str
    limit: float
    steps: list[ReplayStep]


def replay(
    events: list[tuple[int, float]],
    *,
    conn: Connection | None = None,
    quota_set: Callable[[], QuotaIndex] | None = None,
    key: str | None = None,
    limit: float | str | None = None,
    unrecord_throttled: bool = False,
    window_num: int = 11,
    window_size_seconds: int = 1,
    kafka_version: tuple[int, ...] | None = None,
    mutation_mode: str = "strict",
) -> Replayed:
    """Replay recordings for one key: under ``limit`` (a number, or a quota value as typed: see
    :func:`limit_value`), or under what ``conn`` resolves to in ``quota_set`` (called only then: loading a live
    quota set reads the cluster). ``key`` defaults to connection_creation_rate for an ip-only connection, else
    producer_byte_rate. A missing input raises :class:`MissingInput`."""
    from kquotactl.core.keys import KeyScope, lookup_key

    if key is None:
        key = "connection_creation_rate" if conn is not None and conn.user is None else "producer_byte_rate"
    qk = lookup_key(key)
    if isinstance(limit, str):
        limit = limit_value(qk, limit)
    if limit is None:
        if conn is None or quota_set is None:
            raise MissingInput("replay-limit")
        index = quota_set()
        if qk.kind is KeyScope.IP:
            if conn.ip is None:
                raise MissingInput("ip", key)
            res = index.resolve_ip(conn.ip, key)
        else:
            if conn.user is None:
                raise MissingInput("client", key)
            res = index.resolve(key, conn.user, conn.client_id or "")
        if res.limit is None:
            raise MissingInput("unlimited", key)
        limit = float(res.limit)
    steps = replay_steps(
        events,
        key,
        limit,
        unrecord_throttled=unrecord_throttled,
        window_num=window_num,
        window_size_seconds=window_size_seconds,
        kafka_version=kafka_version,
        mutation_mode=mutation_mode,
    )
    return Replayed(key, limit, steps)


def limit_value(qk: QuotaKey, text: str) -> float:
    """A replay's limit as typed: a quota value as for kafka-configs, and also 0 or a negative one (kafka-configs 2.8
    wrote them and brokers still apply them: the replay shows what they do)."""
    from kquotactl.core.errors import InvalidValue
    from kquotactl.core.keys import java_trim, parse_value

    stripped = java_trim(text)
    negative = stripped.startswith("-")
    body = stripped[1:] if negative else stripped
    try:
        value = float(parse_value(qk, body))
    except InvalidValue:
        try:
            zero = float(body) == 0
        except ValueError:
            zero = False
        if not zero:
            raise
        value = 0.0
    return -value if negative else value


def replay_steps(
    events: list[tuple[int, float]],
    key: str,
    limit: float,
    *,
    unrecord_throttled: bool = False,
    window_num: int = 11,
    window_size_seconds: int = 1,
    kafka_version: tuple[int, ...] | None = None,
    mutation_mode: str = "strict",
) -> list[ReplayStep]:
    """Recordings replayed through the broker's sampled Rate for ``key`` under ``limit`` (controller_mutation_rate:
    its token bucket): each recording's throttle."""
    if key == "controller_mutation_rate":
        from kquotactl.core.rate import replay_token_bucket

        if kafka_version is not None and kafka_version[:2] < (2, 7):
            raise UsageError(
                "controller_mutation_rate came with Kafka 2.7 (KIP-599): a broker before it has no such quota"
            )
        return replay_token_bucket(
            events, limit, samples=window_num, window_ms=window_size_seconds * 1000, mode=mutation_mode
        )
    from kquotactl.core.keys import KEYS
    from kquotactl.core.rate import replay, sampled_stat_for

    return replay(
        events,
        limit,
        samples=window_num,
        window_ms=window_size_seconds * 1000,
        cap_ms=window_size_seconds * 1000 if KEYS[key].throttle_capped else None,
        unrecord_throttled=unrecord_throttled,
        **sampled_stat_for(kafka_version),
    )


# -- principals as the brokers map them ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PrincipalRuleArgs:
    """What the user said about the brokers' principal rules (None: not given; read from the cluster if any)."""

    ssl_rules: str | None = None
    kerberos_rules: str | None = None
    kerberos_realm: str | None = None

    @property
    def all_given(self) -> bool:
        return self.ssl_rules is not None and self.kerberos_rules is not None


def broker_principals(
    backend: QuotaBackend | None, args: PrincipalRuleArgs, *, read_super_users: bool = False
) -> BrokerPrincipals:
    """The brokers' principal rules and super users: given ones win; the rest are read from ``backend`` (the
    admin API: a broker's DescribeConfigs; ZooKeeper: the cluster-wide dynamic configs only) when it can tell."""
    from kquotactl.core.principals import PRINCIPAL_CONFIGS, BrokerPrincipals

    configs: dict[str, str | None] = {}
    where: str | None = None
    read = getattr(backend, "broker_settings", None)
    if read is not None and (read_super_users or not args.all_given):
        configs, where = read(PRINCIPAL_CONFIGS)
    return BrokerPrincipals.of(
        configs,
        where,
        ssl_rules=args.ssl_rules,
        kerberos_rules=args.kerberos_rules,
        kerberos_realm=args.kerberos_realm,
    )
