"""``kquotactl exporter`` callable from Python: a long-running Prometheus exporter of quota limits, utilization and
throttling (docs/exporter.md has the metric contract).

Three sources, each refreshed on its own and each keeping its last known values while it fails:

- ``quotas``: the cluster's quotas. A backend that can watch changes (ZooKeeper: ``/config/changes``) is read in
  full once and then only for the entities new notifications name; otherwise (admin API) one ``describe`` of
  everything every ``refresh`` seconds.
- ``sensors``: the brokers' quota sensors, from their JMX exporters (``scrape``) or a Prometheus, every
  ``sensor_interval`` seconds (:mod:`kquotactl.observe.prometheus`).
- ``manifest`` (optional): manifests the cluster is compared with (drift, cluster-wide budgets' shares).

The rows are built by :func:`kquotactl.observe.exposition.build` into a snapshot; a custom collector turns the last
snapshot into metric families on each scrape (no per-series objects: memory follows the snapshot alone).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from wsgiref.simple_server import WSGIRequestHandler

from kquotactl.backends.base import QuotaBackend, WatchedChange, signals_held
from kquotactl.core.errors import InvalidValue, QuotaError

if TYPE_CHECKING:
    from prometheus_client.metrics_core import Metric

    from kquotactl.core.changes import QuotaRecord
    from kquotactl.core.entities import Entity
    from kquotactl.core.precedence import QuotaIndex
    from kquotactl.observe.exposition import Exposition, Row
    from kquotactl.observe.throttled import Sample

log = logging.getLogger("kquotactl.exporter")

QUOTAS, SENSORS, MANIFEST = "quotas", "sensors", "manifest"
#: the bounds of both intervals, in seconds
MIN_INTERVAL, MAX_INTERVAL = 1.0, 86_400.0
DEFAULT_LISTEN = ("127.0.0.1", 9798)
STOP_WAIT = 3.0  # seconds stop() waits for the refresh threads (daemons: a stuck one ends with the process)
PREFIX = "kquotactl_exporter_"


@dataclass
class SourceState:
    """How a source's last refresh went."""

    up: bool = False
    last_success: float = 0.0  # epoch seconds, 0: never
    last_error: str | None = None
    tried: bool = False


@dataclass
class _State:
    records: dict[Entity, QuotaRecord] = field(default_factory=dict)
    samples: dict[str, list[Sample]] = field(default_factory=dict)  # per sensor source (exporter URL, Prometheus)
    drift: list[Row] | None = None
    budgets: dict[Entity, Any] | None = None
    generation: int = 0  # counts the changes of the records
    index: QuotaIndex | None = None
    index_generation: int = -1  # the generation the index was built from


def check_interval(seconds: float, what: str) -> float:
    if not MIN_INTERVAL <= seconds <= MAX_INTERVAL:
        raise InvalidValue(f"the {what} must be between {MIN_INTERVAL:g} s and {MAX_INTERVAL / 3600:g} h")
    return seconds


