"""``verify`` and ``apply --verify``: wait until every broker reports the values; drive a real producer and compare its
first throttle with the simulation."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kquotactl.backends.base import QuotaBackend, opened
from kquotactl.core.changes import QuotaRecord
from kquotactl.core.entities import Entity
from kquotactl.core.errors import BackendUnavailable, VerifyRefused
from kquotactl.core.keys import PRODUCE_KEY, Number
from kquotactl.core.precedence import QuotaIndex
from kquotactl.core.retry import RetryPolicy
from kquotactl.services.quotas import load_quota_set

if TYPE_CHECKING:  # types only: the modules load inside the services that use them
    from kquotactl.connection.clientprops import ClientSettings
    from kquotactl.connection.cluster import ConnectionOptions
    from kquotactl.core.filters import EntityFilter
    from kquotactl.core.plan import Plan
    from kquotactl.core.verify import BrokerView, DriveVerdict, QuietWait
    from kquotactl.observe.throttled import Sample


#: how often ``verify`` asks the brokers again while it waits
VERIFY_POLL_SECONDS = 0.1


@dataclass(frozen=True)
class Converged:
    """Step 1 of ``verify``: what every broker (or the ZooKeeper znode) reported last for ``entity``.

    ``expected``: the values waited for (``exact``: and no other key: taken from the cluster itself);
    ``lagging``: the views that did not report them when the wait ended (empty: converged); ``source``: how each
    view was read."""

    entity: Entity
    expected: dict[str, Number]
    exact: bool
    views: list[BrokerView]
    lagging: list[BrokerView]
    waited: float
    source: str

    @property
    def converged(self) -> bool:
        return not self.lagging


def wait_applied(
    backend: QuotaBackend,
    entity: Entity,
    expected: Mapping[str, Number] | None = None,
    *,
    exact: bool | None = None,
    timeout: float = 30.0,
    poll: float = VERIFY_POLL_SECONDS,
    clock: Callable[[], float] | None = None,
) -> Converged:
    """Wait (at most ``timeout`` seconds) until every broker reports ``expected`` for ``entity`` (None: the values
    the cluster describes now; an entity without quotas is then an error). ``exact``: no other key either (default:
    only when ``expected`` is None; ``{}`` exactly is "no quotas": a removal).

    Through the admin API, DescribeClientQuotas is sent to each broker by id: a KRaft broker answers from the
    metadata image it has applied (its quota managers are updated from the same image), so a broker that has not
    applied the change yet says so. A ZooKeeper-mode cluster read through ``--zookeeper`` is the znode brokers read
    (written with its change notification in one transaction); whether each broker has consumed the notification is
    not observable there: ``--drive`` shows it."""
    import time

    from kquotactl.core.filters import EntityFilter
    from kquotactl.core.verify import BrokerView, lagging, unanswered_message

    clock = clock or time.monotonic
    flt = EntityFilter.exact(entity)
    if not backend.can_describe:
        raise VerifyRefused("controller")
    if backend.asks_each_broker:
        brokers = set(backend.broker_ids())
        fenced: set[int] = set()
        source = "DescribeClientQuotas sent to each broker"

        def views() -> list[BrokerView]:
            # a broker fenced now (a rolling restart's, one cut off from the controllers) is waited for, never
            # asked: one that still runs answers from its last metadata image, however old
            now = _fenced(backend)
            if now is not None:  # else (the answer lost: the broker asked is restarting) the last round's
                fenced.clear()
                fenced.update(now)
            brokers.update(fenced)
            return [_fenced_view(b) if b in fenced else _ask(backend, flt, b) for b in sorted(brokers)]

    else:
        source = backend.described_from

        def views() -> list[BrokerView]:
            return [BrokerView(backend.name, _config_of(backend.describe(flt)))]

    if exact is None:
        exact = expected is None
    if expected is None:
        # "what the cluster describes now": a broker behind on the metadata log may not show a write yet (KRaft
        # brokers apply it asynchronously), so within the backend's read-after-write settle time any broker that
        # shows the entity answers; only when none does is there no such entity
        settle = RetryPolicy(delay=poll, deadline=min(backend.read_after_write_settle, timeout))
        for attempt in settle.tries(clock, time.sleep):
            expected = _config_of(backend.describe(flt))
            if not expected and backend.asks_each_broker:
                expected = next((dict(v.config) for v in views() if v.config), {})
            if expected or attempt.last:
                break
        if not expected:
            raise VerifyRefused("no-entity", entity=entity.label())
    for attempt in RetryPolicy(delay=poll, deadline=timeout).tries(clock, time.sleep):
        seen = views()
        late = lagging(expected, seen, exact)
        if not late or attempt.last:
            if any(v.unanswered for v in late):  # never a verdict on a broker that did not answer: an error
                raise BackendUnavailable(unanswered_message(entity.label(), late, attempt.elapsed))
            return Converged(entity, dict(expected), exact, seen, late, attempt.elapsed, source)
    raise AssertionError("unreachable: the last try returns")


def _ask(backend: QuotaBackend, flt: EntityFilter, broker: int) -> BrokerView:
    """One broker's view; one that does not answer (restarting, frozen) is a view saying so, asked again next
    round, so the wait goes on within its bound and every such broker is named."""
    from kquotactl.core.verify import BrokerView

    try:
        return BrokerView(f"broker {broker}", _config_of(backend.describe(flt, broker=broker)))
    except BackendUnavailable as e:
        return BrokerView(f"broker {broker}", {}, unanswered=str(e))


#: why a fenced broker is not asked (``verify`` names it)
FENCED = "fenced: shut down, restarting or cut off from the controllers (not asked: its metadata may be old)"


def _fenced(backend: QuotaBackend) -> list[int] | None:
    """The brokers fenced now; None when the answer is lost (the node asked is restarting)."""
    try:
        return backend.fenced_broker_ids()
    except BackendUnavailable:
        return None


def _fenced_view(broker: int) -> BrokerView:
    from kquotactl.core.verify import BrokerView

    return BrokerView(f"broker {broker}", {}, unanswered=FENCED)


def _config_of(records: Sequence[QuotaRecord]) -> dict[str, Number]:
    return dict(records[0].config) if records else {}


@dataclass(frozen=True)
class DriveTarget:
    """Where and as whom ``verify --drive`` produces: the broker address, the client settings (SASL...), the
    principal the broker will see and the client-id."""

    bootstrap: str
    settings: ClientSettings
    user: str
    client_id: str


def drive_target(opts: ConnectionOptions, entity: Entity, client_id: str | None, bootstrap: str | None) -> DriveTarget:
    """The producer ``--drive`` runs for ``entity``: the cluster's bootstrap address (or ``bootstrap``) and client
    properties (``--command-config``: SASL credentials make the user), the entity's client-id unless given.
    Refused when the producer would not be the entity's connection."""
    from kquotactl.connection.clientprops import ClientSettings, load_client_settings
    from kquotactl.core.explain import ANONYMOUS

    where = bootstrap or opts.bootstrap_server
    if not where:
        raise VerifyRefused("no-bootstrap")
    if entity.user is None and entity.client_id is None:
        raise VerifyRefused("ip")
    settings = (
        load_client_settings(opts.command_config, opts.said("command_config", opts.command_config))[0]
        if opts.command_config
        else ClientSettings()
    )
    if settings.uses_ssl and not settings.uses_sasl:
        raise VerifyRefused("ssl")
    user = (settings.sasl_username or "") if settings.uses_sasl else ANONYMOUS
    if isinstance(entity.user, str) and entity.user != user:
        raise VerifyRefused("user", entity=entity.user, user=user)
    named = entity.client_id if isinstance(entity.client_id, str) else None  # the default is not a str
    if client_id is not None and named is not None and client_id != named:
        raise VerifyRefused("client-id", client_id=client_id, named=named)
    return DriveTarget(where, settings, user, client_id or named or "kquotactl-verify")


