"""The optional topic-threshold model of the "Broker side quota (V1)" design (seed 003), as written.

A broker has ``total.bytes.in.per.sec.threshold``; topics may set ``bytes.in.per.sec.threshold``. A set whose
explicit thresholds sum above the total is rejected. Topics without one share what is left equally:
``(total − sum(explicit)) / (number of topics without one)``, recomputed whenever a topic appears (here: each topic
seen in the traffic, from its first produce). A produce request is dropped when *both* the broker's and the topic's
observed rates are above their thresholds; dropped bytes are not recorded (closed loop).

The observed rates are, as the design says, the ``OneMinuteRate`` of Yammer metrics-core 2.2.0's ``Meter`` (the
version Kafka's broker metrics use), replayed by :class:`Meter` (see there). The older quota-window rates are kept
as :data:`QUOTA_WINDOW` (:func:`replay`). Pure: no I/O.
"""

from __future__ import annotations

import bisect
import math
from collections import defaultdict, deque
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kquotactl.core.errors import UsageError
from kquotactl.core.keys import KEYS, PRODUCE_KEY, human
from kquotactl.impact.replay import Window

#: ``--topic-rate`` values: the design's Meter one-minute rate (default), or the quota window's rate
ONE_MINUTE_RATE = "one-minute-rate"
QUOTA_WINDOW = "quota-window"
TOPIC_RATES = (ONE_MINUTE_RATE, QUOTA_WINDOW)


def _rate(v: float) -> str:
    return human(KEYS[PRODUCE_KEY], v)


@dataclass(frozen=True)
class TopicConfig:
    total: float
    explicit: Mapping[str, float]
    rate: str = ONE_MINUTE_RATE  # how observed rates are measured: one of TOPIC_RATES

    def check(self) -> None:
        if not self.total > 0:
            raise UsageError("--total-threshold must be greater than 0")
        bad = sorted(t for t, v in self.explicit.items() if not v > 0)
        if bad:
            raise UsageError(f"--topic-threshold for {', '.join(bad)} must be greater than 0")
        s = sum(self.explicit.values())
        if s > self.total:
            listed = ", ".join(f"{t}={_rate(v)}" for t, v in sorted(self.explicit.items()))
            raise UsageError(
                f"rejected: the explicit topic thresholds ({listed}) sum to {_rate(s)}, {_rate(s - self.total)} above "
                f"total.bytes.in.per.sec.threshold {_rate(self.total)}; lower a topic threshold or raise "
                "--total-threshold"
            )

    def thresholds(self, topics: Iterable[str]) -> dict[str, tuple[float, bool]]:
        """Each topic's threshold and whether it is explicit."""
        topics = sorted(set(topics) | set(self.explicit))
        implicit = [t for t in topics if t not in self.explicit]
        share = (self.total - sum(self.explicit.values())) / len(implicit) if implicit else 0.0
        return {t: (self.explicit[t], True) if t in self.explicit else (share, False) for t in topics}


#: Yammer metrics-core 2.2.0 (``com.yammer.metrics.stats.EWMA``): ``M1_ALPHA = 1 - Math.exp(-5 / 60.0)``; the tick
#: interval as the double of its nanoseconds; ``Meter`` schedules ``tick()`` at fixed rate, 5 s after creation and
#: every 5 s (``scheduleAtFixedRate(..., 5, 5, SECONDS)``); rates are per nanosecond inside, × 1e9 per second.
M1_ALPHA = 1 - math.exp(-5 / 60.0)
TICK_NS = 5_000_000_000.0
TICK_US = 5_000_000  # the tick period in the replay's microsecond clock


