"""``verify``: did a quota change take effect. Pure: given what each broker reports and what a driven client saw,
the verdicts (no I/O, no CLI wording beyond the figures' own words).

Step 1, convergence: every broker must report the expected values for the entity (:func:`lagging`).

Step 2, a driven producer: the client sent ``sent`` (time, bytes) at a steady rate on a fresh quota-id and the broker
answered with throttle times. The simulation replays the same recordings through the broker's sampled ``Rate``
(:func:`kquotactl.core.rate.replay`, whose throttle is :func:`kquotactl.core.throttlemath.quota_throttle_ms`: the one
formula ``explain --observed`` uses through :mod:`kquotactl.core.throttle`) under the limit the cluster's quotas give
the connection. A KIP-219 client is muted for each throttle it gets, so after its first throttle the broker no longer
records what the client sends when it sends it: the comparison is the **first** throttle, *when* it comes and *how
long* it is. Both depend on the limit the broker applies (a fresh sensor crosses ``limit × 10 s`` after
``limit × 10 / rate`` seconds), so a broker still applying an old limit is told apart. The steady-state figure of
``explain --observed`` for the driven rate (:meth:`kquotactl.core.explain.ThrottleModel.throttle_ms`) is shown
next to it: what a client that ignored its throttles would get.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kquotactl.core.errors import EXIT_PENDING, QuotaError
from kquotactl.core.explain import ThrottleModel
from kquotactl.core.keys import Number
from kquotactl.core.rate import replay, sampled_stat_for
from kquotactl.core.throttle import DEFAULT_WINDOW_NUM, DEFAULT_WINDOW_SIZE_SECONDS

#: the first throttle agrees when it comes within this many ms of the simulated one ...
TOLERANCE_AT_MS = 300
#: ... and its length is within this many ms, or this fraction of the simulated length, whichever is larger;
#: both widened by one request's worth of throttle (its bytes / limit: the granularity of the recordings)
TOLERANCE_MS = 150
TOLERANCE_FRACTION = 0.25


# -- step 1: every broker reports the expected values -------------------------------------------------


@dataclass(frozen=True)
class BrokerView:
    """What one broker reports for the entity (``config`` empty: no quotas)."""

    broker: str
    config: Mapping[str, Number]


def matches(expected: Mapping[str, Number], reported: Mapping[str, Number], exact: bool) -> bool:
    """``reported`` has every expected key at its value (``exact``: and no other key)."""
    if exact:
        return dict(reported) == dict(expected)
    return all(k in reported and float(reported[k]) == float(v) for k, v in expected.items())


class NotVerified(QuotaError):
    """The change has not taken effect (a broker lags, or its throttle disagrees with the simulation): exit 2."""

    exit_code = EXIT_PENDING


def config_words(config: Mapping[str, Number]) -> str:
    """``producer_byte_rate=20000,request_percentage=50.5`` (as kafka-configs takes them), or ``no quotas``."""
    return ",".join(f"{k}={_number(v)}" for k, v in sorted(config.items())) or "no quotas"


def _number(v: Number) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def lag_message(label: str, expected: Mapping[str, Number], late: Sequence[BrokerView], waited: float) -> str:
    """One line: which brokers lag and what they report."""
    said = "; ".join(f"{v.broker} reports {config_words(v.config)}" for v in late)
    return f"{label}: not applied everywhere after {waited:.1f}s (expected {config_words(expected)}): {said}"


def lagging(expected: Mapping[str, Number], views: Sequence[BrokerView], exact: bool = False) -> list[BrokerView]:
    """The brokers that do not (yet) report ``expected``, in the order given."""
    return [v for v in views if not matches(expected, v.config, exact)]


# -- step 2: the driven client's throttle against the simulation -----------------------------------------


@dataclass(frozen=True)
class Drive:
    """What a driven client did and what the broker answered, times in ms since the drive started.

    ``sent``: (time, bytes the broker records) per request, as sent; ``throttles``: (time, ms) per response that
    carried a throttle; ``stats_avg_ms``/``stats_max_ms``: the throttle window of the client's statistics."""

    key: str
    rate: float
    seconds: float
    sent: Sequence[tuple[int, float]]
    throttles: Sequence[tuple[int, int]]
    stats_avg_ms: float = 0.0
    stats_max_ms: float = 0.0