def drive_verdict(
    backend: QuotaBackend,
    target: DriveTarget,
    *,
    rate: float,
    seconds: float,
    topic: str,
    connect_timeout: float = 10.0,
    sensors: Callable[[], list[Sample]] | None = None,
    quiet_timeout: float = 30.0,
) -> DriveVerdict:
    """Step 2 of ``verify``: drive a real producer at ``rate`` bytes/s for ``seconds`` and compare the broker's
    first throttle with the simulation under the limit the cluster's quotas give the connection
    (:func:`kquotactl.core.verify.compare_drive`), once the quota-id's window is clean (:func:`wait_quiet`)."""
    import dataclasses

    from kquotactl.backends.kafka.drive import drive_producer
    from kquotactl.core.verify import DriveBusy, compare_drive

    index = load_quota_set(backend).index
    res = index.resolve(PRODUCE_KEY, target.user, target.client_id)
    window_num, window_size = _quota_window(backend)
    quiet = wait_quiet(target, index, sensors, window_num * window_size, quiet_timeout)
    if quiet.busy:
        user, client = res.quota_id_tags or ("", target.client_id)
        raise DriveBusy(target.user if user else "", client, quiet.waited_s, quiet.busy)
    drive = drive_producer(target.bootstrap, target.settings, target.client_id, topic, rate, seconds, connect_timeout)
    limit = None if res.limit is None else float(res.limit)
    # an existing sensor measured while idle (an exporter's scrape) has its window begun up to a quota window (and
    # a scrape) before the drive: known from the sensors when given, else tried only to tell "cannot tell" apart
    idle_ms = (window_num * window_size + 1) * 1000
    if sensors is not None:
        verdict = compare_drive(drive, limit, window_num, window_size, idle_origin_ms=idle_ms if quiet.existed else 0)
    else:
        verdict = compare_drive(drive, limit, window_num, window_size)
        if not verdict.agrees and compare_drive(drive, limit, window_num, window_size, idle_origin_ms=idle_ms).agrees:
            verdict = dataclasses.replace(verdict, inconclusive=True)  # the CLI's note says which options tell
    return dataclasses.replace(verdict, quiet=quiet)


