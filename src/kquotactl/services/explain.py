"""``explain`` callable from Python: one connection explained (with its cluster-wide view), many connections as
JSON lines, and recordings replayed through the broker's Rate (or token bucket) under a given or resolved limit.

The quotas are a :class:`~kquotactl.core.precedence.QuotaIndex` or a callable that loads one when it is first needed
(a live quota set reads the cluster: a replay under a given limit never does); load one with
:func:`kquotactl.services.quotas.load_quota_set` or :func:`example_quota_set`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kquotactl.core.errors import MissingInput, UsageError

if TYPE_CHECKING:  # types only: the modules load inside the services that use them
    from kquotactl.backends.base import QuotaBackend
    from kquotactl.core.explain import Connection, ThrottleModel
    from kquotactl.core.keys import Number, QuotaKey
    from kquotactl.core.precedence import QuotaIndex
    from kquotactl.core.rate import ReplayStep
    from kquotactl.services.quotas import QuotaSet


def _index(quotas: QuotaIndex | Callable[[], QuotaIndex]) -> QuotaIndex:
    """The quota set, loaded now if it is given as its loader."""
    return quotas() if callable(quotas) else quotas


EXAMPLE_MANIFEST = """\
# kquotactl explain's example: a small quota set with the classic surprises (man kquotactl-explain)
quotas:
  - entity: {user: alice}
    config: {producer_byte_rate: 10MiB}
  - entity: {user: alice, client-id: "<default>"}     # an old per-client cap nobody remembers
    config: {producer_byte_rate: 2MiB}
  - entity: {client-id: ingest}
    config: {producer_byte_rate: 50MiB, consumer_byte_rate: 20MiB}
  - entity: {user: "<default>"}
    config: {consumer_byte_rate: 5MiB, request_percentage: 50}
  - entity: {client-id: "<default>"}
    config: {consumer_byte_rate: 1MiB, controller_mutation_rate: 10}
  - entity: {ip: "<default>"}
    config: {connection_creation_rate: 20}
"""


def example_quota_set(static_defaults: Mapping[str, int] | None = None) -> QuotaSet:
    """The small embedded quota set (:data:`EXAMPLE_MANIFEST`) to try explain on without a cluster."""
    from kquotactl.core.precedence import QuotaIndex
    from kquotactl.manifests.loader import load_text
    from kquotactl.services.quotas import QuotaSet

    records = load_text(EXAMPLE_MANIFEST, "<example>").records()
    return QuotaSet(QuotaIndex(records, static_defaults=dict(static_defaults or {})), [])


@dataclass(frozen=True)
class Explained:
    """One connection explained: the quota set it resolves against (each key's answer, sharing and chain come from
    it through :mod:`kquotactl.core.explain`) and, with a cluster-wide view, each limited key's per-broker limit and
    the broker count it multiplies by."""

    index: QuotaIndex
    connection: Connection
    throttle: ThrottleModel | None = None
    cluster_limits: list[tuple[QuotaKey, Number]] = field(default_factory=list)
    brokers: int = 0

    def to_json(self, chain: bool = False) -> dict[str, Any]:
        """explain's JSON document (``chain``: with every level of the chain per key)."""
        from kquotactl.core.explain import explain_json

        data = explain_json(self.index, self.connection, self.throttle, chain=chain)
        if self.cluster_limits:
            from kquotactl.core.budget import cluster_view

            data["cluster_wide"] = [cluster_view(qk, limit, self.brokers) for qk, limit in self.cluster_limits]
        return data


def explain(
    quotas: QuotaIndex | Callable[[], QuotaIndex],
    conn: Connection,
    throttle: ThrottleModel | None = None,
    *,
    cluster_wide: bool = False,
    brokers: int | None = None,
    backend: QuotaBackend | Callable[[], QuotaBackend] | None = None,
) -> Explained:
    """Which quota applies to ``conn``, per key. ``cluster_wide``: also each limit times the broker count,
    ``brokers`` or else the live ``backend``'s; without either (offline) :class:`MissingInput` ``"broker-count"``."""
    from kquotactl.core.explain import resolutions
    from kquotactl.core.keys import KEYS

    index = _index(quotas)
    if not cluster_wide:
        return Explained(index, conn, throttle)
    if brokers is None:
        if backend is None:
            raise MissingInput("broker-count")
        brokers = len((backend() if callable(backend) else backend).broker_ids())
    limits = [(KEYS[r.key], r.limit) for r in resolutions(index, conn) if r.limit is not None]
    return Explained(index, conn, throttle, limits, brokers)


