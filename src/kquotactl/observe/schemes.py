"""The names the brokers' quota sensors carry in the exporter configurations operators already run, read back as
:class:`kquotactl.observe.throttled.Sample` values. Pure: no I/O.

One entry per scheme (:data:`SCHEMES`): the series names it gives each sensor (-> our metric and quota type), the
labels that carry the quota type, user, client-id, ip and listener, and what it cannot show (:class:`Loss`: a
sensor it does not export, or exports under names that are not the quota-id's). The scheme of a series is told
by its name alone (no two schemes share a name), so a Prometheus holding brokers of several configurations, or
one broker whose configuration has two schemes' rules, is read without being told which: where two schemes give
the same sensor of the same broker, the more complete one is kept (:func:`to_samples`).

What each scheme exports was read from the configurations (tests/data/exporter-configs/, vendored with their
source and commit) run by the real JMX exporter agent over Kafka's own ``JmxReporter`` naming
(tests/test_oracle_schemes.py): every loss declared here is a loss there, and there is no other.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

from kquotactl.core.errors import QuotaError
from kquotactl.observe.throttled import (
    IP_USAGE,
    LISTENER_THROTTLE,
    METRIC_PREFIX,
    THROTTLE,
    USAGE,
    Sample,
    identity,
)


@dataclass(frozen=True, slots=True)
class SensorName:
    """A quota sensor as the broker names it: its MBean ``kafka.server:type=GROUP,<tags>`` (the tags as the broker
    sets them: the user sanitized, the client-id raw, the ip as ``InetAddress.getHostAddress``)."""

    group: str  # Produce, Fetch, Request, ControllerMutation; socket-server-metrics for an ip or a listener
    user: str = ""
    client_id: str = ""
    ip: str = ""
    listener: str = ""

    def tags(self) -> list[tuple[str, str]]:
        """The MBean's key properties as Kafka's ``JmxReporter`` writes them: empty tags left out, each value
        through ``Sanitizer.jmxSanitize`` (quoted when an ObjectName cannot hold it bare)."""
        pairs = [("user", self.user), ("client-id", self.client_id), ("ip", self.ip), ("listener", self.listener)]
        return [(k, jmx_sanitize(v)) for k, v in pairs if v]

    def mbean(self) -> str:
        return f"kafka.server:type={self.group}" + "".join(f",{k}={v}" for k, v in self.tags())


_JMX_BARE = re.compile(r"[A-Za-z0-9_\-%. \t]*")  # Sanitizer.MBEAN_PATTERN: Java's \w is ASCII
#: Java regex line terminators that ObjectName.quote leaves raw (it escapes only \n): no rule's '.' matches them
JAVA_LINE_BREAKS = "\r\x85\u2028\u2029"


def jmx_sanitize(value: str) -> str:
    """Kafka's ``Sanitizer.jmxSanitize``: the value bare when an ObjectName can hold it, else ``ObjectName.quote``."""
    if _JMX_BARE.fullmatch(value):
        return value
    escaped = "".join("\\n" if c == "\n" else "\\" + c if c in '"*?\\' else c for c in value)
    return f'"{escaped}"'


DROPPED, MISREAD = "dropped", "misread"


@dataclass(frozen=True, slots=True)
class Loss:
    """What a scheme cannot show: the sensors ``applies`` picks are not exported (DROPPED) or exported under
    names that are not theirs (MISREAD: they read as another quota-id). ``unmatched``: no rule of the
    configuration matches their MBeans, so rules pasted after its own (kquotactl's) export them."""

    what: str
    kind: str
    applies: Callable[[SensorName], bool]
    unmatched: bool = False


def _groups(*groups: str) -> Callable[[SensorName], bool]:
    return lambda s: s.group in groups


def _line_break(s: SensorName) -> bool:
    return any(c in v for _, v in s.tags() for c in JAVA_LINE_BREAKS)


def _pair_split(s: SensorName) -> bool:
    """Whether a greedy ``user=(.+), client-id=`` ends inside the client-id of a (user, client-id) quota-id."""
    return bool(s.user) and ", client-id=" in jmx_sanitize(s.client_id)


