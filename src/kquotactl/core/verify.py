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
    """What one broker reports for the entity (``config`` empty: no quotas); ``unanswered``: why it did not answer
    ("" when it did): such a broker lags, never counts as applied."""

    broker: str
    config: Mapping[str, Number]
    unanswered: str = ""


def matches(expected: Mapping[str, Number], reported: Mapping[str, Number], exact: bool) -> bool:
    """``reported`` has every expected key at its value (``exact``: and no other key)."""
    if exact:
        return dict(reported) == dict(expected)
    return all(k in reported and float(reported[k]) == float(v) for k, v in expected.items())


class NotVerified(QuotaError):
    """The change has not taken effect (a broker lags, or its throttle disagrees with the simulation): exit 2."""

    exit_code = EXIT_PENDING


class DriveBusy(NotVerified):
    """The driven quota-id (its tags: ``user``, ``client_id``; "" for a tag it lacks) still carried other traffic
    (``busy``: broker -> usage, B/s) after ``waited_s`` seconds: its first throttle would not be the limit's alone.
    The CLI words it with the option that avoids it."""

    def __init__(self, user: str, client_id: str, waited_s: float, busy: Mapping[str, float]) -> None:
        self.user, self.client_id, self.waited_s, self.busy = user, client_id, waited_s, dict(busy)
        super().__init__(
            f"the quota-id ({quota_id_text(user, client_id)}) still carries other traffic after {waited_s:.0f}s "
            f"({load_text(self.busy)}): its first throttle would not be the limit's alone, so it cannot verify the "
            "limit (nor find it wrong); drive a quota-id nothing else uses"
        )


class DriveInconclusive(NotVerified):
    """The broker's first throttle (``broker_at_ms``, ``broker_ms``) of the drive on ``label`` agrees with the
    simulation only if the quota-id's sensor was read while idle, which cannot be told without its sensors. The CLI
    names the options that tell."""

    def __init__(self, label: str, broker_at_ms: int | None, broker_ms: int) -> None:
        self.label, self.broker_at_ms, self.broker_ms = label, broker_at_ms, broker_ms
        super().__init__(
            f"{label}: cannot tell: the broker's first throttle ({first_throttle_text(broker_at_ms, broker_ms)}) "
            "matches the simulation only if the quota-id's sensor was read while idle; drive again with its sensors"
        )


def first_throttle_text(at_ms: int | None, ms: int) -> str:
    """``250 ms at 2.1s`` (a first throttle and when it came), or ``none``."""
    return "none" if at_ms is None else f"{ms} ms at {at_ms / 1000:.1f}s"


def quota_id_text(user: str, client_id: str) -> str:
    """``user alice, client-id app`` (a tag left out when empty)."""
    return ", ".join(p for p in (f"user {user}" if user else "", f"client-id {client_id}" if client_id else "") if p)


def load_text(busy: Mapping[str, float]) -> str:
    """``broker 1: 500 B/s, broker 2: 20 B/s``: the usage per broker, in broker order."""
    return ", ".join(f"{b}: {u:.0f} B/s" for b, u in sorted(busy.items()))


def config_words(config: Mapping[str, Number]) -> str:
    """``producer_byte_rate=20000,request_percentage=50.5`` (as kafka-configs takes them), or ``no quotas``."""
    return ",".join(f"{k}={_number(v)}" for k, v in sorted(config.items())) or "no quotas"


def _number(v: Number) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def lag_message(label: str, expected: Mapping[str, Number], late: Sequence[BrokerView], waited: float) -> str:
    """One line: which brokers lag and what they report."""
    said = "; ".join(f"{v.broker} reports {config_words(v.config)}" for v in late)
    return f"{label}: not applied everywhere after {waited:.1f}s (expected {config_words(expected)}): {said}"


def unanswered_message(label: str, late: Sequence[BrokerView], waited: float) -> str:
    """One line naming every broker that did not answer, and why (the first reason of each)."""
    said = "; ".join(f"{v.broker}: {v.unanswered}" for v in late if v.unanswered)
    return f"{label}: could not ask every broker within {waited:.1f}s ({said})"


def lagging(expected: Mapping[str, Number], views: Sequence[BrokerView], exact: bool = False) -> list[BrokerView]:
    """The brokers that do not (yet) report ``expected``, in the order given."""
    return [v for v in views if v.unanswered or not matches(expected, v.config, exact)]


# -- step 2: the driven client's throttle against the simulation -----------------------------------------


