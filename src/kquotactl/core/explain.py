"""``explain``'s answer for one connection: per quota key, the level that applied, who shares it, the chain,
and the steady-state throttle for an observed rate. Pure: builds plain data (the JSON contract) and words.

The JSON contract (one object per connection)::

    {"connection": {"user": "alice", "client-id": "app1"},
     "quotas": [{"key": "producer_byte_rate", "limit": 1048576, "level": 3,
                 "entity_path": "users/alice", "quota_id": {"user": "alice", "client-id": ""},
                 "sharing": "shared by every client of user alice", "throttle_ms": 0}, ...]}

One entry per key of the connection's kind (all five user/client keys, unlimited ones included, and/or
``connection_creation_rate`` for an ip); ``limit``/``level``/``entity_path`` are null when unlimited;
ip entries have no ``quota_id``; ``throttle_ms`` only for keys given an observed rate; ``chain`` only
when asked for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from kquotactl.core.entities import DEFAULT, Entity, canonical_ip
from kquotactl.core.errors import InputValueError, MalformedInput, QuotaError, UsageError
from kquotactl.core.inet import read_ip_name
from kquotactl.core.keys import KEYS, UNIT_FACTORS, Number, human_and_raw, limit_text, not_applied_reason
from kquotactl.core.precedence import STATIC_CONFIGS, STATIC_LEVEL, ChainStep, QuotaIndex, Resolution, Sharing
from kquotactl.core.throttle import DEFAULT_WINDOW_NUM, DEFAULT_WINDOW_SIZE_SECONDS, steady_state_throttle_ms
from kquotactl.core.values import DUPLICATE_RULE
from kquotactl.core.wording import shown_name

ANONYMOUS = "ANONYMOUS"  # the principal brokers give unauthenticated (PLAINTEXT) clients
_canonical_ip = lru_cache(maxsize=65536)(canonical_ip)


@dataclass(frozen=True, slots=True)
class Connection:
    """A client connection as the broker sees it: its principal, its client-id, and/or its address.

    ``user``/``client_id`` None: not a user/client connection (an ip-only question); ``ip`` None: no ip.
    """

    user: str | None = None
    client_id: str | None = None
    ip: str | None = None

    @classmethod
    def of(cls, user: str | None = None, client_id: str | None = None, ip: str | None = None) -> Connection:
        """Fill what the broker would: a missing user is ANONYMOUS, a missing client-id is ``""``."""
        ip = _canonical_ip(ip) if ip else None
        if user is None and client_id is None:
            if ip is None:
                raise UsageError("a connection needs a user, a client-id or an ip")
            return cls(ip=ip)
        return cls(user=ANONYMOUS if user is None else user, client_id="" if client_id is None else client_id, ip=ip)

    def to_json(self) -> dict[str, str]:
        out: dict[str, str] = {}
        if self.user is not None:
            out["user"] = self.user
            out["client-id"] = self.client_id or ""
        if self.ip is not None:
            out["ip"] = self.ip
        return out


@dataclass(frozen=True)
class ThrottleModel:
    """Steady-state throttle inputs: observed rates per key and the quota window."""

    observed: Mapping[str, float] = field(default_factory=dict)
    window_num: int = DEFAULT_WINDOW_NUM
    window_size_seconds: float = DEFAULT_WINDOW_SIZE_SECONDS
    kafka_version: tuple[int, ...] | None = None  # None: the latest behaviour
    mutation_mode: str = "strict"  # controller_mutation_rate: strict or permissive
    #: the brokers' controller.quota.window.num / .size.seconds: the controller_mutation_rate bucket's own window
    mutation_window_num: int = DEFAULT_WINDOW_NUM
    mutation_window_size_seconds: float = DEFAULT_WINDOW_SIZE_SECONDS

    def window(self, key: str) -> tuple[int, float]:
        """The window ``key`` is measured over: Kafka builds the controller mutation quota from its own
        ``controller.quota.window.*`` settings, every other quota from ``quota.window.*``."""
        if KEYS[key].token_bucket:
            return self.mutation_window_num, self.mutation_window_size_seconds
        return self.window_num, self.window_size_seconds

    def throttle_ms(self, key: str, limit: float | None) -> int:
        """The steady-state throttle for ``key``'s observed rate against ``limit`` (:mod:`kquotactl.core.throttle`)."""
        return steady_state_throttle_ms(
            key,
            self.observed[key],
            limit,
            *self.window(key),
            self.kafka_version,
            self.mutation_mode,
        )