def wait_quiet(
    target: DriveTarget,
    index: QuotaIndex,
    sensors: Callable[[], list[Sample]] | None,
    window_s: float,
    timeout: float,
    *,
    poll: float = 1.0,
    clock: Callable[[], float] | None = None,
    sleep: Callable[[float], None] | None = None,
) -> QuietWait:
    """Make the drive start on a clean window: bytes the quota-id's sensor still holds (another client, or the
    previous drive a moment ago) bring the first throttle forward, and a correct limit would then "disagree".

    With ``sensors`` (the brokers' quota sensors, as ``top`` reads them): the quota-id's produce usage on every
    broker, read again every ``poll`` s until it is 0 everywhere (the broker's Rate holds no byte in its window), at
    most ``timeout`` s (then ``busy`` says what it still carries). Without: one quota window (``window_s``) waited,
    which clears whatever was sent before the wait began (a previous drive), not traffic that goes on."""
    import time

    from kquotactl.core.verify import QuietWait
    from kquotactl.observe.throttled import QuotaIdKey, top_rows

    clock = clock or time.monotonic
    sleep = sleep or time.sleep
    if sensors is None:
        sleep(window_s)
        return QuietWait("no sensors given: waited one quota window, past any traffic sent before", window_s)
    user, client = index.resolve(PRODUCE_KEY, target.user, target.client_id).quota_id_tags or ("", "")
    qid = QuotaIdKey(user=target.user if user else "", client_id=client)
    for attempt in RetryPolicy(delay=poll, deadline=timeout).tries(clock, sleep):
        figures = {
            broker: fig.usage
            for row in top_rows(sensors(), index)
            if row.quota_id == qid
            for use in row.uses
            if use.quota_type == "Produce"
            for broker, fig in use.brokers.items()
        }
        busy = {b: u for b, u in figures.items() if u > 0}
        if not busy or attempt.last:
            how = "read the quota-id's produce sensors until its window held no bytes"
            return QuietWait(how, attempt.elapsed, busy, existed=bool(figures))
    raise AssertionError("unreachable: the last try returns")