@dataclass(frozen=True)
class Drive:
    """What a driven client did and what the broker answered, times in ms since the drive started.

    ``sent``: (time, bytes the broker records) per request, as sent; ``throttles``: (time, ms) per response that
    carried a throttle; ``stats_avg_ms``/``stats_max_ms``: the throttle window of the client's statistics;
    ``origin_band_ms``: the first recording (which aligns the broker's samples) is known to lie within this many ms
    before time 0 only (a client sees its acknowledgement, not when the broker recorded it)."""

    key: str
    rate: float
    seconds: float
    sent: Sequence[tuple[int, float]]
    throttles: Sequence[tuple[int, int]]
    stats_avg_ms: float = 0.0
    stats_max_ms: float = 0.0
    origin_band_ms: int = 0  # the first recording happened up to this many ms before time 0 (unknown where)


@dataclass(frozen=True)
class QuietWait:
    """How the drive made sure the quota-id's window held no other traffic before it started (other bytes in the
    window bring the first throttle forward): ``how``, the seconds ``waited``, and ``busy`` (broker -> usage, B/s)
    when the quota-id still carried traffic at the end of the wait (empty: clean)."""

    how: str
    waited_s: float
    busy: dict[str, float] = field(default_factory=dict)
    existed: bool = False  # the quota-id had a sensor (read from the brokers' sensors; False when not read)

    def to_json(self) -> dict[str, Any]:
        return {
            "how": self.how,
            "waited_s": round(self.waited_s, 1),
            "busy": dict(self.busy),
            "sensor_existed": self.existed,
        }


@dataclass(frozen=True)
class DriveVerdict:
    key: str
    rate: float
    limit: float | None
    steady_state_ms: int  # explain --observed for the driven rate
    simulated_at_ms: int | None  # when the simulation throttles first (None: never within the drive)
    simulated_ms: int
    offset_ms: int  # the simulation's first recording this many ms before time 0 (the best within the band)
    broker_at_ms: int | None  # when the broker throttled first
    broker_ms: int
    broker_avg_ms: float
    broker_max_ms: float
    tolerance_at_ms: int
    tolerance_ms: int
    agrees: bool
    notes: list[str] = field(default_factory=list)
    origin_band_ms: int = 0  # the drive's band of first-recording times the simulation searched
    quiet: QuietWait | None = None  # how the quota-id's window was made clean before the drive
    idle_origin_ms: int = 0  # the sensor existed: its window may have begun up to this many ms before the drive
    inconclusive: bool = False  # agrees only if the sensor existed and was measured while idle, which is unknown

    def to_json(self) -> dict[str, Any]:
        quiet = {"quiet": self.quiet.to_json()} if self.quiet is not None else {}
        return {
            "key": self.key,
            "rate": self.rate,
            "limit": self.limit,
            "steady_state_throttle_ms": self.steady_state_ms,
            "simulated": {
                "first_throttle_at_ms": self.simulated_at_ms,
                "first_throttle_ms": self.simulated_ms,
                "first_recording_offset_ms": self.offset_ms,
                "first_recording_band_ms": self.origin_band_ms,
                "idle_window_start_band_ms": self.idle_origin_ms,
            },
            "broker": {
                "first_throttle_at_ms": self.broker_at_ms,
                "first_throttle_ms": self.broker_ms,
                "avg_throttle_ms": round(self.broker_avg_ms, 1),
                "max_throttle_ms": round(self.broker_max_ms, 1),
            },
            "tolerance": {"at_ms": self.tolerance_at_ms, "throttle_ms": self.tolerance_ms},
            "agrees": self.agrees,
            "inconclusive": self.inconclusive,
            "notes": list(self.notes),
            **quiet,
        }


#: the band of possible first-recording times is simulated in steps of this many ms (at most BAND_STEPS of them)
BAND_STEP_MS = 10
BAND_STEPS = 50
#: the possible window starts of an idle sensor (``compare_drive``'s ``idle_origin_ms``) are simulated this far apart
ORIGIN_STEP_MS = 100


def first_throttle(
    sent: Sequence[tuple[int, float]],
    limit: float,
    window_num: int = DEFAULT_WINDOW_NUM,
    window_size_seconds: int = DEFAULT_WINDOW_SIZE_SECONDS,
    kafka_version: tuple[int, ...] | None = None,
) -> tuple[int, int] | None:
    """When the broker's sampled Rate first throttles the recordings ``sent``, and how long: (time, ms) or None."""
    window_ms = window_size_seconds * 1000
    steps = replay(sent, limit, samples=window_num, window_ms=window_ms, **sampled_stat_for(kafka_version))
    first = next((s for s in steps if s.throttle_ms > 0), None)
    return None if first is None else (first.time_ms, first.throttle_ms)