@dataclass
class Meter:
    """The one-minute EWMA of a metrics-core 2.2.0 ``Meter``, operation for operation (bit-exact in IEEE doubles).

    ``mark(n)`` adds to the uncounted events; ``tick()`` folds them in: ``instant = uncounted / 5e9`` (per ns);
    the first tick sets the rate to ``instant``, later ones add ``alpha · (instant − rate)``. ``one_minute_rate()``
    is ``rate × 1e9`` (per second). Ticks are not lazy in 2.2.0: a scheduler thread runs them every 5 s from the
    meter's creation, whether or not anything was marked (3.x's ``tickIfNecessary`` came later).
    """

    rate: float = 0.0
    initialized: bool = False
    uncounted: int = 0
    ticks: int = 0

    def mark(self, n: int) -> None:
        self.uncounted += n

    def tick(self) -> None:
        instant = float(self.uncounted) / TICK_NS
        self.uncounted = 0
        if self.initialized:
            self.rate += M1_ALPHA * (instant - self.rate)
        else:
            self.rate = instant
            self.initialized = True
        self.ticks += 1

    def tick_to(self, ticks: int) -> None:
        """Run the scheduled ticks up to the ``ticks``-th (those at or before the time being replayed)."""
        while self.ticks < ticks:
            self.tick()

    def one_minute_rate(self) -> float:
        return self.rate * 1e9


#: One topic's produce bytes in one *cell*: requests between two consecutive changes of what the design's rule reads
#: (a tick of either meter, or a new topic changing the implicit share), so the rule decides them alike.
#: ``(topic, broker_tick, topic_tick, implicit, bytes, rows)``, for a request at ``t`` (µs):
#: ``broker_tick = (t − c_broker) // TICK_US`` and ``topic_tick = (t − c_topic) // TICK_US`` are the ticks each
#: meter has run by then (a tick at ``t`` runs before a request at ``t``); ``c_broker`` is the traffic's first
#: produce (the broker's all-topics meter), ``c_topic`` the topic's first (its meter is created then);
#: ``implicit`` = the topics without an explicit threshold whose first produce is at or before ``t``
#: (:func:`implicit_count`).
Cell = tuple[str, int, int, int, int, int]


def implicit_creations(created: Mapping[str, int], explicit: Container[str]) -> list[int]:
    """The first-produce times (µs) of the topics that share the implicit threshold, sorted."""
    return sorted(c for t, c in created.items() if t not in explicit)


def implicit_count(creations: list[int], t: int) -> int:
    """How many implicit topics exist at ``t``: those whose first produce is at or before ``t``."""
    return bisect.bisect_right(creations, t)


def replay_one_minute(cells: Iterable[Cell], created: Mapping[str, int], cfg: TopicConfig) -> dict[str, Any]:
    """The design as written (:data:`ONE_MINUTE_RATE`): per cell, in time order, drop the cell's bytes when the
    broker's ``OneMinuteRate`` > total threshold and the topic's > its threshold, else mark both meters.

    ``created``: each topic's first produce time (µs), as the engines found it. A topic without an explicit
    threshold has ``(total − sum(explicit)) / implicit`` at the time (the share recomputed as topics appear); the
    reported threshold is the share at the end. Per topic: threshold, bytes in, bytes and requests (rows) dropped,
    and the seconds of the cells whose bytes were dropped.
    """
    cfg.check()
    thr = cfg.thresholds(created)
    creations = implicit_creations(created, cfg.explicit)
    left = cfg.total - sum(cfg.explicit.values())
    start = min(created.values(), default=0)
    broker = Meter()
    meters = {t: Meter() for t in thr}
    stats: dict[str, dict[str, Any]] = {
        t: {"bytes_in": 0, "bytes_dropped": 0, "rows_dropped": 0, "seconds_dropping": 0.0} for t in thr
    }
    dropping_us: dict[str, int] = defaultdict(int)
    for topic, k_broker, k_topic, implicit, nbytes, rows in sorted(cells, key=lambda c: (c[1], c[2], c[3], c[0])):
        broker.tick_to(k_broker)
        meter = meters[topic]
        meter.tick_to(k_topic)
        st = stats[topic]
        st["bytes_in"] += nbytes
        limit = cfg.explicit[topic] if topic in cfg.explicit else left / implicit
        if broker.one_minute_rate() > cfg.total and meter.one_minute_rate() > limit:
            st["bytes_dropped"] += nbytes
            st["rows_dropped"] += rows
            lo = max(start + k_broker * TICK_US, created[topic] + k_topic * TICK_US)
            hi = min(start + (k_broker + 1) * TICK_US, created[topic] + (k_topic + 1) * TICK_US)
            if topic not in cfg.explicit:  # the share holds from the implicit-th creation to the next
                lo = max(lo, creations[implicit - 1])
                if implicit < len(creations):
                    hi = min(hi, creations[implicit])
            dropping_us[topic] += hi - lo
        else:
            broker.mark(nbytes)
            meter.mark(nbytes)
    for t, us in dropping_us.items():
        stats[t]["seconds_dropping"] = us / 1e6
    return _result(cfg, thr, stats)


