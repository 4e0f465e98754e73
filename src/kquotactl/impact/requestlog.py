"""The broker request log (``kafka.request.logger`` at DEBUG) as traffic: the one definition of the format.

Both engines read it from here: the local engine applies :func:`parse_line` to each line; the Spark engine
uses the same patterns (:data:`LINE`, :data:`RECORDS_SIZE`, :data:`REPLICA_ID`), written in the subset of
regular-expression syntax that Python's ``re`` and Java's ``java.util.regex`` read alike (no ``\\d``/``\\w``/``\\s``,
which differ on non-ASCII text), and the same JSON field names (:data:`JSON_FIELDS`) through ``from_json``.

A line, for Kafka 2.8 to 4.x (``RequestChannel.updateRequestMetrics`` logs ``"Completed request:" + json`` where
the JSON is ``RequestConvertToJson.requestDescMetrics``; the default log4j/log4j2 layout is ``[%d] %p %m (%c)%n``)::

    [2026-11-25 10:00:00,123] DEBUG Completed request:{"isForwarded":false,"requestHeader":{"requestApiKey":0,
    "requestApiVersion":9,"correlationId":5,"clientId":"app-1","requestApiKeyName":"PRODUCE"},"request":{...},
    "response":{...},"connection":"127.0.0.1:9092-127.0.0.1:51234-0","totalTimeMs":2.1,"requestQueueTimeMs":0.1,
    "localTimeMs":1.5,"remoteTimeMs":0.0,"throttleTimeMs":0,...,"principal":"User:alice",...} (kafka.request.logger)

The mapping to the traffic table (what the brokers' quota managers measure, as closely as the log allows):

- ``ts``: the line's timestamp, read as UTC, milliseconds kept (written once the response is sent: later than the
  quota recording, in the Produce/Fetch response callbacks, by the response-queue and send times);
- ``user``: the principal's *name*, whatever its type: ``principal`` is ``KafkaPrincipal.toString``, i.e.
  ``type + ":" + name``, and the quota managers use ``principal.getName``; so ``User:alice`` and a custom
  builder's ``ServiceAccount:alice`` are both quota user ``alice`` (the text after the first ``:``);
- ``client_id``: ``requestHeader.clientId``; ``ip``: the remote host of ``connection``
  (``localHost:localPort-remoteHost:remotePort-index`` in 2.8, ``...-processorId-index`` later);
- ``produce_bytes``: for Produce (api key 0), the sum of the request's ``recordsSizeInBytes`` (the broker records
  the whole request size, header and topic names included: the log undercounts by that framing);
- ``fetch_bytes``: for the APIs recorded on the fetch quota (:data:`FETCH_APIS`: a consumer's Fetch, and from 4.1
  ShareFetch, ``KafkaApis.processShareFetchResponse``), the sum of the response's ``recordsSizeInBytes``
  (``recordSetSizeInBytes`` in 2.8) (the
  broker records the whole response size: same framing undercount). A Fetch whose request has a ``replicaId``
  without a minus sign is a follower's, exempt from client quotas (``sendResponseExemptThrottle``): no bytes and
  no request time. A throttled Fetch/ShareFetch is answered empty and the broker unrecords its bytes: the log
  shows no bytes for it either. Kafka 4.1–4.4 log a ShareFetch's records as bytes (``"records":""`` once sent),
  not as ``recordsSizeInBytes``: a share consumer's bytes are not in their logs (counted if a release logs them);
- ``requests``: 1 per line;
- ``request_time_ms``: ``localTimeMs``, i.e. ``apiLocalCompleteTime − requestDequeueTime``, which is the
  request-handler time the request quota records (``requestThreadTimeNanos``); the quota also records the
  network-thread time, which the log does not show, so the log undercounts request time. 0 for what the broker
  records as *exempt* (``maybeRecordExempt``): a Produce with ``acks=0`` (``KafkaApis.handleProduceRequest``), a
  follower's Fetch, and the inter-broker/controller APIs of :data:`REQUEST_EXEMPT_APIS`;
- ``connections``: 1 per ApiVersions request (api key 18): clients open each connection with one. A *lower bound*:
  on SASL listeners the ApiVersions a client sends before authenticating (librdkafka's only one) is answered by
  the authenticator and never reaches the request log, and a client that skips ApiVersions is not counted.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

FORMAT = "kafka-request-log"

# [date time,ms] LEVEL Completed request:{json} (logger)   — groups: 1 date-time, 2 milliseconds, 3 JSON.
LINE = (
    r"(?s)^\[([0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2})[,.]([0-9]{3})\] [A-Z]+ "
    r"Completed request:(\{.*\})( \([A-Za-z0-9_.$]+\))?[ \t\r]*$"
)
# On Spark, one pass of LINE a line: ``regexp_extract(line, LINE, 3)``, the JSON (never empty when LINE matches);
# groups 1 and 2 are then read by offset from the text before the line's first ``]`` (``[``, the stamp, ``,`` or
# ``.``, the milliseconds).
STAMP_CHARS = 19  # group 1: yyyy-MM-dd HH:mm:ss
MILLIS_CHARS = 3  # group 2
# Every record batch's size in the request (Produce) or response (Fetch); inside a JSON string a quote is
# escaped, so these never match text within a client-id or a topic name.
#: A record set's size as the log writes it: ``recordsSizeInBytes``, except a Fetch response of 2.8 (its
#: ``partitionResponses``' ``recordSetSizeInBytes``, as a real 2.8.2 broker logs it).
RECORDS_SIZE = r'"(?:recordsSizeInBytes|recordSetSizeInBytes)":([0-9]{1,10})(?![0-9])'
# The first replicaId of the line is the Fetch request's (the request precedes the response in the JSON):
# top-level up to Fetch v14, in replicaState from v15. A consumer's is -1 (or absent); a follower's has no sign.
REPLICA_ID = r'"replicaId":(-?)[0-9]'
BLANK = r"^[ \t\r]*$"

API_PRODUCE = 0
API_FETCH = 1
API_VERSIONS = 18
API_SHARE_FETCH = 78
# Recorded on the fetch quota: Fetch (a consumer's), and ShareFetch from 4.1 (its first release with quotas on it;
# the api key exists only on brokers that have share groups, so no version test is needed).
FETCH_APIS = (API_FETCH, API_SHARE_FETCH)
# Answered with ``sendResponseExemptThrottle`` (request time recorded on the exempt sensor, not the client's), as
# KafkaApis and ControllerApis do from 2.8 to 4.4: LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown
# (ZooKeeper mode), WriteTxnMarkers, AlterPartition, and the controllers' Raft RPCs (Vote, BeginQuorumEpoch,
# EndQuorumEpoch, FetchSnapshot, Add/Remove/UpdateRaftVoter); a follower's Fetch and an acks=0 Produce are decided
# from the line itself.
REQUEST_EXEMPT_APIS = (4, 5, 6, 7, 27, 52, 53, 54, 56, 59, 80, 81, 82)
# The quota user in Spark: the principal's name, after the first ":" (the whole text when there is none).
PRINCIPAL_NAME = r"(?s)^[^:]*:(.*)$"

# The JSON fields read (dotted = nested), with their types; from_json reads exactly these in Spark.
JSON_FIELDS: dict[str, str] = {
    "requestHeader.requestApiKey": "int",
    "requestHeader.clientId": "string",
    "connection": "string",
    "principal": "string",
    "localTimeMs": "double",
    "request.acks": "int",
}

_LINE_MATCH = re.compile(LINE).match
_RECORDS_FINDALL = re.compile(RECORDS_SIZE).findall
_REPLICA_SEARCH = re.compile(REPLICA_ID).search
_BLANK = re.compile(BLANK)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Request:
    """One request-log line as a traffic row."""

    ts: float
    user: str
    client_id: str
    ip: str
    produce_bytes: int
    fetch_bytes: int
    requests: int
    request_time_ms: float
    connections: int


COLUMNS: tuple[str, ...] = (
    "ts",
    "user",
    "client_id",
    "ip",
    "produce_bytes",
    "fetch_bytes",
    "requests",
    "request_time_ms",
    "connections",
)


def user_of(principal: str) -> str:
    """``User:alice`` → ``alice``, ``ServiceAccount:x`` → ``x``: the name after the type (:data:`PRINCIPAL_NAME`)."""
    _type, sep, name = principal.partition(":")
    return name if sep else principal


def ip_of(connection: str) -> str:
    """The remote host of a connection id ``localHost:localPort-remoteHost:remotePort-index[-...]``.

    IPv6 hosts contain colons, so the host is everything before the last colon of the second dash-separated part.
    """
    parts = connection.split("-")
    if len(parts) < 2:
        return ""
    host, sep, _port = parts[1].rpartition(":")
    return host if sep else ""


@functools.lru_cache(maxsize=4096)
def _second(stamp: str) -> int | None:
    """``2026-11-25 10:00:00`` (the shape :data:`LINE` guarantees) as UTC epoch seconds; None if no such date."""
    try:
        t = datetime(
            int(stamp[0:4]),
            int(stamp[5:7]),
            int(stamp[8:10]),
            int(stamp[11:13]),
            int(stamp[14:16]),
            int(stamp[17:19]),
            tzinfo=UTC,
        )
    except ValueError:
        return None
    return int((t - _EPOCH).total_seconds())


def epoch_seconds(stamp: str, millis: str) -> float | None:
    """``2026-11-25 10:00:00`` and ``123`` as UTC epoch seconds, or None when it is not a valid date."""
    second = _second(stamp)
    return None if second is None else second + int(millis) / 1000.0


# JSON_FIELDS as key paths, and the decoder: ``raw_decode`` is ``json.loads`` without its whitespace handling (the
# body :data:`LINE` captures starts with ``{`` and ends with ``}``); a body with text after its object is refused.
# The two header fields share their parent object; the others are top-level.
(_HEADER, _API), (_, _CLIENT), (_CONNECTION,), (_PRINCIPAL,), (_LOCAL,), (_REQUEST, _ACKS) = (
    tuple(k.split(".")) for k in JSON_FIELDS
)
_DECODE = json.JSONDecoder().raw_decode
_NO_HEADER: dict[str, Any] = {}
_NUMBERS = (int, float)  # JSON numbers as json decodes them (a bool is not one)


Row = tuple[float, str, str, str, int, int, int, float, int]  # a Request's fields, in COLUMNS order


def parse_row(line: str) -> Row | None:
    """One line as a traffic row (:data:`COLUMNS` order), or None when it is malformed (blank lines too: the
    caller tells those apart with :func:`is_blank`, only for the lines this refuses). One regex match, one JSON
    decode and one scan of the JSON text for the record sizes per line; the Fetch's replicaId only for a Fetch."""
    m = _LINE_MATCH(line)
    if m is None:
        return None
    stamp, millis, body = m.group(1, 2, 3)
    ts = epoch_seconds(stamp, millis)
    if ts is None:
        return None
    try:
        doc, end = _DECODE(body)
    except (ValueError, RecursionError):
        return None
    if end != len(body):
        return None
    header = doc.get(_HEADER)
    if type(header) is not dict:
        header = _NO_HEADER
    api = header.get(_API)
    connection = doc.get(_CONNECTION)
    principal = doc.get(_PRINCIPAL)
    if type(api) is not int or type(connection) is not str or type(principal) is not str:
        return None  # (bool is a subclass of int, not an int here)
    client = header.get(_CLIENT)
    local = doc.get(_LOCAL)
    exempt = api in REQUEST_EXEMPT_APIS
    produce = fetch = 0
    if api == API_PRODUCE or api in FETCH_APIS:
        sizes = sum(map(int, _RECORDS_FINDALL(body)))
        if api == API_PRODUCE:
            produce = sizes
            request = doc.get(_REQUEST)
            exempt = type(request) is dict and type(request.get(_ACKS)) is int and request[_ACKS] == 0
        else:
            if api == API_FETCH:
                replica = _REPLICA_SEARCH(body)
                exempt = replica is not None and replica.group(1) != "-"  # a follower's
            fetch = 0 if exempt else sizes
    return (
        ts,
        user_of(principal),
        client if type(client) is str else "",
        ip_of(connection),
        produce,
        fetch,
        1,
        0.0 if exempt or type(local) not in _NUMBERS else float(local),
        1 if api == API_VERSIONS else 0,
    )