def compare_drive(
    drive: Drive,
    limit: float | None,
    window_num: int = DEFAULT_WINDOW_NUM,
    window_size_seconds: int = DEFAULT_WINDOW_SIZE_SECONDS,
    kafka_version: tuple[int, ...] | None = None,
    idle_origin_ms: int = 0,
) -> DriveVerdict:
    """The first throttle the broker gave ``drive`` against the replay of its recordings under ``limit``.

    The broker's samples start at the first recording, which lies somewhere in ``drive.origin_band_ms`` before time
    0: the replay is run for first recordings across that band, and the one closest to the broker is kept (a
    broker applying another limit is seconds away at every offset).

    ``idle_origin_ms``: the quota-id's sensor existed before the drive, idle. Its Rate's window then does not start
    at the first recording: a measure while it was idle (an exporter's scrape) resets its empty samples to that
    time (``SampledStat.purgeObsoleteSamples``), and they stay for a quota window, so the window may begin up to
    this many ms before the drive. The replay is run for each such start too (an empty recording then), in steps of
    :data:`ORIGIN_STEP_MS`; the band it opens is in ``idle_origin_ms`` of the verdict."""
    steady = ThrottleModel({drive.key: drive.rate}, window_num, window_size_seconds, kafka_version)
    steady_ms = steady.throttle_ms(drive.key, limit)
    broker = drive.throttles[0] if drive.throttles else None
    request = max((b for _, b in drive.sent), default=0.0)
    grain = int(request / limit * 1000) if limit and limit > 0 else 0  # one request's worth of throttle
    tol_at = TOLERANCE_AT_MS + grain
    candidates: list[tuple[int, tuple[int, int] | None]] = []
    if limit is not None and drive.sent:
        [(t0, first_bytes), *rest] = drive.sent
        step = max(BAND_STEP_MS, -(-max(drive.origin_band_ms, 0) // BAND_STEPS))
        for origin in range(0, max(idle_origin_ms, 0) + 1, ORIGIN_STEP_MS):
            before = [(t0 - origin, 0.0)] if origin else []  # the idle sensor's window began then
            for offset in range(0, max(drive.origin_band_ms, 0) + 1, step):
                # the first recording ``offset`` ms earlier: every later one is that much later after it
                shifted = [*before, (t0, first_bytes), *((t + offset, b) for t, b in rest)]
                found = first_throttle(shifted, float(limit), window_num, window_size_seconds, kafka_version)
                candidates.append((offset, None if found is None else (found[0] - offset, found[1])))
    else:
        candidates.append((0, None))

    def distance(c: tuple[int, tuple[int, int] | None]) -> float:
        sim = c[1]
        if sim is None or broker is None:
            return 0.0 if sim is None and broker is None else float("inf")
        tol = max(TOLERANCE_MS, int(TOLERANCE_FRACTION * sim[1])) + grain
        return max(abs(broker[0] - sim[0]) / tol_at, abs(broker[1] - sim[1]) / tol)

    offset, sim = min(candidates, key=distance)
    sim_at, sim_ms = sim if sim is not None else (None, 0)
    broker_at, broker_ms = broker if broker is not None else (None, 0)
    tol_ms = max(TOLERANCE_MS, int(TOLERANCE_FRACTION * sim_ms)) + grain
    notes: list[str] = []
    if sim_at is None and broker_at is None:
        notes.append("neither the simulation nor the broker throttled the drive")
        if limit is not None and 0 < limit < drive.rate:  # a fresh sensor's window is padded to N − 1 samples
            crossing = limit * (window_num - 1) * window_size_seconds / drive.rate
            notes.append(
                f"the drive ended before the limit could throttle it (after about {crossing:.1f}s): "
                f"drive for at least {int(crossing) + 2}s to test the limit"
            )
    elif sim_at is None:
        notes.append("the broker throttled the drive, the simulation does not")
    elif broker_at is None:
        notes.append("the simulation throttles the drive, the broker did not")
    agrees = distance((offset, sim)) <= 1.0
    return DriveVerdict(
        drive.key,
        drive.rate,
        None if limit is None else float(limit),
        steady_ms,
        sim_at,
        sim_ms,
        offset,
        broker_at,
        broker_ms,
        drive.stats_avg_ms,
        drive.stats_max_ms,
        tol_at,
        tol_ms,
        agrees,
        notes,
        drive.origin_band_ms,
        idle_origin_ms=max(idle_origin_ms, 0),
    )