def _type_split(s: SensorName) -> bool:
    """Whether the JMX exporter example's greedy ``type=(.+)`` swallows part of the client-id: with a user, only
    where ``, user=(.+), client-id=(.+)`` can match inside it, each group holding a character at least (a
    ``, user=`` right before ``, client-id=`` leaves the type alone, and the user takes the rest: MISREAD)."""
    quoted = jmx_sanitize(s.client_id)
    if not s.user:
        return ", client-id=" in quoted
    return re.search(", user=.+, client-id=.", quoted, re.S) is not None


_IP_GROUP = "socket-server-metrics"
_NO_SOCKET = Loss(
    f"ip connection rates ({IP_USAGE[1]}) and the listeners' ip connection throttle: no rule "
    "matches socket-server-metrics' ip= and listener= MBeans",
    DROPPED,
    _groups(_IP_GROUP),
    unmatched=True,
)
_LINE_BREAK = Loss(
    "a client-id holding a line break other than \\n (\\r, U+0085, U+2028, U+2029): the rules' '.' stops at it, "
    "no rule matches, the sensor is not exported",
    DROPPED,
    _line_break,
    unmatched=True,
)


@dataclass(frozen=True, slots=True)
class Scheme:
    """One exporter configuration's names for the quota sensors."""

    name: str
    title: str  # in words, with where its configuration comes from
    #: series name -> (our metric: Sample.metric, the quota type; "" when a label carries it, or for ip sensors)
    series: Mapping[str, tuple[str, str]]
    quota_type_label: str = ""
    user_labels: tuple[str, ...] = ()
    client_id_labels: tuple[str, ...] = ()
    ip_label: str = ""
    listener_label: str = ""
    cannot_show: tuple[Loss, ...] = ()
    #: a regex of series names that carry quota sensors in a form no label gives back (the scheme is unreadable)
    unreadable: str = ""
    fix: str = ""  # what to do about an unreadable scheme

    def loss(self, sensor: SensorName, *, ours_after: bool = False) -> Loss | None:
        """The first of :attr:`cannot_show` that applies to ``sensor`` (None: the scheme shows it as it is);
        ``ours_after``: with kquotactl's rules pasted after the configuration's, which export what no rule of
        it matches."""
        found = next((loss for loss in self.cannot_show if loss.applies(sensor)), None)
        return None if found is not None and ours_after and found.unmatched else found

    def sample(self, r: Reading) -> Sample:
        """The :class:`Sample` of a reading of one of :attr:`series`, its labels as the exporter wrote them (kept
        raw: the model decodes them, whichever scheme they came from)."""
        metric, quota_type = self.series[r.name]
        labels = r.labels
        user = client_id = ""
        for n in self.user_labels:
            if n in labels:
                user = labels[n]
                break
        for n in self.client_id_labels:
            if n in labels:
                client_id = labels[n]
                break
        return Sample(
            metric,
            r.broker,
            r.value,
            quota_type or labels.get(self.quota_type_label, ""),
            user,
            client_id,
            labels.get(self.ip_label, "") if self.ip_label else "",
            r.ts,
            labels.get(self.listener_label, "") if self.listener_label else "",
            r.peak,
        )


_CLIENT_METRICS = sorted({metric for metric, _ in USAGE.values()} | {THROTTLE})