def parse_observed(items: list[str]) -> dict[str, float]:
    """``--observed KEY=RATE``: a known key and a rate ≥ 0 (byte rates accept units such as 12MiB)."""
    out: dict[str, float] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name, text = name.strip(), text.strip()
        if not sep or not name or not text:
            raise MalformedInput("observed", "expected KEY=RATE, e.g. producer_byte_rate=12MiB", item)
        if name not in KEYS:
            from kquotactl.core.keys import lookup_key

            lookup_key(name)  # raises with a did-you-mean
        key = KEYS[name]
        unit = ""
        number = text
        for u in sorted(UNIT_FACTORS, key=len, reverse=True):
            if key.byte_rate and text.endswith(u):
                number, unit = text[: -len(u)].strip(), u
                break
        try:
            rate = float(number) * (UNIT_FACTORS[unit] if unit else 1)
        except ValueError:
            raise InputValueError("observed", f"{text!r} is not a rate ({key.unit})", item) from None
        if not rate >= 0 or rate == float("inf"):
            raise InputValueError("observed", "the rate must be a finite number ≥ 0", item)
        if name in out:
            raise MalformedInput("observed", f"{name} given twice: give each key once")
        out[name] = rate
    return out


NOT_ENFORCED = "not enforced by any Apache Kafka broker"


def sharing_words(res: Resolution, conn: Connection) -> str:
    """Who shares the quota, in words (the broker's metric tags decide it)."""
    return _sharing_words(res.sharing, res.level, conn, res.key)


def _sharing_words(s: Sharing, level: int | None, conn: Connection, key: str = "") -> str:
    words = _who_shares(s, level, conn)
    quota_key = KEYS.get(key)
    if quota_key is not None and quota_key.shipped_instead:
        # simulated as its draft defines it, but no broker knows the key
        head = "unlimited" if s is Sharing.NONE else words
        return f"{head}; {NOT_ENFORCED} ({quota_key.shipped_instead} is the shipped key)"
    return words


def _who_shares(s: Sharing, level: int | None, conn: Connection) -> str:
    if s is Sharing.NONE:
        return "unlimited (not enforced)"
    if s is Sharing.PAIR:
        return f"exclusive to user {shown_name(conn.user or '')} with client-id {shown_name(conn.client_id or '')}"
    if s is Sharing.USER:
        return f"shared by every client of user {shown_name(conn.user or '')}"
    if s is Sharing.CLIENT:
        return f"shared by every user's connections with client-id {shown_name(conn.client_id or '')}"
    if level == 1:
        return f"every connection from {conn.ip}"  # (an address literal: nothing to escape)
    return f"every connection from {conn.ip} (each ip has its own count)"


def level_words(res: Resolution) -> str:
    """Where a limit comes from, for a person: the level's entity with its names as every output shows them."""
    if res.level is None:
        return "unlimited"
    if res.level == STATIC_LEVEL:
        return f"static broker config {STATIC_CONFIGS[res.key]}"
    return shown_path(res.entity_path) if res.entity_path else ""


@lru_cache(maxsize=4096)
def shown_path(entity_path: str) -> str:
    """A stored entity path (``users/a%09b/clients/c%20d``, the ZooKeeper form JSON keeps) as a person reads it:
    the real names, shown as plan and describe show them (``users/'a\\tb'/clients/'c d'``), so a name with a
    space, a tab or a percent sign is one readable entity (cached: explain shows the same few paths many times)."""
    from kquotactl.core.manifest import entity_path_text

    try:
        return entity_path_text(Entity.from_path(entity_path))
    except QuotaError:
        return entity_path


def _quota_json(res: Resolution, conn: Connection, throttle: ThrottleModel | None) -> dict[str, Any]:
    d: dict[str, Any] = {
        "key": res.key,
        "limit": res.limit,
        "level": res.level,
        "entity_path": res.entity_path,
    }
    if res.quota_id_tags is not None:
        d["quota_id"] = {"user": res.quota_id_tags[0], "client-id": res.quota_id_tags[1]}
    d["sharing"] = sharing_words(res, conn)
    if res.level == STATIC_LEVEL:
        d["static_config"] = STATIC_CONFIGS[res.key]
    if throttle is not None and res.key in throttle.observed:
        d["throttle_ms"] = throttle.throttle_ms(res.key, res.limit)
    return d


def chain_json(steps: list[ChainStep]) -> list[dict[str, Any]]:
    return [
        {
            "level": s.level,
            "entity_path": s.entity_path,
            "value": s.value,
            "status": s.status.value,
        }
        for s in steps
    ]