class Exporter:
    """The running exporter: :meth:`start` serves it, :meth:`stop` ends it; :meth:`refresh_quotas`,
    :meth:`refresh_sensors` and :meth:`refresh_manifest` refresh one source now (what the loops do)."""

    def __init__(
        self,
        backend: QuotaBackend | Callable[[], QuotaBackend],
        *,
        listen: tuple[str, int] = DEFAULT_LISTEN,
        scrape: Sequence[str] = (),
        prometheus: str | None = None,
        refresh: float = 30.0,
        sensor_interval: float = 15.0,
        manifests: Sequence[str] = (),
    ) -> None:
        from prometheus_client import (
            CollectorRegistry,
            Counter,
            Histogram,
            gc_collector,
            platform_collector,
            process_collector,
        )

        if scrape and prometheus:
            raise InvalidValue("the sensors come from the brokers' exporters or from a Prometheus, not both")
        # a backend is not callable: a function given opens one (the exporter owns it), else it is the backend
        self._open: Callable[[], QuotaBackend] | None = backend if callable(backend) else None
        self._backend: QuotaBackend | None = None if callable(backend) else backend
        self.listen = listen
        self.scrape_urls = list(scrape)
        self.prometheus = prometheus
        self.refresh = check_interval(refresh, "quota refresh interval")
        self.sensor_interval = check_interval(sensor_interval, "sensor interval")
        self.manifests = list(manifests)
        self.sources: dict[str, SourceState] = {QUOTAS: SourceState()}
        if scrape or prometheus:
            self.sources[SENSORS] = SourceState()
        if manifests:
            self.sources[MANIFEST] = SourceState()
        self._state = _State()
        self._lock = threading.RLock()  # the state
        self._build_lock = threading.Lock()  # one rebuild at a time
        self._snapshot: Exposition | None = None
        self.snapshot_generation = -1  # the records' generation the snapshot shows
        self._manifest_seen, self._manifest_at = -1, 0.0  # the generation and time the manifests were compared at
        self._stop = threading.Event()
        self._resync = threading.Event()  # the watch asks for a full read
        self._dirty = threading.Event()  # the snapshot is behind the state
        self._unwatch: Callable[[], None] | None = None
        self._threads: list[threading.Thread] = []
        self._server: Any = None
        self.registry = CollectorRegistry()
        self.registry.register(_Collector(self))
        self._errors = Counter(
            PREFIX + "refresh_errors", "Failed refreshes of each source.", ["source"], registry=self.registry
        )
        self._duration = Histogram(
            PREFIX + "refresh_duration_seconds",
            "How long a refresh of each source took, in seconds.",
            ["source"],
            registry=self.registry,
        )
        for source in self.sources:
            self._errors.labels(source)
        process_collector.ProcessCollector(registry=self.registry)
        platform_collector.PlatformCollector(registry=self.registry)
        gc_collector.GCCollector(registry=self.registry)

    # -- the sources ---------------------------------------------------------------------------

    def backend(self) -> QuotaBackend:
        if self._backend is None:
            assert self._open is not None
            self._backend = self._open()
        return self._backend

    def _failed(self, source: str, error: str) -> None:
        """Keep the last values, say the source is down, count it; one log line when it goes down."""
        with self._lock:
            state = self.sources[source]
            self._errors.labels(source).inc()
            if state.up or not state.tried:  # one line when it goes down, not one per failed round
                log.warning("%s: refresh failed, serving the last known values: %s", source, error)
            state.up, state.tried, state.last_error = False, True, error

    def _succeeded(self, source: str) -> None:
        with self._lock:
            state = self.sources[source]
            if not state.up and state.tried:
                log.warning("%s: refreshed again", source)
            state.up, state.tried, state.last_error, state.last_success = True, True, None, time.time()

    def refresh_quotas(self, *, rebuild: bool = True) -> bool:
        """Read every quota of the cluster (one describe); False when it failed (the last values stay).
        ``rebuild``: the snapshot now (else by the rebuild thread, once for a burst of refreshes)."""
        start = time.monotonic()
        try:
            backend = self.backend()
            records = backend.describe()
        except QuotaError as e:
            self._failed(QUOTAS, str(e))
            if self._open is not None and self._unwatch is None and self._backend is not None:
                self._backend.close()  # polled: a fresh connection next round
                self._backend = None
            return False
        with self._lock:
            self._state.records = {r.entity: r for r in records}
            self._state.generation += 1  # the index is rebuilt (and the old one freed) by the rebuild thread
            self._succeeded(QUOTAS)
        self._duration.labels(QUOTAS).observe(time.monotonic() - start)
        self._rebuilt(rebuild)
        return True

    def _still_watching(self) -> None:
        """A quiet watch is only as current as the session under it: one cheap read (the broker ids) says the
        cluster still answers, so the last success (and the staleness alert on it) moves on without a full read."""
        try:
            self.backend().broker_ids()
        except QuotaError as e:
            self._failed(QUOTAS, str(e))
        else:
            self._succeeded(QUOTAS)

    def _watched(self, change: WatchedChange) -> None:
        """The backend's change watch: patch the changed entities in, or ask for a full read."""
        if change.error is not None:
            with self._lock:
                self._failed(QUOTAS, change.error)
            return
        if change.resync:
            self._resync.set()
            return
        start = time.monotonic()
        with self._lock:
            for r in change.records:
                self._state.records[r.entity] = r
            for e in change.removed:
                self._state.records.pop(e, None)
            self._state.generation += 1  # the index is rebuilt (and the old one freed) by the rebuild thread
            self._succeeded(QUOTAS)
        self._duration.labels(QUOTAS).observe(time.monotonic() - start)
        self._dirty.set()  # the rebuild thread: one rebuild (and drift) for a burst of changes

    def refresh_sensors(self, *, rebuild: bool = True) -> bool:
        """Read the sensors of every exporter (each keeps its last samples when it fails) or of the Prometheus;
        ``rebuild``: as :meth:`refresh_quotas`."""
        from kquotactl.observe import prometheus as source

        if SENSORS not in self.sources:
            return True
        start = time.monotonic()
        reads: list[tuple[str, Callable[[], list[Sample]]]] = (
            [(self.prometheus, lambda: source.from_prometheus(self.prometheus or ""))]
            if self.prometheus
            else [(u, lambda u=u: source.scrape([u])) for u in self.scrape_urls]  # type: ignore[misc]
        )
        errors = []
        for name, read in reads:
            try:
                samples = read()
            except QuotaError as e:
                errors.append(str(e))
                continue
            with self._lock:
                self._state.samples[name] = samples
        with self._lock:
            if errors:
                self._failed(SENSORS, "; ".join(errors))
            else:
                self._succeeded(SENSORS)
        self._duration.labels(SENSORS).observe(time.monotonic() - start)
        self._rebuilt(rebuild)
        return not errors

    def refresh_manifest(self) -> bool:
        """Read the manifests again and compare them with the last known quotas (drift, budgets' shares)."""
        from kquotactl.core.budget import resolve_budgets
        from kquotactl.manifests.loader import load_manifests
        from kquotactl.observe.exposition import manifest_drift

        start = time.monotonic()
        try:
            manifest = load_manifests(self.manifests)
            shares: dict[Entity, Any] = {}
            if manifest.budgets:
                budgets = resolve_budgets(manifest, len(self.backend().broker_ids()))
                manifest, shares = budgets.manifest, budgets.shares
            with self._lock:
                live = list(self._state.records.values())
            drift = manifest_drift(manifest, live)
        except (QuotaError, OSError) as e:
            with self._lock:
                self._failed(MANIFEST, str(e))
            return False
        with self._lock:
            self._state.drift, self._state.budgets = drift, shares
            self._succeeded(MANIFEST)
        self._duration.labels(MANIFEST).observe(time.monotonic() - start)
        return True

    def _rebuilt(self, now: bool) -> None:
        if now:
            self._manifest_due()
            self.rebuild()
        else:
            self._dirty.set()

    def _manifest_due(self) -> None:
        """Compare the manifests with the quotas again when they changed since the last look (or every refresh
        interval: the files may have changed)."""
        with self._lock:
            generation = self._state.generation
        due = self._manifest_seen != generation or time.monotonic() - self._manifest_at >= self.refresh
        if self.manifests and due:
            self._manifest_seen, self._manifest_at = generation, time.monotonic()
            self.refresh_manifest()

    def _rebuild_loop(self) -> None:
        """Rebuild once for each burst of changes. After a rebuild, its objects (some per series, kept until the
        next one, in no reference cycle) leave the cycle collector's generations (``gc.freeze``, after a
        collection of what is not frozen): otherwise every later collection walks them again, and a refresh
        that allocates a little pays for a walk of the whole snapshot (bench/exporter.py: 10x the entities, 10x
        the refresh). Refcounting still frees each snapshot when the next replaces it."""
        import gc

        while not self._stop.is_set():
            self._dirty.wait()
            self._dirty.clear()
            if not self._stop.is_set():
                self._manifest_due()
                self.rebuild()
                gc.collect()
                gc.freeze()

    def rebuild(self) -> None:
        """The snapshot the collector serves, from the last known values of every source. Built outside the state
        lock (changes keep landing meanwhile; one rebuild at a time, so an older one never replaces a newer)."""
        from kquotactl.core.precedence import QuotaIndex
        from kquotactl.observe.exposition import build

        with self._build_lock:
            with self._lock:
                st = self._state
                records, generation = list(st.records.values()), st.generation
                index = st.index if st.index_generation == generation else None
                samples = [s for ss in st.samples.values() for s in ss]
                budgets, drift = st.budgets, st.drift
                per_key = self._backend.per_key_levels if self._backend is not None else False
            if index is None:
                index = QuotaIndex(records, per_key_levels=per_key)
                with self._lock:
                    if st.generation == generation:
                        st.index, st.index_generation = index, generation
            self._snapshot = build(records, index, samples, budgets=budgets, drift=drift)
            self.snapshot_generation = generation

    # -- serving -------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """``http://host:port`` the exporter listens on (the bound port when 0 was asked)."""
        host, port = self.listen
        if self._server is not None:
            port = self._server.server_port
        return f"http://{host}:{port}"

    @property
    def ready(self) -> bool:
        return self.sources[QUOTAS].last_success > 0

    def stale(self) -> list[str]:
        return [name for name, s in self.sources.items() if not s.up]

    def start(self) -> Exporter:
        """Bind the listen address (an error when it is taken), then serve and refresh in background threads."""
        from wsgiref.simple_server import make_server

        from prometheus_client.exposition import ThreadingWSGIServer

        try:
            self._server = make_server(*self.listen, self._app(), ThreadingWSGIServer, handler_class=_QuietHandler)
        except OSError as e:
            raise InvalidValue(f"cannot listen on {self.listen[0]}:{self.listen[1]}: {e.strerror or e}") from None
        self.rebuild()
        with signals_held():  # Ctrl-C and SIGTERM reach the main thread, which waits in wait()
            for target, name in (
                (self._server.serve_forever, "http"),
                (self._guarded(QUOTAS, self._quota_loop), "quotas"),
                (self._guarded(SENSORS, self._sensor_loop), "sensors"),
                (self._guarded(QUOTAS, self._rebuild_loop), "rebuild"),
            ):
                t = threading.Thread(target=target, name=f"kquotactl-exporter-{name}", daemon=True)
                t.start()
                self._threads.append(t)
        return self

    def _guarded(self, source: str, loop: Callable[[], None]) -> Callable[[], None]:
        """A refresh thread that never dies: an unexpected error counts as a failed refresh and it goes on (at
        shutdown, a read cut short by the closed connection is no error)."""

        def run() -> None:
            while not self._stop.is_set():
                try:
                    loop()  # returns only when stopped (or with nothing to refresh)
                    return
                except Exception as e:
                    if self._stop.is_set():
                        return
                    with self._lock:
                        self._failed(source, f"{type(e).__name__}: {e}")
                    self._stop.wait(MIN_INTERVAL)

        return run

    def _quota_loop(self) -> None:
        watching = self._unwatch is not None
        while not self._stop.is_set():
            if not watching:
                try:
                    with signals_held():
                        self._unwatch = self.backend().watch_changes(self._watched)
                    watching = self._unwatch is not None
                except QuotaError as e:
                    self._failed(QUOTAS, str(e))
                    self._stop.wait(min(self.refresh, 5.0))
                    continue
            if not watching:
                self.refresh_quotas(rebuild=False)
                self._stop.wait(self.refresh)
                continue
            # watched: a full read when the watch asks for one, or to retry one that failed
            if self._resync.wait(self.refresh) or not self.sources[QUOTAS].up:
                self._resync.clear()
                if not self._stop.is_set():
                    self.refresh_quotas(rebuild=False)
                continue
            self._still_watching()  # no change for a while: the values are current if the cluster still answers
            if self.manifests:
                self._dirty.set()  # and the manifests are read again all the same

    def _sensor_loop(self) -> None:
        while SENSORS in self.sources and not self._stop.is_set():
            self.refresh_sensors(rebuild=False)
            self._stop.wait(self.sensor_interval)

    def wait(self) -> None:
        """Block until :meth:`stop` (Ctrl-C and SIGTERM reach the caller: short waits)."""
        while not self._stop.wait(0.5):
            pass

    def request_stop(self) -> None:
        """Make :meth:`wait` return (safe from a signal handler: sets an event, nothing more)."""
        self._stop.set()

    def stop(self) -> None:
        """Stop serving and refreshing; close the backend if the exporter opened it."""
        self._stop.set()
        self._resync.set()
        self._dirty.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._unwatch is not None:
            self._unwatch()
            self._unwatch = None
        deadline = time.monotonic() + STOP_WAIT  # a refresh stuck on an unreachable cluster is not waited out
        for t in self._threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        if self._open is not None and self._backend is not None:
            self._backend.close()
            self._backend = None

    def __enter__(self) -> Exporter:
        return self if self._server is not None else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _app(self) -> Callable[..., Any]:
        from prometheus_client import make_wsgi_app

        metrics = make_wsgi_app(self.registry)

        def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
            path = environ.get("PATH_INFO", "")
            if path in ("/metrics", "/"):
                out: list[bytes] = metrics(environ, start_response)
                return out
            if path == "/-/healthy":
                stale = self.stale()
                body = "stale: " + ", ".join(stale) if stale else "ok: every source is fresh"
                return _text(start_response, "200 OK", body)
            if path == "/-/ready":
                if self.ready:
                    return _text(start_response, "200 OK", "ready")
                return _text(start_response, "503 Service Unavailable", "not ready: the quotas were never read")
            return _text(start_response, "404 Not Found", "not found: /metrics, /-/healthy, /-/ready")

        return app