def _quota_window(backend: QuotaBackend) -> tuple[int, int]:
    """The brokers' ``quota.window.num`` / ``quota.window.size.seconds`` (where each broker can be asked: the first
    broker's configuration; else Kafka's defaults: they are static configs, never in ZooKeeper)."""
    from kquotactl.core.throttle import DEFAULT_WINDOW_NUM, DEFAULT_WINDOW_SIZE_SECONDS

    read = (
        backend.broker_settings(["quota.window.num", "quota.window.size.seconds"]) if backend.asks_each_broker else None
    )
    if read is None:
        return DEFAULT_WINDOW_NUM, DEFAULT_WINDOW_SIZE_SECONDS
    configs, _ = read

    def number(name: str, default: int) -> int:
        value = configs.get(name)
        return int(value) if value and value.isdigit() else default

    return number("quota.window.num", DEFAULT_WINDOW_NUM), number(
        "quota.window.size.seconds", DEFAULT_WINDOW_SIZE_SECONDS
    )


def verify_applied(
    backend: QuotaBackend,
    wanted: Sequence[tuple[Entity, Mapping[str, Number]]],
    *,
    timeout: float = 30.0,
    sample: int | None = None,
    poll: float = VERIFY_POLL_SECONDS,
    clock: Callable[[], float] | None = None,
) -> list[Converged]:
    """``apply --verify`` and the staged apply's check: step 1 of ``verify`` for each (entity, config it must have
    now) — exactly that config, ``{}`` for a removed entity — or for ``sample`` of them (evenly spread,
    deterministic), all within ``timeout``.

    Each round asks each broker once, whatever the number of entities (one DescribeClientQuotas of everything, or
    of the one entity when only one is checked), and asks again next round only the brokers still lagging on some
    entity: 10,000 entities on 3 brokers cost 3 describes a round, not 30,000. A broker that does not answer lags
    and is named (:class:`BackendUnavailable`), never counted as applied; so is a fenced one (each round asks which
    are: one DescribeCluster), never asked."""
    import time

    from kquotactl.core.verify import lagging, unanswered_message

    chosen = list(wanted)
    if sample is not None and 0 < sample < len(chosen):
        step = len(chosen) / sample
        chosen = [chosen[int(i * step)] for i in range(sample)]
    if len(chosen) <= 1:
        return [
            wait_applied(backend, entity, dict(config), exact=True, timeout=timeout, poll=poll, clock=clock)
            for entity, config in chosen
        ]
    if not backend.can_describe:
        raise VerifyRefused("controller")
    expected = {e: dict(c) for e, c in chosen}
    rounds = _Rounds(backend, expected)
    elapsed = 0.0
    for attempt in RetryPolicy(delay=poll, deadline=timeout).tries(clock or time.monotonic, time.sleep):
        elapsed = attempt.elapsed
        if rounds.ask(elapsed) or attempt.last:
            break
    out = []
    for entity in expected:
        views = rounds.views_of(entity)
        late = lagging(expected[entity], views, True)
        if any(v.unanswered for v in late):  # never a verdict on a broker that did not answer: an error
            raise BackendUnavailable(unanswered_message(entity.label(), late, elapsed))
        waited = rounds.converged_at.get(entity, elapsed)
        out.append(Converged(entity, expected[entity], True, views, late, waited, rounds.source))
    return out