KQUOTACTL = Scheme(
    "kquotactl",
    "kquotactl's own rules (jmx-exporter-kafka-quotas.yaml, shipped with kquotactl)",
    {
        **{METRIC_PREFIX + m: (m, "") for m in _CLIENT_METRICS},
        METRIC_PREFIX + IP_USAGE[0]: (IP_USAGE[0], ""),
        METRIC_PREFIX + LISTENER_THROTTLE: (LISTENER_THROTTLE, ""),
    },
    quota_type_label="quota_type",
    user_labels=("user",),
    client_id_labels=("client_id",),
    ip_label="ip",
    listener_label="listener",
)
#: the Prometheus JMX exporter's Kafka example (examples/kafka-2_0_0.yml; the KRaft example's quota rules are the
#: same, but its catch-all kafka.server rules come first: JMX_EXPORTER_KRAFT)
JMX_EXPORTER_EXAMPLE = Scheme(
    "jmx-exporter-example",
    "the Prometheus JMX exporter's Kafka example (prometheus/jmx_exporter examples/kafka-2_0_0.yml)",
    {"kafka_server_quota_" + m: (m, "") for m in _CLIENT_METRICS},
    quota_type_label="resource",
    user_labels=("user",),
    client_id_labels=("clientId", "clientid"),  # clientid: the same rules with lowercaseOutputLabelNames
    cannot_show=(
        _NO_SOCKET,
        _LINE_BREAK,
        Loss(
            "a client-id holding ', client-id=' (as JMX quotes it) with no user, or with a user ', user=' then "
            "', client-id=' with a character between: the rules' greedy type=(.+) takes the MBean name up to "
            "it, and no quota type reads from the resource label",
            DROPPED,
            _type_split,
        ),
        Loss(
            "a (user, client-id) quota-id whose client-id holds ', client-id=' (as JMX quotes it): the greedy "
            "user=(.+) takes the MBean name up to it, and the sensor reads as another quota-id",
            MISREAD,
            _pair_split,
        ),
    ),
)
_CONFLUENT_TYPES = ("Produce", "Fetch", "Request")  # the config's type=(Produce|Fetch|Request)
CONFLUENT = Scheme(
    "confluent",
    "Confluent's jmx-monitoring-stacks (shared-assets/jmx-exporter/kafka_broker.yml)",
    {f"kafka_server_{t.lower()}_{m}": (m, t) for t in _CONFLUENT_TYPES for m in (USAGE[t][0], THROTTLE) if t in USAGE},
    user_labels=("user",),
    client_id_labels=("client_id",),
    cannot_show=(
        Loss(
            f"controller mutations ({USAGE['ControllerMutation'][1]}): the quota rules match "
            "type=Produce|Fetch|Request only",
            DROPPED,
            lambda s: s.group not in _CONFLUENT_TYPES and s.group != _IP_GROUP,
            unmatched=True,
        ),
        _NO_SOCKET,
        _LINE_BREAK,
        Loss(
            "a (user, client-id) quota-id whose client-id holds ', client-id=' (as JMX quotes it): the greedy "
            "user=(.+) takes it, and the sensor reads as another quota-id",
            MISREAD,
            _pair_split,
        ),
    ),
)
#: the JMX exporter's KRaft example (examples/kafka-kraft-3_0_0.yml): its kafka.server<type=(.+)><>([a-z-]+) rule
#: comes before the quota rules and folds the whole MBean name into the metric name
JMX_EXPORTER_KRAFT = Scheme(
    "jmx-exporter-kraft-example",
    "the Prometheus JMX exporter's KRaft example (prometheus/jmx_exporter examples/kafka-kraft-3_0_0.yml)",
    {},
    unreadable=r"kafka_server_(?:produce|fetch|request|controllermutation)_(?:user|client_id)_.+_"
    r"(?:byte_rate|throttle_time|request_time|mutation_rate)"
    r"|kafka_server_socket_server_metrics_(?:ip_.+_connection_accept_rate|listener_.+_ip_connection_accept_throttle_time)",
    fix="each quota-id is folded into the metric name, which no label gives back: put kquotactl's rules "
    "(jmx-exporter-kafka-quotas.yaml, shipped with kquotactl) first in that configuration",
)

#: every scheme, the most complete first: where two give the same sensor of a broker, the first is kept
SCHEMES: tuple[Scheme, ...] = (KQUOTACTL, JMX_EXPORTER_EXAMPLE, CONFLUENT, JMX_EXPORTER_KRAFT)
_BY_NAME: dict[str, Scheme] = {name: s for s in SCHEMES for name in s.series}
_RANK = {s.name: i for i, s in enumerate(SCHEMES)}
_UNREADABLE = [(re.compile(s.unreadable), s) for s in SCHEMES if s.unreadable]