@dataclass(frozen=True)
class ExplainedMany:
    """Many connections to explain against one quota set, in order; ``connections`` is read as it is consumed."""

    index: QuotaIndex
    connections: Iterable[Connection]
    throttle: ThrottleModel | None = None

    def lines(self, chain: bool = False) -> Iterator[dict[str, Any] | str]:
        """One JSON object per connection (see :func:`explain_lines`)."""
        return explain_lines(self.index, self.connections, self.throttle, chain)

    def documents(self, chain: bool = False) -> Iterator[dict[str, Any]]:
        """explain's whole JSON document per connection, the throttle included whatever was observed."""
        from kquotactl.core.explain import explain_json

        return (explain_json(self.index, c, self.throttle, chain) for c in self.connections)


def explain_many(
    quotas: QuotaIndex | Callable[[], QuotaIndex],
    connections: Iterable[Connection],
    throttle: ThrottleModel | None = None,
) -> ExplainedMany:
    """Many connections (e.g. :func:`kquotactl.inputs.read_connections`) against one quota set, loaded now."""
    return ExplainedMany(_index(quotas), connections, throttle)


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
    quota_set: QuotaIndex | Callable[[], QuotaIndex] | None = None,
    key: str | None = None,
    limit: float | str | None = None,
    unrecord_throttled: bool = False,
    window_num: int = 11,
    window_size_seconds: int = 1,
    kafka_version: tuple[int, ...] | None = None,
    mutation_mode: str = "strict",
    mutation_window: tuple[int, int] = (11, 1),
) -> Replayed:
    """Replay recordings for one key: under ``limit`` (a number, or a quota value as typed: see
    :func:`limit_value`), or under what ``conn`` resolves to in ``quota_set`` (loaded only then: a live quota set
    reads the cluster). ``key`` defaults to connection_creation_rate for an ip-only connection, else
    producer_byte_rate. ``mutation_window``: the brokers' ``controller.quota.window.num`` and ``.size.seconds``, the
    window of controller_mutation_rate (``window_*`` is every other key's). A missing input raises
    :class:`MissingInput`."""
    from kquotactl.core.errors import InputValueError, InvalidValue
    from kquotactl.core.keys import IP_CONNECTION_KEY, PRODUCE_KEY, KeyScope, lookup_key

    if key is None:
        key = IP_CONNECTION_KEY if conn is not None and conn.user is None else PRODUCE_KEY
    qk = lookup_key(key)
    if isinstance(limit, str):
        text = limit
        try:
            limit = limit_value(qk, text)
        except InvalidValue as e:  # named as the input it came from (the CLI: --limit), not as a quota key alone
            raise InputValueError("limit", str(e), text) from None
    if limit is None:
        if conn is None or quota_set is None:
            raise MissingInput("replay-limit")
        index = _index(quota_set)
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
        mutation_window=mutation_window,
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
    mutation_window: tuple[int, int] = (11, 1),
) -> list[ReplayStep]:
    """Recordings replayed through the broker's sampled Rate for ``key`` under ``limit`` (controller_mutation_rate:
    its token bucket, over ``mutation_window``, the controller's own window): each recording's throttle."""
    from kquotactl.core.keys import KEYS

    if KEYS[key].token_bucket:
        from kquotactl.core.kafkaversions import behaviour
        from kquotactl.core.rate import replay_token_bucket

        if not behaviour(kafka_version).has("mutation_quota"):
            raise UsageError(
                "controller_mutation_rate came with Kafka 2.7 (KIP-599): a broker before it has no such quota"
            )
        num, size = mutation_window
        return replay_token_bucket(
            events, limit, samples=num, window_ms=size * 1000, mode=mutation_mode, kafka_version=kafka_version
        )
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
