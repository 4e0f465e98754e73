"""Who is throttled now, as a pure function: the brokers' quota sensors joined with the limits that apply.

Input: :class:`Sample` values, one per broker and sensor, as the JMX exporter rules
(``jmx-exporter-kafka-quotas.yaml``) name them, whether read from Prometheus or scraped from the exporters.
Output: one :class:`QuotaIdRow` per quota-id (the broker's metric tags: user/client-id, or an ip), each quota type
observed with its value per broker and summed, the average throttle time the broker applied, and the limit that
applies with the level it comes from: the explain resolution (:class:`kquotactl.core.precedence.QuotaIndex`),
resolved for the quota-id's own names exactly as the broker's ``quotaLimit`` does for those tags. Rows are sorted
by throttle (largest first). No I/O here.

The sensor tags are the broker's: the user is *sanitized* (``alice%40corp``, :func:`kquotactl.core.sanitizer.
sanitize`), the client-id and the ip (``InetAddress.getHostAddress``) raw; JmxReporter JMX-quotes any tag value an
ObjectName cannot hold bare (``"a,b"``, an IPv6 ``"0:0:0:0:0:0:0:1"``). All are decoded back to the names a quota
entity uses (tests/test_oracle_exporter.py holds this to Kafka's naming and the real exporter).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kquotactl.core.explain import level_pattern, level_words
from kquotactl.core.keys import KEYS, KeyScope, Number
from kquotactl.core.precedence import QuotaIndex, Resolution, Sharing
from kquotactl.core.sanitizer import desanitize
from kquotactl.core.throttle import DEFAULT_WINDOW_NUM, DEFAULT_WINDOW_SIZE_SECONDS
from kquotactl.core.throttlemath import quota_throttle_ms
from kquotactl.core.wording import shown_name
from kquotactl.impact.replay import BROKER_COLUMN, MUTATIONS_COLUMN
from kquotactl.impact.replay import USAGE as TRAFFIC_USAGE

#: exporter metric (``kafka_quota_<name>``) that carries each quota type's usage, and the quota key it is held to
#: (the registry's :attr:`~kquotactl.core.keys.QuotaKey.sensor`)
USAGE: dict[str, tuple[str, str]] = {
    v.sensor.quota_type: (v.sensor.metric, k)
    for k, v in KEYS.items()
    if v.sensor is not None and v.kind is KeyScope.CLIENT
}
#: the per-ip connection creation rate's quota type (not in the sensor's tags) and (metric, key)
IP_TYPE, IP_USAGE = next(
    (v.sensor.quota_type, (v.sensor.metric, k))
    for k, v in KEYS.items()
    if v.sensor is not None and v.kind is KeyScope.IP
)
THROTTLE = "throttle_time"
#: a listener's throttle of ip connections: the only place a throttled ip connection shows, as the broker takes it
#: back out of the ip's rate (ConnectionQuotas.recordIpConnectionMaybeThrottle: ``unrecord`` on the ip's sensor)
LISTENER_THROTTLE = "ip_connection_accept_throttle_time"
LISTENER_APPLIES = "the ip's own limit (ips/<ip>, else ips/<default>): not told per ip"
LISTENER_NOTE = (
    "ip connections throttled on this listener: the broker takes a throttled connection back out of its ip's "
    "connection-accept-rate, so no ip row shows it"
)
#: quota types whose throttled traffic stays in the usage sensor (recorded, then the answer is delayed): Produce
#: bytes, Request time. A throttled Fetch's bytes are un-recorded (ClientQuotaManager.unrecordQuotaSensor), a
#: strict ControllerMutation is checked before it is recorded, a throttled ip connection is un-recorded. A Request
#: throttle may also be the controller's, forwarded (FORWARDED_NOTE), which the request time does not show.
RECORDED_WHEN_THROTTLED = frozenset({"Produce", "Request"})
ONLY_OWN_THROTTLE = frozenset({"Produce"})  # a throttle time no other quota writes to
#: The rule for "throttled now". ``throttle-time`` is an Avg over metrics.num.samples × metrics.sample.window.ms
#: (2 × 30 s by default): it still shows a throttle up to a minute after the last one, so a throttle time alone is
#: not "now". The broker throttles only a rate above the limit, and a throttle lasts until the rate over the quota
#: window is back at the limit; once traffic stops, that rate drains by a tenth of the limit each tenth of the
#: window. So where throttled traffic stays recorded, a usage of at least CURRENT_SHARE × limit says "throttled
#: now, or within the last tenth of a quota window" (NOW), and less says the throttle time is history (PAST; for
#: Request: RECENT, it may be a forwarded one). Where throttled traffic is un-recorded the usage cannot tell:
#: RECENT (throttled at some point in the last metrics window, maybe now).
CURRENT_SHARE = 0.9
NOW, RECENT, PAST = "now", "recent", "past"


def throttle_state(quota_type: str, usage: float, throttle_ms: float, limit: float | None) -> str | None:
    """NOW, RECENT or PAST for a broker's throttle time of one quota type (None: no throttle), by the rule of
    :data:`CURRENT_SHARE`."""
    if not throttle_ms > 0:
        return None
    if quota_type in RECORDED_WHEN_THROTTLED and limit is not None and usage >= CURRENT_SHARE * limit:
        return NOW
    return PAST if quota_type in ONLY_OWN_THROTTLE and limit is not None else RECENT


def strongest(states: Iterable[str | None]) -> str | None:
    """NOW if any of ``states`` is, else RECENT, else PAST, else None: the throttle state of several figures."""
    found = set(states)
    return next((s for s in (NOW, RECENT, PAST) if s in found), None)


#: a KRaft broker forwards CreateTopics/CreatePartitions/DeleteTopics to the controller and records the throttle of
#: the answer (the controller's controller_mutation_rate) on its own Request sensor
#: (RequestHandlerHelper.sendForwardedResponse): a Request throttle with no request_percentage limit is that
FORWARDED_NOTE = (
    "forwarded: the controller's throttle (controller_mutation_rate), recorded on the broker's Request sensor"
)
METRIC_PREFIX = "kafka_quota_"


@dataclass(frozen=True, slots=True)
class Sample:
    """One sensor value of one broker, labels as the exporter wrote them (user sanitized, client-id maybe quoted)."""

    metric: str  # without the kafka_quota_ prefix: byte_rate, throttle_time, request_time, ...
    broker: str
    value: float
    quota_type: str = ""  # Produce, Fetch, Request, ControllerMutation ("" for the per-ip sensor)
    user: str = ""
    client_id: str = ""
    ip: str = ""
    ts: float = 0.0  # epoch seconds of a range query's point (0 for an instant value)
    listener: str = ""
    peak: float = math.nan  # a usage's largest reading over a range query (the value is the range's average)


def sample_from_labels(
    name: str, labels: Mapping[str, str], value: float, broker: str, ts: float = 0.0
) -> Sample | None:
    """A :class:`Sample` from an exporter series (``kafka_quota_*`` name and labels); None for other series."""
    if not name.startswith(METRIC_PREFIX):
        return None
    return Sample(
        metric=name[len(METRIC_PREFIX) :],
        broker=broker,
        value=value,
        quota_type=labels.get("quota_type", ""),
        user=labels.get("user", ""),
        client_id=labels.get("client_id", ""),
        ip=labels.get("ip", ""),
        ts=ts,
        listener=labels.get("listener", ""),
    )


def jmx_unquote(value: str) -> str:
    """Undo ``javax.management.ObjectName.quote`` (Kafka's ``Sanitizer.jmxSanitize`` quotes what it cannot keep)."""
    if len(value) < 2 or not (value.startswith('"') and value.endswith('"')):
        return value
    out: list[str] = []
    chars = iter(value[1:-1])
    for ch in chars:
        if ch == "\\":
            nxt = next(chars, "")
            out.append("\n" if nxt == "n" else nxt)
        else:
            out.append(ch)
    return "".join(out)


@dataclass(frozen=True, slots=True)
class QuotaIdKey:
    """A quota-id with decoded names: (user, client-id) for client quotas, or an ip; or a listener, for the ip
    connections it throttled (no ip is named for those)."""

    user: str = ""
    client_id: str = ""
    ip: str = ""
    listener: str = ""

    def to_json(self) -> dict[str, str]:
        if self.listener:
            return {"listener": self.listener}
        if self.ip:
            return {"ip": self.ip}
        return {"user": self.user, "client-id": self.client_id}

    def sort_key(self) -> tuple[str, str, str, str]:
        return (self.user, self.client_id, self.ip, self.listener)

    def words(self) -> str:
        if self.listener:
            return f"ip connections on listener {shown_name(self.listener)}"
        if self.ip:
            return f"ip {shown_name(self.ip)}"
        parts = []
        if self.user:
            parts.append(f"user {shown_name(self.user)}")
        if self.client_id:
            parts.append(f"client-id {shown_name(self.client_id)}")
        return ", ".join(parts) or "(no user, no client-id)"


@dataclass(slots=True)
class BrokerFigure:
    usage: float = 0.0
    throttle_ms: float = 0.0
    peak: float = math.nan  # the usage's largest reading over a range query (NaN: an instant reading)


@dataclass(slots=True)
class QuotaUse:
    """One quota type of one quota-id: usage and throttle per broker, summed, and the limit that applies."""

    quota_type: str
    key: str
    resolution: Resolution
    brokers: dict[str, BrokerFigure] = field(default_factory=dict)

    @property
    def usage(self) -> float:
        """Summed over brokers (each broker enforces its limit on its own share: quotas are per broker)."""
        return sum(b.usage for b in self.brokers.values())

    @property
    def throttle_ms(self) -> float:
        """The largest average throttle time any broker applied that is not history (:func:`throttle_state`)."""
        return self._throttle_ms(self._states())

    def _states(self) -> dict[str, str | None]:
        """:meth:`state` of each broker's figure, by broker."""
        return {b: self.state(f) for b, f in self.brokers.items()}

    def _throttle_ms(self, states: dict[str, str | None]) -> float:
        return max((self.brokers[b].throttle_ms for b, s in states.items() if s in (NOW, RECENT)), default=0.0)

    @property
    def limit(self) -> Number | None:
        return self.resolution.limit

    def state(self, fig: BrokerFigure) -> str | None:
        """:func:`throttle_state` of one broker's figure (over a range: its largest usage)."""
        usage = fig.usage if math.isnan(fig.peak) else max(fig.usage, fig.peak)
        limit = None if self.limit is None else float(self.limit)
        return throttle_state(self.quota_type, usage, fig.throttle_ms, limit)

    @property
    def throttle(self) -> str | None:
        """NOW if any broker throttles now, else RECENT, else PAST (a throttle time that is history), else None."""
        return strongest(self._states().values())

    @property
    def note(self) -> str | None:
        return self._note(self.throttle_ms)

    def _note(self, throttle_ms: float) -> str | None:
        if self.quota_type == LISTENER_THROTTLE:
            return LISTENER_NOTE
        if self.quota_type == "Request" and self.limit is None and throttle_ms > 0:
            return FORWARDED_NOTE
        return None

    @property
    def applies(self) -> str:
        return LISTENER_APPLIES if self.quota_type == LISTENER_THROTTLE else level_words(self.resolution)

    def to_json(self) -> dict[str, Any]:
        r = self.resolution
        states = self._states()  # each broker's state once, for every field that reads it
        throttle_ms = self._throttle_ms(states)
        note = self._note(throttle_ms)
        return {
            "quota_type": self.quota_type,
            "key": self.key,
            "usage": self.usage,
            "throttle_ms": throttle_ms,
            "throttle": strongest(states.values()),
            "limit": r.limit,
            "level": r.level,
            "level_pattern": level_pattern(r.level, ip=r.sharing is Sharing.IP) if r.level is not None else None,
            "entity_path": r.entity_path,
            "applies": self.applies,
            "brokers": {
                b: {"usage": f.usage, "throttle_ms": f.throttle_ms, "throttle": states[b]}
                for b, f in sorted(self.brokers.items())
            },
            **({"note": note} if note else {}),
        }


@dataclass(slots=True)
class QuotaIdRow:
    quota_id: QuotaIdKey
    uses: list[QuotaUse]

    @property
    def throttle_ms(self) -> float:
        return max((u.throttle_ms for u in self.uses), default=0.0)

    @property
    def throttled(self) -> bool:
        """Throttled now, or recently where the sensors cannot tell (:data:`CURRENT_SHARE`); not for history."""
        return self.throttle_ms > 0

    @property
    def throttle(self) -> str | None:
        return strongest(u.throttle for u in self.uses)

    def to_json(self) -> dict[str, Any]:
        quotas = [u.to_json() for u in self.uses]  # each use's figures once: the row's are read from them
        throttle_ms = max((q["throttle_ms"] for q in quotas), default=0.0)
        return {
            "quota_id": self.quota_id.to_json(),
            "throttled": throttle_ms > 0,
            "throttle": strongest(q["throttle"] for q in quotas),
            "throttle_ms": throttle_ms,
            "quotas": quotas,
        }


def _finite(v: float) -> float:
    return v if math.isfinite(v) else 0.0  # an Avg/Rate with no sample in its window reads NaN


def _user(label: str) -> str:
    """The user a sensor's (sanitized, maybe JMX-quoted) tag names; kept as written when it is not an escape
    the broker could have made (a rules file that rewrites labels, say) rather than failing the whole view."""
    raw = jmx_unquote(label)
    try:
        return desanitize(raw)
    except ValueError:
        return raw


def _use_for(s: Sample, index: QuotaIndex, uses: dict[tuple[QuotaIdKey, str], QuotaUse]) -> QuotaUse | None:
    """The :class:`QuotaUse` a sample belongs to (created and resolved on first sight); None for a sensor that is
    not per quota-id, or a metric that is neither the quota type's usage nor its throttle."""
    if s.listener:
        if s.metric != LISTENER_THROTTLE:
            return None
        qtype, usage_metric, key = LISTENER_THROTTLE, LISTENER_THROTTLE, IP_USAGE[1]
        qid = QuotaIdKey(listener=jmx_unquote(s.listener))
    elif s.ip:
        qtype, (usage_metric, key) = IP_TYPE, IP_USAGE
        qid = QuotaIdKey(ip=jmx_unquote(s.ip))  # an IPv6 address has ':': JmxReporter quotes it
    elif s.quota_type in USAGE:
        qtype, (usage_metric, key) = s.quota_type, USAGE[s.quota_type]
        qid = QuotaIdKey(user=_user(s.user), client_id=jmx_unquote(s.client_id))
    else:
        return None
    if s.metric not in (usage_metric, THROTTLE):
        return None
    use = uses.get((qid, qtype))
    if use is None:
        if qid.listener:  # every ip on it, each held to its own limit
            res = Resolution(key, None, None, None, Sharing.IP, None)
        elif qid.ip:
            res = index.resolve_ip(qid.ip, key)
        else:
            res = index.resolve(key, qid.user, qid.client_id)
        use = uses[(qid, qtype)] = QuotaUse(qtype, key, res)
    return use


def top_rows(samples: Iterable[Sample], index: QuotaIndex) -> list[QuotaIdRow]:
    """Group the samples by quota-id and quota type, join each with its limit; sorted by throttle, then name.

    Labels are decoded and resolved once per distinct series, not per sample (a series has a sample per broker)."""
    uses: dict[tuple[QuotaIdKey, str], QuotaUse] = {}
    by_labels: dict[tuple[str, str, str, str, str, str], QuotaUse | None] = {}
    for s in samples:
        labels = (s.metric, s.quota_type, s.user, s.client_id, s.ip, s.listener)
        if labels in by_labels:
            use = by_labels[labels]
        else:
            use = by_labels[labels] = _use_for(s, index, uses)
        if use is None:
            continue
        fig = use.brokers.get(s.broker)
        if fig is None:
            fig = use.brokers[s.broker] = BrokerFigure()
        if s.metric in (THROTTLE, LISTENER_THROTTLE):
            fig.throttle_ms = _finite(s.value)
        else:  # the usage metric (_use_for let no other through)
            fig.usage = _finite(s.value)
            fig.peak = s.peak
    rows: dict[QuotaIdKey, QuotaIdRow] = {}
    for (qid, _), use in uses.items():
        rows.setdefault(qid, QuotaIdRow(qid, [])).uses.append(use)
    keyed = []
    for row in rows.values():
        row.uses.sort(key=lambda u: (-u.throttle_ms, u.key))
        # throttled first; then client quota-ids before ips and listeners, by name
        kind = 2 if row.quota_id.listener else 1 if row.quota_id.ip else 0
        keyed.append(((-row.throttle_ms, kind, row.quota_id.sort_key()), row))
    keyed.sort(key=lambda kr: kr[0])
    return [row for _, row in keyed]


#: Kafka's default quota window: quota.window.num (11) samples of quota.window.size.seconds (1 s)
QUOTA_WINDOW_MS = float(DEFAULT_WINDOW_NUM * DEFAULT_WINDOW_SIZE_SECONDS * 1000)


def predicted_throttle_ms(usage: float, throttle_ms: float, limit: float, window_ms: float = QUOTA_WINDOW_MS) -> float:
    """The throttle a quota-id should get under ``limit`` given what it did before: usage ``usage`` while throttled
    ``throttle_ms``. The broker's throttle is ``(rate - limit) / limit * window``
    (:func:`kquotactl.core.throttlemath.quota_throttle_ms`), so the demand behind a throttled usage is
    ``usage * (1 + throttle / window)``; that demand at the new limit."""
    if limit <= 0:
        return 0.0
    demand = usage * (1 + throttle_ms / window_ms)
    return float(max(0, quota_throttle_ms(demand, limit, window_ms)))


def stage_regressions(
    before: Iterable[QuotaIdRow],
    after: Iterable[QuotaIdRow],
    *,
    window_ms: float = QUOTA_WINDOW_MS,
    tolerance: float = 0.25,
    slack_ms: float = 1000.0,
) -> list[str]:
    """The quota-ids a stage made worse than it predicts (the staged apply's regression rule).

    For each quota-id and quota type throttled after the stage: the throttle :func:`predicted_throttle_ms` gives for
    its usage and throttle *before* the stage at the limit that applies *after* it (no figure before: no usage, so
    nothing predicted). A regression is an observed throttle above that prediction by more than ``tolerance``
    (25 %) plus ``slack_ms`` (1 s: sensors average over the window, traffic is noisy). A quota-id the stage did not
    touch is held to the same rule, with its unchanged limit: it may not get worse than it was.

    Only a current throttle counts (``throttle-time`` averages over a minute, :data:`CURRENT_SHARE`): a PAST
    throttle time is history, before the stage (no demand behind it) as after (not the stage's doing); a RECENT
    one (the usage cannot tell) counts after the stage only if its average moved since the look before it."""
    was = {(r.quota_id, u.quota_type): u for r in before for u in r.uses}
    out: list[str] = []
    for row in after:
        for use in row.uses:
            if use.throttle_ms <= 0 or use.limit is None:
                continue
            prev = was.get((row.quota_id, use.quota_type))
            for broker, fig in sorted(use.brokers.items()):  # limits are per broker: so is the prediction
                old = prev.brokers.get(broker) if prev else None
                state = use.state(fig)
                if state not in (NOW, RECENT) or (state == RECENT and old and old.throttle_ms == fig.throttle_ms):
                    continue
                was_throttle = old.throttle_ms if prev and old and prev.state(old) in (NOW, RECENT) else 0.0
                predicted = predicted_throttle_ms(old.usage, was_throttle, float(use.limit), window_ms) if old else 0.0
                allowed = predicted * (1 + tolerance) + slack_ms
                if fig.throttle_ms > allowed:
                    out.append(
                        f"{row.quota_id.words()}: {use.key} throttled {fig.throttle_ms:.0f} ms on broker {broker} "
                        f"after the stage, {predicted:.0f} ms predicted from its usage before it "
                        f"(allowed up to {allowed:.0f} ms)"
                    )
    return out


# -- the sensors as an impact traffic table (impact run --from-prometheus) -------------------------------------


def _traffic_sensors() -> dict[tuple[str, str], tuple[str, float]]:
    """(exporter metric, quota type) -> (traffic column, column units per sensor unit and second).

    A sensor's unit is the quota key's unit (bytes/s, % of a thread, partitions/s, connections/s); the impact
    model reads a column as ``units = column × scale`` and a rate as ``units / (divisor × N·S)``, so a sensor value
    ``v`` held for one second is ``v × divisor / scale`` of the column (request time: 1 % of a thread for a
    second = 10 ms)."""
    out: dict[tuple[str, str], tuple[str, float]] = {}
    for qtype, (metric, key) in USAGE.items():
        usage = TRAFFIC_USAGE.get(key)
        if usage is not None:
            out[(metric, qtype)] = (usage.column, usage.divisor / usage.scale)
        else:  # a key not in request samples: carried in the table, not replayed (impact.replay.NOT_MODELLED)
            out[(metric, qtype)] = (MUTATIONS_COLUMN, 1.0)
    ip_metric, ip_key = IP_USAGE
    ip_usage = TRAFFIC_USAGE[ip_key]
    out[(ip_metric, "")] = (ip_usage.column, ip_usage.divisor / ip_usage.scale)
    return out


TRAFFIC_SENSORS = _traffic_sensors()
#: the exporter metrics a traffic table is rebuilt from (throttle times are the broker's answer, not traffic)
TRAFFIC_METRICS: tuple[str, ...] = tuple(sorted({metric for metric, _ in TRAFFIC_SENSORS}))
TRAFFIC_COLUMNS: tuple[str, ...] = tuple(dict.fromkeys(col for col, _ in TRAFFIC_SENSORS.values()))


def traffic_columns(samples: Iterable[Sample], step: float, sample_s: int) -> dict[str, list[Any]]:
    """:func:`sensor_traffic` of readings one at a time (each :class:`Sample` with its ``ts``), as Python lists."""
    series: dict[tuple[str, ...], tuple[Sample, list[float], list[float]]] = {}
    for s in samples:
        found = series.get(key := identity(s))
        if found is None:
            found = series[key] = (s, [], [])
        found[1].append(s.ts)
        found[2].append(s.value)
    return {name: list(values) for name, values in sensor_traffic(series.values(), step, sample_s).items()}


def identity(s: Sample) -> tuple[str, ...]:
    """What makes two samples the same sensor of the same broker, whichever scheme named them."""
    return (s.broker, s.metric, s.quota_type, s.user, s.client_id, s.ip, s.listener)


def sensor_traffic(series: Iterable[tuple[Sample, Any, Any]], step: float, sample_s: int) -> dict[str, Any]:
    """The sensors' readings as traffic-table columns (``ts``, ``broker``, ``user``, ``client_id``, ``ip`` and the
    usage columns of :data:`TRAFFIC_COLUMNS`, numpy arrays), one row per broker, quota-id and sample of
    ``sample_s`` seconds. ``series``: each sensor's names (a :class:`Sample`; its value unused), the times and the
    values of its readings (sequences or arrays, in time order), in the order they were read.

    A reading ``v`` at time ``t`` of a range query with step ``step`` is held over ``[t − step, t)``: each sample
    ``[k·S, (k+1)·S)`` it overlaps gets ``v × overlap`` (in the column's units), so a sample's usage divided by
    ``S`` is the time-weighted mean of the readings over it. A reading is the broker's rate over its quota window:
    replay the table with a ``windowed`` :class:`kquotactl.impact.replay.Window` (each sample's rate compared with
    the limit as it is). Names are decoded to what a quota entity uses (the user desanitized, the client-id
    JMX-unquoted), as the traffic table holds raw names. Zero, negative and non-finite readings add no usage.

    Computed column-wise (numpy: no Python step per reading, for ranges of millions of them); each row's usage
    adds its readings in time order, series by series, so the sums are the same floats whatever the chunking."""
    import numpy as np

    names: dict[tuple[str, str, str, str], int] = {}  # (broker, user, client, ip) -> its id, in order seen
    decoded: dict[tuple[str, str], tuple[str, str]] = {}
    column_ids = {c: i for i, c in enumerate(TRAFFIC_COLUMNS)}
    span = math.ceil(step / sample_s) + 1  # the most samples one reading overlaps
    offsets = np.arange(span, dtype=np.float64)
    parts: list[tuple[Any, Any, int, Any]] = []  # (sample k, name id, column id, usage) a reading and sample
    for s, times, values in series:
        target = TRAFFIC_SENSORS.get((s.metric, "" if s.ip else s.quota_type))
        if target is None:
            continue
        column, factor = target
        ts = np.asarray(times, dtype=np.float64)
        v = np.asarray(values, dtype=np.float64)
        keep = np.isfinite(v) & (v > 0)
        if not keep.any():
            continue
        ts, v = ts[keep], v[keep]
        if s.ip:
            user, client = "", ""
        else:
            pair = decoded.get((s.user, s.client_id))
            if pair is None:
                pair = decoded[(s.user, s.client_id)] = (_user(s.user), jmx_unquote(s.client_id))
            user, client = pair
        nid = names.setdefault((s.broker, user, client, jmx_unquote(s.ip)), len(names))
        begin = ts - step
        k = np.floor(begin / sample_s)[:, None] + offsets[None, :]  # a row a reading, a column a sample it may touch
        lo = k * sample_s
        overlap = np.minimum(ts[:, None], lo + sample_s) - np.maximum(begin[:, None], lo)
        hit = overlap > 0  # row-major: readings in time order, each one's samples in order
        usage = (v[:, None] * overlap * factor)[hit]
        parts.append((k[hit], nid, column_ids[column], usage))
    ids = ("ts", BROKER_COLUMN, "user", "client_id", "ip")
    if not parts:
        empty = {c: np.array([], dtype=object) for c in ids[1:]}
        return {"ts": np.zeros(0), **empty, **{c: np.zeros(0) for c in TRAFFIC_COLUMNS}}
    by_rank = sorted(names)
    rank = np.empty(len(names), dtype=np.int64)
    rank[[names[t] for t in by_rank]] = np.arange(len(names))
    k_all = np.concatenate([p[0] for p in parts]).astype(np.int64)
    rank_all = np.concatenate([np.full(len(p[0]), rank[p[1]], dtype=np.int64) for p in parts])
    col_all = np.concatenate([np.full(len(p[0]), p[2], dtype=np.int64) for p in parts])
    usage_all = np.concatenate([p[3] for p in parts])
    k_min = int(k_all.min())
    row_key = (k_all - k_min) * len(names) + rank_all  # rows sorted by sample, then by (broker, user, client, ip)
    rows, row_of = np.unique(row_key, return_inverse=True)
    picked = rows % len(names)
    out: dict[str, Any] = {"ts": ((rows // len(names)) + k_min).astype(np.float64) * sample_s}
    for i, name in enumerate(ids[1:]):
        out[name] = np.array([t[i] for t in by_rank], dtype=object)[picked]
    for c, cid in column_ids.items():
        mine = col_all == cid
        out[c] = np.bincount(row_of[mine], weights=usage_all[mine], minlength=len(rows)).astype(np.float64)
    return out