def scheme_of(name: str) -> Scheme | None:
    """The scheme a series name belongs to (None: not a quota sensor of any)."""
    return _BY_NAME.get(name) or _unreadable_scheme(name)


@functools.lru_cache(maxsize=4096)  # the other series of a broker's exposition, scrape after scrape
def _unreadable_scheme(name: str) -> Scheme | None:
    return next((s for pattern, s in _UNREADABLE if pattern.fullmatch(name)), None)


def _alternatives(names: Iterable[str]) -> str:
    return "|".join(sorted(re.escape(n) for n in names))


#: every quota sensor series of every scheme, as a PromQL selector
SELECTOR = (
    '{__name__=~"'
    + "|".join([_alternatives(_BY_NAME), *(s.unreadable for s in SCHEMES if s.unreadable)]).replace("\\", "\\\\")
    + '"}'
)


def selector(metrics: Iterable[str]) -> str:
    """A PromQL selector of the series, in every scheme, that carry our ``metrics`` (``Sample.metric`` names)."""
    wanted = set(metrics)
    names = [n for n, scheme in _BY_NAME.items() if scheme.series[n][0] in wanted]
    return '{__name__=~"' + _alternatives(names).replace("\\", "\\\\") + '"}'


class Reading(NamedTuple):
    """One value of one series in an answer (a scrape, a query): its name and labels as the exporter wrote them
    (``__name__`` and ``instance`` aside), the broker, the time of a range point, a range's peak usage."""

    name: str
    labels: Mapping[str, str]
    value: float
    broker: str
    ts: float = 0.0
    peak: float = math.nan


class UnreadableScheme(QuotaError):
    """A broker's exporter names the quota sensors in a form kquotactl cannot read back."""

    def __init__(self, broker: str, scheme: Scheme, example: str) -> None:
        self.broker, self.scheme, self.example = broker, scheme, example
        super().__init__(
            f"{broker}: the exporter names the quota sensors as {scheme.title} does (e.g. {example}): {scheme.fix}"
        )


def to_samples(readings: Iterable[Reading]) -> list[Sample]:
    """The quota sensors' samples of one answer (a scrape, a query), whichever schemes named them: one per sensor
    of a broker (:func:`identity`, and ``ts``), where two schemes gave it the one first in :data:`SCHEMES`. A
    broker whose quota sensors are all in an unreadable scheme is refused (:class:`UnreadableScheme`): it would
    read as a broker without quota-ids."""
    samples: list[Sample] = []
    ranks: list[int] = []
    schemes_of: dict[str, set[str]] = {}  # broker -> the readable schemes it has series of
    unreadable: dict[str, tuple[Scheme, str]] = {}
    for r in readings:
        scheme = _BY_NAME.get(r.name)
        if scheme is None:
            if (other := _unreadable_scheme(r.name)) is not None:
                unreadable.setdefault(r.broker, (other, r.name))
            continue
        seen = schemes_of.get(r.broker)
        if seen is None:
            seen = schemes_of[r.broker] = set()
        if scheme.name not in seen:
            seen.add(scheme.name)
        samples.append(scheme.sample(r))
        ranks.append(_RANK[scheme.name])
    for broker, (scheme, example) in sorted(unreadable.items()):
        if broker not in schemes_of:
            raise UnreadableScheme(broker, scheme, example)
    if all(len(seen) == 1 for seen in schemes_of.values()):
        return samples  # one scheme a broker: no sensor twice
    best: dict[tuple[object, ...], tuple[int, Sample]] = {}
    for rank, sample in zip(ranks, samples, strict=True):
        key = (*identity(sample), sample.ts)
        if key not in best or rank < best[key][0]:
            best[key] = (rank, sample)
    return [sample for _, sample in best.values()]


def metric_of(name: str) -> str:
    """Our metric (``Sample.metric``) of a readable series name; "" for others."""
    found = _BY_NAME.get(name)
    return found.series[name][0] if found else ""