def connection_notes(index: QuotaIndex, conn: Connection) -> list[str]:
    """What the stored state means for this connection beyond the numbers: stored values brokers cannot parse on
    its levels, which stored spelling of its address applies and why, and ip nodes only the broker's resolver can
    place. Empty in the usual case (and then cheap: two dictionary checks)."""
    notes: list[str] = []
    if index.unparsed:
        entities: list[Entity] = []
        if conn.user is not None:
            from kquotactl.core.precedence import LEVELS

            user, client = conn.user, conn.client_id or ""
            entities += [
                level.entity(user, client)
                for level in LEVELS
                if not ((level.user == "name" and user == "") or (level.client == "name" and client == ""))
            ]
        if conn.ip is not None:
            entities += [*index.ip_spellings(conn.ip), Entity(ip=DEFAULT)]
        for e in entities:
            for k, text in index.unparsed.get(e, {}).items():
                reason = not_applied_reason(KEYS[k], text)
                notes.append(f"{e.path} stores {k} as {text!r}: {reason}, so that level does not set it")
    if conn.ip is not None:
        spellings = index.ip_spellings(conn.ip)
        for e in spellings:
            if e.ip != conn.ip:
                notes.append(
                    f"{e.path} names {conn.ip}: brokers key ip quotas by address (InetAddress), not by spelling"
                )
        if len(spellings) > 1:
            notes.append(f"{len(spellings)} stored names are the address {conn.ip}: {DUPLICATE_RULE}")
        for e in index.ip_names():
            assert isinstance(e.ip, str)
            notes.append(
                f"{e.path} applies to {conn.ip} only if the broker's resolver maps {e.ip!r} to it: "
                f"{read_ip_name(e.ip).meaning(e.ip)}"
            )
    return notes


def resolutions(index: QuotaIndex, conn: Connection) -> list[Resolution]:
    out: list[Resolution] = []
    if conn.user is not None:
        out.extend(index.resolve_all(conn.user, conn.client_id or ""))
    if conn.ip is not None:
        out.extend(index.resolve_all_ip(conn.ip))
    return out


def chain_for(index: QuotaIndex, conn: Connection, res: Resolution) -> list[ChainStep]:
    if KEYS[res.key].kind.value == "ip":
        assert conn.ip is not None
        return index.chain_ip(conn.ip, res.key, res)
    assert conn.user is not None
    return index.chain(res.key, conn.user, conn.client_id or "", res)


def explain_json(
    index: QuotaIndex, conn: Connection, throttle: ThrottleModel | None = None, chain: bool = False
) -> dict[str, Any]:
    """The JSON contract for one connection (a lean path: this runs once per line of --connections)."""
    if chain:
        quotas = []
        for res in resolutions(index, conn):
            d = _quota_json(res, conn, throttle)
            d["chain"] = chain_json(chain_for(index, conn, res))
            quotas.append(d)
        notes = connection_notes(index, conn)
        return {"connection": conn.to_json(), "quotas": quotas, **({"notes": notes} if notes else {})}
    observed = throttle.observed if throttle is not None else None
    quotas = []
    if conn.user is not None:
        words: dict[tuple[Sharing, int | None, str], str] = {}
        for key, limit, level, entity, sharing, tags in index.resolve_all_raw(conn.user, conn.client_id or ""):
            w = words.get((sharing, level, key))
            if w is None:
                w = words[(sharing, level, key)] = _sharing_words(sharing, level, conn, key)
            d = {
                "key": key,
                "limit": limit,
                "level": level,
                "entity_path": index.path(entity) if entity is not None else None,
                "quota_id": {"user": tags[0], "client-id": tags[1]},
                "sharing": w,
            }
            if level == STATIC_LEVEL:
                d["static_config"] = STATIC_CONFIGS[key]
            if observed and key in observed:
                assert throttle is not None
                d["throttle_ms"] = throttle.throttle_ms(key, limit)
            quotas.append(d)
    if conn.ip is not None:
        quotas.extend(_quota_json(res, conn, throttle) for res in index.resolve_all_ip(conn.ip))
    notes = connection_notes(index, conn)
    out: dict[str, Any] = {"connection": conn.to_json(), "quotas": quotas}
    if notes:
        out["notes"] = notes
    return out


def _num(v: Number | None) -> str:
    """A number as ``json.dumps`` writes it."""
    if v is None:
        return "null"
    return float.__repr__(v) if isinstance(v, float) else int.__repr__(v)