def _text(start_response: Callable[..., Any], status: str, body: str) -> list[bytes]:
    data = (body + "\n").encode()
    start_response(status, [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", str(len(data)))])
    return [data]


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # no line per scrape
        pass


class _Collector:
    """The last snapshot as metric families, built on each scrape (one family at a time)."""

    def __init__(self, exporter: Exporter) -> None:
        self.exporter = exporter
        self.last_scrape = 0.0  # seconds the previous scrape took, its writing included (0: none yet)

    def collect(self) -> Iterator[Metric]:
        from prometheus_client.core import GaugeMetricFamily

        from kquotactl.observe.exposition import FAMILIES

        start = time.perf_counter()
        ex = self.exporter
        snap = ex._snapshot
        if snap is not None:
            for name, (text, labels) in FAMILIES.items():
                family = GaugeMetricFamily(name, text, labels=labels)
                for values, value in snap.families[name]:
                    family.add_metric(values, value)
                yield family
        up = GaugeMetricFamily(PREFIX + "up", "1 when the last refresh of the source succeeded.", labels=["source"])
        last = GaugeMetricFamily(
            PREFIX + "last_success_timestamp_seconds",
            "When the source was last refreshed successfully (Unix time, seconds; 0: never).",
            labels=["source"],
        )
        for source, state in sorted(ex.sources.items()):
            up.add_metric([source], 1.0 if state.up else 0.0)
            last.add_metric([source], state.last_success)
        yield up
        yield last
        yield GaugeMetricFamily(
            PREFIX + "quota_ids", "Active quota-ids served (with a sensor on a broker).", snap.quota_ids if snap else 0
        )
        yield GaugeMetricFamily(PREFIX + "entities", "Quota entities served.", snap.entities if snap else 0)
        yield GaugeMetricFamily(
            PREFIX + "scrape_duration_seconds",
            "How long the previous scrape of /metrics took to collect and write, in seconds.",
            self.last_scrape,
        )
        self.last_scrape = time.perf_counter() - start  # the families above are written as they are yielded


def serve(
    backend: QuotaBackend | Callable[[], QuotaBackend],
    *,
    listen: tuple[str, int] = DEFAULT_LISTEN,
    scrape: Sequence[str] = (),
    prometheus: str | None = None,
    refresh: float = 30.0,
    sensor_interval: float = 15.0,
    manifests: Sequence[str] = (),
) -> Exporter:
    """Start the exporter (see :class:`Exporter`); ``handle.stop()`` ends it. ``backend`` may be the function that
    opens one: then the exporter opens it (and again, when a poll failed) and closes it."""
    return Exporter(
        backend,
        listen=listen,
        scrape=scrape,
        prometheus=prometheus,
        refresh=refresh,
        sensor_interval=sensor_interval,
        manifests=manifests,
    ).start()