class _Rounds:
    """The rounds of :func:`verify_applied`: each broker's last view of every entity, and the entities each broker
    still lags on (asked again, all of them in one describe, next round)."""

    def __init__(self, backend: QuotaBackend, expected: dict[Entity, dict[str, Number]]) -> None:
        self.backend = backend
        self.expected = expected
        self.brokers: list[int | None] = list(backend.broker_ids()) if backend.asks_each_broker else [None]
        self.source = "DescribeClientQuotas sent to each broker" if backend.asks_each_broker else backend.described_from
        self.pending: dict[int | None, set[Entity]] = {b: set(expected) for b in self.brokers}
        self.seen: dict[int | None, dict[Entity, BrokerView]] = {b: {} for b in self.brokers}
        self.converged_at: dict[Entity, float] = {}
        self.fenced: list[int] = []

    def label(self, broker: int | None) -> str:
        return self.backend.name if broker is None else f"broker {broker}"

    def ask(self, elapsed: float) -> bool:
        """One round: each broker still lagging asked once. True when every broker reports every entity."""
        from kquotactl.core.verify import BrokerView, matches

        self._fence()
        for b in self.brokers:
            if not self.pending[b]:
                continue
            if b in self.fenced:  # waited for, never asked: it may answer from an old metadata image
                for entity in self.pending[b]:
                    self.seen[b][entity] = _fenced_view(b)
                continue
            try:
                live = _LiveIndex(self.backend.describe(broker=b) if b is not None else self.backend.describe())
            except BackendUnavailable as e:
                for entity in self.pending[b]:
                    self.seen[b][entity] = BrokerView(self.label(b), {}, unanswered=str(e))
                continue
            for entity in list(self.pending[b]):
                view = BrokerView(self.label(b), live.config_of(entity))
                self.seen[b][entity] = view
                if matches(self.expected[entity], view.config, True):
                    self.pending[b].discard(entity)
        for entity in self.expected:
            if entity not in self.converged_at and not any(entity in p for p in self.pending.values()):
                self.converged_at[entity] = elapsed
        return not any(self.pending.values())

    def _fence(self) -> None:
        """The brokers fenced now (a lost answer keeps the last round's), each added to those waited for: Metadata,
        which :attr:`brokers` came from, leaves them out."""
        if not self.backend.asks_each_broker:
            return
        now = _fenced(self.backend)
        self.fenced = self.fenced if now is None else now
        for b in self.fenced:
            if b not in self.pending:
                ids = sorted([*(x for x in self.brokers if x is not None), b])
                self.brokers = list[int | None](ids)
                self.pending[b], self.seen[b] = set(self.expected), {}

    def views_of(self, entity: Entity) -> list[BrokerView]:
        return [self.seen[b][entity] for b in self.brokers]


class _LiveIndex:
    """One describe of everything, looked up by entity; an ip by address (``::ffff:10.0.0.1`` is ``10.0.0.1``), as
    an exact describe matches it."""

    def __init__(self, records: Sequence[QuotaRecord]) -> None:
        self.by_entity = {r.entity: dict(r.config) for r in records}
        self.ips = [r for r in records if r.entity.ip is not None]

    def config_of(self, entity: Entity) -> dict[str, Number]:
        found = self.by_entity.get(entity)
        if found is not None or entity.ip is None:
            return found or {}
        from kquotactl.core.filters import EntityFilter

        flt = EntityFilter.exact(entity)
        return next((dict(r.config) for r in self.ips if flt.matches(r.entity)), {})


def verify_plan_applied(
    backend: QuotaBackend,
    the_plan: Plan,
    applied: Iterable[str],
    *,
    timeout: float = 30.0,
    sample: int | None = None,
) -> list[Converged]:
    """``apply --verify``: every entity of ``the_plan`` whose label is in ``applied`` (or ``sample`` of them) reported
    by every broker at its planned values within ``timeout``; else :class:`kquotactl.core.verify.NotVerified`,
    naming the first late one (exit 2). Returns what was checked."""
    from kquotactl.core.verify import NotVerified, lag_message
    from kquotactl.core.wording import counted

    done = set(applied)
    wanted = [(d.entity, d.after) for d in the_plan.diffs if d.entity.label() in done]
    checked = verify_applied(backend, wanted, timeout=timeout, sample=sample)
    late = [c for c in checked if not c.converged]
    if late:
        first = late[0]
        more = f" (and {counted(len(late) - 1, 'more entity', 'more entities')})" if len(late) > 1 else ""
        raise NotVerified(lag_message(first.entity.label(), first.expected, first.lagging, first.waited) + more)
    return checked