def parse_line(line: str) -> Request | None:
    """One line as a :class:`Request`, or None when it is malformed (the caller skips empty lines first)."""
    row = parse_row(line)
    return None if row is None else Request(*row)


def is_blank(line: str) -> bool:
    """Lines skipped without counting as malformed."""
    return _BLANK.match(line) is not None


# What connection counts taken from a request log are: said wherever they are shown (report, table, docs).
CONNECTIONS_NOTE = (
    "connections from a request log are a lower bound: on SASL listeners the ApiVersions a client sends before "
    "authenticating (librdkafka's only one) is never logged, so such connections are not counted"
)


@dataclass
class LogStats:
    """What reading a request log found: lines read (blank ones excluded), requests kept, malformed lines."""

    lines: int = 0
    requests: int = 0
    malformed: int = 0
    first_malformed: str | None = None  # "FILE:LINE"

    def as_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "lines": self.lines,
            "requests": self.requests,
            "malformed_lines": self.malformed,
            "first_malformed": self.first_malformed,
            "connections": "lower bound",
            "connections_note": CONNECTIONS_NOTE,
        }

    @classmethod
    def total(cls, parts: Sequence[LogStats]) -> LogStats:
        """Several readings (one per broker's logs) as one; the first malformed line is the first reading's."""
        first = next((p.first_malformed for p in parts if p.first_malformed), None)
        return cls(sum(p.lines for p in parts), sum(p.requests for p in parts), sum(p.malformed for p in parts), first)

    def warning(self) -> str | None:
        """The stderr line, when lines were skipped."""
        if not self.malformed:
            return None
        s = "" if self.malformed == 1 else "s"
        return f"{self.malformed} malformed request-log line{s} skipped, first at {self.first_malformed}"


def is_request_log_file(name: str) -> bool:
    """In a directory, the files read as request logs: ``kafka-request.log`` and its rotations
    (``kafka-request.log.2026-11-25-10``, ``.gz``), i.e. names containing ``request`` and ``.log``."""
    return "request" in name and ".log" in name and not name.startswith((".", "_"))
