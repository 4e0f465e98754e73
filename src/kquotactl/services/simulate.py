"""explain's simulation pieces callable from Python: many connections explained as JSON lines, and recordings replayed
through the broker's Rate (or token bucket) under a given or resolved limit."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kquotactl.core.errors import MissingInput, UsageError

if TYPE_CHECKING:  # types only: the modules load inside the services that use them
    from kquotactl.core.explain import Connection, ThrottleModel
    from kquotactl.core.keys import QuotaKey
    from kquotactl.core.precedence import QuotaIndex
    from kquotactl.core.rate import ReplayStep


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
    mutation_window: tuple[int, int] = (11, 1),
) -> Replayed:
    """Replay recordings for one key: under ``limit`` (a number, or a quota value as typed: see
    :func:`limit_value`), or under what ``conn`` resolves to in ``quota_set`` (called only then: loading a live
    quota set reads the cluster). ``key`` defaults to connection_creation_rate for an ip-only connection, else
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