class LineEncoder:
    """Encodes ``explain_json`` directly as compact JSON lines, for --connections (the bulk path).

    The part of an entry that depends only on the quota (key, limit, level, entity path) is encoded once per
    distinct quota and reused; only the connection's own parts (quota-id, sharing words) are encoded per line.
    The output parses to exactly ``explain_json(...)`` (tests check it).
    """

    def __init__(self, index: QuotaIndex, throttle: ThrottleModel | None = None) -> None:
        from json.encoder import encode_basestring

        self.index = index
        self.throttle = throttle if throttle is not None and throttle.observed else None
        self._q = encode_basestring
        self._prefix: dict[tuple[str, int | None, Entity | None], str] = {}

    def _head(self, key: str, limit: Number | None, level: int | None, entity: Entity | None) -> str:
        cache_key = (key, level, entity)
        p = self._prefix.get(cache_key)
        if p is None:
            path = "null" if entity is None else self._q(self.index.path(entity))
            lv = "null" if level is None else str(level)
            p = f'{{"key":"{key}","limit":{_num(limit)},"level":{lv},"entity_path":{path}'
            self._prefix[cache_key] = p
        return p

    def line(self, conn: Connection) -> str:
        q = self._q
        throttle = self.throttle
        out: list[str] = []
        if conn.user is not None:
            user, client = conn.user, conn.client_id or ""
            qc = q(client)
            out.append('{"connection":{"user":')
            out.append(q(user))
            out.append(',"client-id":')
            out.append(qc)
            if conn.ip is not None:
                out.append(',"ip":')
                out.append(q(conn.ip))
            out.append('},"quotas":[')
            quoted = {"": '""', client: qc}
            words: dict[tuple[Sharing, int | None, str], str] = {}
            first = True
            for key, limit, level, entity, sharing, tags in self.index.resolve_all_raw(user, client):
                if not first:
                    out.append(",")
                first = False
                out.append(self._head(key, limit, level, entity))
                tu, tc = tags
                qu = quoted.get(tu)
                if qu is None:
                    qu = quoted[tu] = q(tu)
                qt = quoted.get(tc)
                if qt is None:
                    qt = quoted[tc] = q(tc)
                w = words.get((sharing, level, key))
                if w is None:
                    w = words[(sharing, level, key)] = q(_sharing_words(sharing, level, conn, key))
                out.append(',"quota_id":{"user":')
                out.append(qu)
                out.append(',"client-id":')
                out.append(qt)
                out.append('},"sharing":')
                out.append(w)
                if level == STATIC_LEVEL:
                    out.append(f',"static_config":"{STATIC_CONFIGS[key]}"')
                if throttle is not None and key in throttle.observed:
                    ms = throttle.throttle_ms(key, limit)
                    out.append(f',"throttle_ms":{ms}')
                out.append("}")
            if conn.ip is not None:
                out.append(",")
        else:
            assert conn.ip is not None
            out.append('{"connection":{"ip":')
            out.append(q(conn.ip))
            out.append('},"quotas":[')
        if conn.ip is not None:
            import json

            out.append(
                ",".join(
                    json.dumps(_quota_json(res, conn, throttle), ensure_ascii=False, separators=(",", ":"))
                    for res in self.index.resolve_all_ip(conn.ip)
                )
            )
        out.append("]")
        notes = connection_notes(self.index, conn)
        if notes:
            import json

            out.append(',"notes":' + json.dumps(notes, ensure_ascii=False, separators=(",", ":")))
        out.append("}")
        return "".join(out)


def explain_line(index: QuotaIndex, conn: Connection, throttle: ThrottleModel | None = None) -> str:
    """``explain_json`` already encoded as one compact JSON line (see :class:`LineEncoder`, which bulk callers
    should keep for all their lines)."""
    return LineEncoder(index, throttle).line(conn)


def limit_words(key: str, value: Number | None) -> str:
    """``1 MiB/s (1048576)``, ``50 %``, ``20 connections/s`` or ``unlimited``: as describe and plan show a limit
    (:func:`kquotactl.core.keys.human_and_raw`, the one formatter)."""
    return "unlimited" if value is None else human_and_raw(KEYS[key], value)


def compact(key: str, value: Number) -> str:
    """``1 MiB/s`` when that is exact, else ``6.84 KiB/s (7000)``: short, never rounded."""
    return limit_text(KEYS[key], value)


def step_words(step: ChainStep, key: str) -> str:
    """One chain cell: ``applied 1 MiB/s``, ``shadowed 7000 B/s``, ``not set``."""
    if step.value is None:
        return "not set"
    return f"{step.status.value} {compact(key, step.value)}"


#: the two ip levels (KIP-612), in precedence order: levels 1 and 2 of an ip are these, not the client levels
IP_LEVEL_PATTERNS = ("ips/<ip>", "ips/<default>")


def level_pattern(level: int, ip: bool = False) -> str:
    """The entity pattern of a precedence level; ``ip``: of an ip level (an ip resolves on its own two levels)."""
    from kquotactl.core.precedence import LEVELS

    if ip:
        return IP_LEVEL_PATTERNS[level - 1]
    if level == STATIC_LEVEL:
        return "static broker default"
    return LEVELS[level - 1].pattern