@dataclass(frozen=True)
class DriveVerdict:
    key: str
    rate: float
    limit: float | None
    steady_state_ms: int  # explain --observed for the driven rate
    simulated_at_ms: int | None  # when the simulation throttles first (None: never within the drive)
    simulated_ms: int
    broker_at_ms: int | None  # when the broker throttled first
    broker_ms: int
    broker_avg_ms: float
    broker_max_ms: float
    tolerance_at_ms: int
    tolerance_ms: int
    agrees: bool
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "rate": self.rate,
            "limit": self.limit,
            "steady_state_throttle_ms": self.steady_state_ms,
            "simulated": {"first_throttle_at_ms": self.simulated_at_ms, "first_throttle_ms": self.simulated_ms},
            "broker": {
                "first_throttle_at_ms": self.broker_at_ms,
                "first_throttle_ms": self.broker_ms,
                "avg_throttle_ms": round(self.broker_avg_ms, 1),
                "max_throttle_ms": round(self.broker_max_ms, 1),
            },
            "tolerance": {"at_ms": self.tolerance_at_ms, "throttle_ms": self.tolerance_ms},
            "agrees": self.agrees,
            "notes": list(self.notes),
        }


def compare_drive(
    drive: Drive,
    limit: float | None,
    window_num: int = DEFAULT_WINDOW_NUM,
    window_size_seconds: int = DEFAULT_WINDOW_SIZE_SECONDS,
    kafka_version: tuple[int, ...] | None = None,
) -> DriveVerdict:
    """The first throttle the broker gave ``drive`` against the replay of its recordings under ``limit``."""
    steady = ThrottleModel({drive.key: drive.rate}, window_num, window_size_seconds, kafka_version)
    steady_ms = steady.throttle_ms(drive.key, limit)
    sim_at: int | None = None
    sim_ms = 0
    if limit is not None:
        steps = replay(
            drive.sent,
            float(limit),
            samples=window_num,
            window_ms=window_size_seconds * 1000,
            **sampled_stat_for(kafka_version),
        )
        first = next((s for s in steps if s.throttle_ms > 0), None)
        if first is not None:
            sim_at, sim_ms = first.time_ms, first.throttle_ms
    broker_at, broker_ms = drive.throttles[0] if drive.throttles else (None, 0)
    request = max((b for _, b in drive.sent), default=0.0)
    grain = int(request / limit * 1000) if limit and limit > 0 else 0  # one request's worth of throttle
    tol_at = TOLERANCE_AT_MS + grain
    tol_ms = max(TOLERANCE_MS, int(TOLERANCE_FRACTION * sim_ms)) + grain
    notes: list[str] = []
    if sim_at is None and broker_at is None:
        agrees = True
        notes.append("neither the simulation nor the broker throttled the drive")
    elif sim_at is None or broker_at is None:
        agrees = False
        notes.append(
            "the broker throttled the drive, the simulation does not"
            if sim_at is None
            else "the simulation throttles the drive, the broker did not"
        )
    else:
        agrees = abs(broker_at - sim_at) <= tol_at and abs(broker_ms - sim_ms) <= tol_ms
    return DriveVerdict(
        drive.key,
        drive.rate,
        None if limit is None else float(limit),
        steady_ms,
        sim_at,
        sim_ms,
        broker_at,
        broker_ms,
        drive.stats_avg_ms,
        drive.stats_max_ms,
        tol_at,
        tol_ms,
        agrees,
        notes,
    )
