"""The optional topic-threshold model of the "Broker side quota (V1)" design (seed 003), for comparison.

A broker has ``total.bytes.in.per.sec.threshold``; topics may set ``bytes.in.per.sec.threshold``. A set whose
explicit thresholds sum above the total is rejected. Topics without one share what is left equally:
``(total − sum(explicit)) / (number of topics without one)`` — here the topics seen in the traffic. Produce
data is dropped while *both* the broker's and the topic's observed rates exceed their thresholds; dropped
data is not recorded, so the rates are of accepted bytes (closed loop, unlike the client-quota replay).

Rates are the same window rates as the client-quota model (sum of the previous ``N`` samples / ``N·S``,
evaluated at the start of each sample, per-sample decisions) rather than the design's one-minute EWMA.
Pure: no I/O.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kquotactl.core.errors import UsageError
from kquotactl.impact.model import Window


@dataclass(frozen=True)
class TopicConfig:
    total: float
    explicit: Mapping[str, float]

    def check(self) -> None:
        if not self.total > 0:
            raise UsageError("--total-threshold must be greater than 0")
        bad = sorted(t for t, v in self.explicit.items() if not v > 0)
        if bad:
            raise UsageError(f"--topic-threshold for {', '.join(bad)} must be greater than 0")
        s = sum(self.explicit.values())
        if s > self.total:
            raise UsageError(
                f"rejected: explicit topic thresholds sum to {s:,.0f} B/s, above total.bytes.in.per.sec.threshold "
                f"{self.total:,.0f} B/s; lower a topic threshold or raise --total-threshold"
            )

    def thresholds(self, topics: Iterable[str]) -> dict[str, tuple[float, bool]]:
        """Each topic's threshold and whether it is explicit."""
        topics = sorted(set(topics) | set(self.explicit))
        implicit = [t for t in topics if t not in self.explicit]
        share = (self.total - sum(self.explicit.values())) / len(implicit) if implicit else 0.0
        return {t: (self.explicit[t], True) if t in self.explicit else (share, False) for t in topics}


def replay(
    bytes_by: Mapping[tuple[int, str], int], first: int, last: int, cfg: TopicConfig, window: Window
) -> dict[str, Any]:
    """Per topic: threshold, bytes in, bytes dropped, seconds with drops; plus broker totals."""
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