def replay_quota_window(
    bytes_by: Mapping[tuple[int, str], int], first: int, last: int, cfg: TopicConfig, window: Window
) -> dict[str, Any]:
    """The quota-window variant (:data:`QUOTA_WINDOW`): rates are the client-quota model's window rates (sum of
    the previous ``N`` samples / ``N·S``, evaluated at the start of each sample, one decision per sample), not the
    design's EWMA. Per topic: threshold, bytes in, bytes dropped, seconds with drops; plus broker totals."""
    cfg.check()
    by_sample: dict[int, dict[str, int]] = defaultdict(dict)
    for (s, topic), b in bytes_by.items():
        by_sample[s][topic] = by_sample[s].get(topic, 0) + b
    topics = {t for (_, t) in bytes_by}
    thr = cfg.thresholds(topics)
    n, secs = window.num, float(window.num * window.size_s)
    hist: deque[dict[str, int]] = deque(maxlen=n)  # accepted bytes per topic, last N samples
    win: dict[str, int] = defaultdict(int)
    total_win = 0
    stats = {t: {"bytes_in": 0, "bytes_dropped": 0, "seconds_dropping": 0} for t in thr}
    for s in range(first, last + 1):
        total_rate = total_win / secs
        accepted: dict[str, int] = {}
        for topic, b in by_sample.get(s, {}).items():
            st = stats[topic]
            st["bytes_in"] += b
            if total_rate > cfg.total and win[topic] / secs > thr[topic][0]:
                st["bytes_dropped"] += b
                st["seconds_dropping"] += window.size_s
            else:
                accepted[topic] = b
        if len(hist) == n:
            for topic, b in hist[0].items():
                win[topic] -= b
                total_win -= b
        hist.append(accepted)
        for topic, b in accepted.items():
            win[topic] += b
            total_win += b
    return _result(cfg, thr, stats)


def _result(
    cfg: TopicConfig, thr: Mapping[str, tuple[float, bool]], stats: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    rows: list[dict[str, Any]] = [
        {"topic": t, "threshold": thr[t][0], "explicit": thr[t][1], **stats[t]}
        for t in sorted(thr, key=lambda t: (-stats[t]["bytes_dropped"], t))
    ]
    bytes_in = sum(r["bytes_in"] for r in rows)
    dropped = sum(r["bytes_dropped"] for r in rows)
    return {
        "total_threshold": cfg.total,
        "bytes_in": bytes_in,
        "bytes_dropped": dropped,
        "share_dropped": dropped / bytes_in if bytes_in else 0.0,
        "topics": rows,
    }


def parse_topic_thresholds(pairs: Iterable[str], parse_bytes: Any) -> dict[str, float]:
    out: dict[str, float] = {}
    for p in pairs:
        topic, sep, value = p.partition("=")
        if not sep or not topic:
            raise UsageError(f"--topic-threshold {p!r} is not TOPIC=BYTES_PER_SECOND (e.g. orders=10MiB)")
        out[topic] = float(parse_bytes(value))
    return out