@dataclass(frozen=True)
class Drive:
    """Step 2 of ``verify``: a producer driven at ``rate`` bytes/s for ``seconds`` to ``topic`` (as ``client_id``,
    through ``bootstrap``: default the entity's and the cluster's), the quota-id's sensors read first from
    ``prometheus`` or the ``scrape`` URLs when given."""

    rate: float
    seconds: float
    topic: str
    client_id: str | None = None
    bootstrap: str | None = None
    prometheus: str | None = None
    scrape: Sequence[str] = ()


@dataclass(frozen=True)
class Verified:
    """What ``verify`` found: every broker's view (:class:`Converged`) and, when driven and converged, the verdict
    on the broker's first throttle."""

    converged: Converged
    verdict: DriveVerdict | None = None

    def check(self) -> None:
        """Raise :class:`kquotactl.core.verify.NotVerified` (exit 2) unless the change took effect: a broker lags,
        the drive's first throttle cannot be judged (:class:`~kquotactl.core.verify.DriveInconclusive`) or
        disagrees with the simulation."""
        from kquotactl.core.verify import DriveInconclusive, NotVerified, first_throttle_text, lag_message

        conv, verdict, label = self.converged, self.verdict, self.converged.entity.label()
        if not conv.converged:
            raise NotVerified(lag_message(label, conv.expected, conv.lagging, conv.waited))
        if verdict is not None and verdict.inconclusive:
            raise DriveInconclusive(label, verdict.broker_at_ms, verdict.broker_ms)
        if verdict is not None and not verdict.agrees:
            raise NotVerified(
                f"{label}: the broker's throttle disagrees with the simulation "
                f"(first throttle: broker {first_throttle_text(verdict.broker_at_ms, verdict.broker_ms)}, "
                f"simulated {first_throttle_text(verdict.simulated_at_ms, verdict.simulated_ms)})"
            )


def verify(
    backend: QuotaBackend | Callable[[], QuotaBackend],
    opts: ConnectionOptions,
    entity: Entity,
    expected: Mapping[str, Number] | None = None,
    *,
    drive: Drive | None = None,
    warn: Callable[[str], None] | None = None,
) -> Verified:
    """``verify``: wait (``opts.timeout``) until every broker reports ``expected`` for ``entity``
    (:func:`wait_applied`), then (``drive``) drive a producer as its connection and compare its first throttle with
    the simulation (:func:`drive_verdict`). A producer that cannot be the entity's connection is refused before
    ``backend`` (a function: opened then) is; ``warn``: what the backend noticed."""
    target = drive_target(opts, entity, drive.client_id, drive.bootstrap) if drive is not None else None
    backend = opened(backend)
    conv = wait_applied(backend, entity, expected, timeout=opts.timeout)
    for w in backend.warnings:
        if warn is not None:
            warn(w)
    if not conv.converged or target is None or drive is None:
        return Verified(conv)
    sensors = None
    if drive.prometheus or drive.scrape:
        from kquotactl.observe import prometheus as source

        url, scrape = drive.prometheus, list(drive.scrape)
        sensors = (lambda: source.fresh_from_prometheus(url)) if url else (lambda: source.scrape(scrape))
    verdict = drive_verdict(
        backend,
        target,
        rate=drive.rate,
        seconds=drive.seconds,
        topic=drive.topic,
        connect_timeout=opts.connect_timeout,
        sensors=sensors,
        quiet_timeout=opts.timeout,
    )
    return Verified(conv, verdict)
