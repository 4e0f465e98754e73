"""Read the brokers' quota sensors: from a Prometheus server (HTTP API, instant and range queries) or straight from
the JMX exporter endpoints (``/metrics``, parsed by ``prometheus_client``'s text parser). Both give
:class:`kquotactl.observe.throttled.Sample` values; each broker is named by its exporter's ``host:port`` (Prometheus'
``instance`` label), so both sources name brokers alike.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable, Iterator
from typing import Any
from urllib.parse import urlsplit

import requests
from prometheus_client.parser import text_string_to_metric_families

from kquotactl.core.errors import BackendUnavailable, QuotaError
from kquotactl.core.retry import RetryPolicy
from kquotactl.impact.replay import BROKER_COLUMN
from kquotactl.observe.schemes import SELECTOR, Reading, metric_of, selector, to_samples
from kquotactl.observe.throttled import LISTENER_THROTTLE, THROTTLE, TRAFFIC_METRICS, Sample, sensor_traffic

THROTTLE_METRICS = (THROTTLE, LISTENER_THROTTLE)
TIMEOUT = 10.0


def _get(url: str, params: dict[str, str] | None = None, timeout: float = TIMEOUT) -> requests.Response:
    try:
        resp = requests.get(url, params=params, timeout=timeout)
    except requests.RequestException as e:
        raise BackendUnavailable(f"{url}: cannot reach it ({_why(e, timeout)})") from None
    if resp.status_code >= 400 and "json" not in resp.headers.get("content-type", ""):  # the API's errors are JSON
        raise BackendUnavailable(f"{url}: HTTP {resp.status_code}")
    return resp


def _why(e: requests.RequestException, timeout: float) -> str:
    """Why a request failed, in words (not the exception's class name)."""
    text = str(e).lower()
    if isinstance(e, requests.Timeout):
        return f"no answer within {timeout:g} s"
    if isinstance(
        e, (requests.exceptions.InvalidURL, requests.exceptions.MissingSchema, requests.exceptions.InvalidSchema)
    ):
        return "not a URL: expected http://HOST:PORT"
    if "refused" in text:
        return "connection refused"
    if "resolve" in text or "name or service not known" in text or "nodename nor servname" in text:
        return "unknown host"
    if isinstance(e, requests.exceptions.SSLError):
        return "TLS handshake failed"
    return "the connection failed"


def broker_of(url: str) -> str:
    """``http://host:port/metrics`` -> ``host:port`` (what Prometheus calls the target's instance)."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    return parts.netloc


def metrics_url(url: str) -> str:
    """An exporter address as given (``host:port`` or a URL without a path) -> its ``/metrics`` URL."""
    full = url if "://" in url else f"http://{url}"
    return full if urlsplit(full).path not in ("", "/") else full.rstrip("/") + "/metrics"


def scrape(urls: Iterable[str], timeout: float = TIMEOUT) -> list[Sample]:
    """Every quota sensor sample of each exporter endpoint (one per broker), in whichever scheme its configuration
    names them (:mod:`kquotactl.observe.schemes`)."""
    out: list[Sample] = []
    for url in urls:
        target = metrics_url(url)
        text = _get(target, timeout=timeout).text
        broker = broker_of(target)
        try:
            families = list(text_string_to_metric_families(text))
        except ValueError as e:
            raise QuotaError(f"{target}: not a Prometheus text exposition ({e})") from None
        out.extend(to_samples(Reading(s.name, s.labels, float(s.value), broker) for f in families for s in f.samples))
    return out


def _api(base: str, path: str, params: dict[str, str], timeout: float) -> Any:
    url = base.rstrip("/") + path
    resp = _get(url, params, timeout)
    try:
        body = resp.json()
    except ValueError:
        raise QuotaError(f"{url}: not a Prometheus API answer (HTTP {resp.status_code})") from None
    if body.get("status") != "success":
        raise QuotaError(f"{url}: {body.get('errorType', 'error')}: {body.get('error', 'query failed')}")
    return body["data"]


def instant(
    base: str, query: str = SELECTOR, at: float | None = None, timeout: float = TIMEOUT
) -> list[dict[str, Any]]:
    """``/api/v1/query``: the vector result (``metric`` labels and one ``value``)."""
    params = {"query": query}
    if at is not None:
        params["time"] = f"{at:.3f}"
    data = _api(base, "/api/v1/query", params, timeout)
    if data.get("resultType") != "vector":
        raise QuotaError(f"{base}: query {query!r} gave a {data.get('resultType')}, not a vector")
    result: list[dict[str, Any]] = data["result"]
    return result


def range_query(
    base: str, query: str, start: float, end: float, step: float, timeout: float = TIMEOUT
) -> list[dict[str, Any]]:
    """``/api/v1/query_range``: the matrix result (``metric`` labels and ``values``)."""
    params = {"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
    data = _api(base, "/api/v1/query_range", params, timeout)
    if data.get("resultType") != "matrix":
        raise QuotaError(f"{base}: query {query!r} gave a {data.get('resultType')}, not a matrix")
    result: list[dict[str, Any]] = data["result"]
    return result


def _reading(base: str, series: Any, raw: Any) -> float:
    """One value of a query answer as a float (NaN and infinities kept: each caller skips them, a stale or idle
    sensor's reading); a value that is no number is refused, naming the series."""
    try:
        return float(raw)
    except (TypeError, ValueError):
        name = series.get("metric", {}).get("__name__", "a series") if isinstance(series, dict) else "a series"
        raise QuotaError(f"{base}: {name}: value {raw!r} is not a number; expected a Prometheus sample value") from None


def _points(base: str, result: list[Any], key: str) -> Iterator[tuple[dict[str, str], list[tuple[float, float]]]]:
    """``(labels, [(time, value)])`` of each series of a query answer (``key``: ``value`` for an instant vector,
    ``values`` for a range matrix); an answer of another shape is refused in one line."""
    for series in result:
        try:
            labels = dict(series["metric"])
            pairs = [series["value"]] if key == "value" else series["values"]
            points = [(_reading(base, series, at), _reading(base, series, v)) for at, v in pairs]
        except (KeyError, TypeError, ValueError, AttributeError):
            raise QuotaError(f"{base}: not a Prometheus API answer (a series without metric and {key})") from None
        yield labels, points


def _as_reading(labels: dict[str, str], value: float, ts: float = 0.0, peak: float = math.nan) -> Reading:
    """A query answer's series as a :class:`~kquotactl.observe.schemes.Reading` (the broker: its ``instance``)."""
    name = labels.get("__name__", "")
    return Reading(name, labels, value, labels.get("instance", ""), ts, peak)


#: The brokers' exporters as Prometheus scrapes them: each instance with a quota series, and when it last scraped it
SCRAPED_AT = "timestamp(up) and on (instance) group by (instance) (" + SELECTOR + ")"
FRESH_TIMEOUT = 30.0


def wait_scraped_after(base: str, since: float, timeout: float = FRESH_TIMEOUT, poll: float = 0.25) -> None:
    """Return once Prometheus has scraped every broker exporter it knows *after* ``since`` (epoch seconds), so an
    instant query shows the sensors as they are now: a sensor the brokers created since the last scrape is not in
    Prometheus yet, and would read as none. Prometheus also scrapes a new target only seconds after it starts."""
    last: list[float] = []
    for attempt in RetryPolicy(delay=poll, deadline=timeout).tries(time.monotonic, time.sleep):
        last = [points[0][1] for _, points in _points(base, instant(base, SCRAPED_AT), "value")]
        if last and min(last) >= since:
            return
        if attempt.last:
            break
    what = f"last at {_utc(min(last))}" if last else "no exporter with quota sensor series"
    raise BackendUnavailable(
        f"{base}: Prometheus has not scraped the brokers' exporters in {timeout:g} s ({what}): "
        "is it scraping them, with jmx-exporter-kafka-quotas.yaml?"
    )


def fresh_from_prometheus(base: str) -> list[Sample]:
    """The quota sensors as they are now: :func:`from_prometheus` after :func:`wait_scraped_after` this moment, on
    Prometheus' own clock (ours may be off from it)."""
    (now,) = instant(base, "vector(time())")
    wait_scraped_after(base, float(now["value"][1]))
    return from_prometheus(base)


def from_prometheus(
    base: str, lookback: float = 0.0, step: float | None = None, now: float | None = None
) -> list[Sample]:
    """The quota sensors now (instant query), or over the last ``lookback`` seconds (range query): then each
    series gives its largest throttle time and its average usage over the range (with the usage's peak, which
    decides whether the throttle was current, :data:`kquotactl.observe.throttled.CURRENT_SHARE`), so a throttle that
    ended a few seconds ago still shows. The step defaults to 1 s, coarser for long ranges (at most ~250 points
    a series)."""
    if lookback <= 0:
        return to_samples(
            _as_reading(labels, points[0][1]) for labels, points in _points(base, instant(base, at=now), "value")
        )
    end = time.time() if now is None else now
    readings: list[Reading] = []
    step = step or max(1.0, lookback / 250)
    for labels, points in _points(base, range_query(base, SELECTOR, end - lookback, end, step), "values"):
        values = [v for _, v in points if math.isfinite(v)]
        if not values:
            continue
        if metric_of(labels.get("__name__", "")) in THROTTLE_METRICS:
            readings.append(_as_reading(labels, max(values)))
        else:  # the average usage, and its peak: what says whether a throttle in the range was current then
            readings.append(_as_reading(labels, sum(values) / len(values), peak=max(values)))
    return to_samples(readings)


#: Prometheus answers at most 11,000 points a series per range query: longer ranges are asked in chunks
MAX_POINTS = 10_000
#: and a chunk holds about this many points of all its series (an answer's JSON, decoded, is ~250 B a point)
POINTS_PER_QUERY = 200_000
FIRST_POINTS = 60
TRAFFIC_SELECTOR = selector(TRAFFIC_METRICS)


def range_chunks(
    base: str, start: float, end: float, step: float, query: str = TRAFFIC_SELECTOR, timeout: float = TIMEOUT
) -> Iterator[tuple[float, list[tuple[Sample, Any, Any]]]]:
    """Every series of ``query`` on ``[start, end]`` every ``step`` s, one range query after the other: per query,
    the time of its last point and each series' sensor names (a :class:`Sample`, whichever scheme named it; its
    value unused) with the times and values of its points as numpy arrays. A query holds at most
    :data:`MAX_POINTS` points a series and about :data:`POINTS_PER_QUERY` in all, its answer converted column-wise
    (no Python step per point): a range of weeks at 1 s is streamed."""
    size = FIRST_POINTS  # points a series: the first chunk counts the series, the next hold ~POINTS_PER_QUERY
    t = start
    while t <= end:
        last = min(end, t + (size - 1) * step)
        result = range_query(base, query, t, last, step, timeout)
        size = max(FIRST_POINTS, min(MAX_POINTS, POINTS_PER_QUERY // max(1, len(result))))
        points = [_within(_point_arrays(base, series), t, last) for series in result]
        readings = [_as_reading(labels, float(i)) for i, (labels, _, _) in enumerate(points)]
        # one per sensor: where two schemes name it, the first scheme's
        yield last, [(sample, *points[int(sample.value)][1:]) for sample in to_samples(readings)]
        t = last + step


def range_series(
    base: str, start: float, end: float, step: float, query: str = TRAFFIC_SELECTOR, timeout: float = TIMEOUT
) -> Iterator[tuple[Sample, Any, Any]]:
    """Every series of every chunk of :func:`range_chunks`, in the order read."""
    for _, series in range_chunks(base, start, end, step, query, timeout):
        yield from series


def _within(series: tuple[dict[str, str], Any, Any], start: float, end: float) -> tuple[dict[str, str], Any, Any]:
    """Only the points a query asked for (``[start, end]``, to the millisecond it was asked in): a proxy or cache
    that answers more would have them counted in two chunks."""
    labels, times, values = series
    keep = (times >= start - 5e-4) & (times <= end + 5e-4)
    return (labels, times, values) if keep.all() else (labels, times[keep], values[keep])


def _point_arrays(base: str, series: Any) -> tuple[dict[str, str], Any, Any]:
    """A range answer's series: its labels, and its points' times and values as float arrays (NaN and infinities
    kept: the caller skips them); a value that is no number is refused, naming the series."""
    import numpy as np

    try:
        labels = dict(series["metric"])
        pairs = np.asarray(series["values"], dtype=np.str_).reshape(-1, 2)
    except (KeyError, TypeError, ValueError, AttributeError):
        raise QuotaError(f"{base}: not a Prometheus API answer (a series without metric and values)") from None
    try:
        return labels, pairs[:, 0].astype(np.float64), pairs[:, 1].astype(np.float64)
    except ValueError:
        for at, raw in pairs.tolist():  # the point that is no number, named
            _reading(base, series, at)
            _reading(base, series, raw)
        raise QuotaError(f"{base}: not a Prometheus API answer (a point that is no number)") from None


def traffic_table(base: str, start: float, end: float, step: float, sample_s: int = 1) -> Any:
    """The brokers' quota sensors on ``[start, end]`` as an impact traffic table in samples of ``sample_s`` seconds
    (pyarrow; columns of :func:`kquotactl.observe.throttled.sensor_traffic`, with a ``broker`` column); a range
    without any quota sensor reading is an error."""
    columns = sensor_traffic(range_series(base, start, end, step), step, sample_s)
    if not len(columns["ts"]):
        raise no_readings(base, start, end)
    return _table(columns)


def traffic_slices(base: str, start: float, end: float, step: float, sample_s: int = 1) -> Iterator[Any]:
    """:func:`traffic_table` in time slices, one a range query, each holding only samples no later reading adds
    to (a sample the next query's first reading still overlaps is carried over): for ranges too long for one
    table. The rows of a sample two queries share are added once more, so its usage may differ from
    :func:`traffic_table`'s in the last bit; with a step that divides the sample (1 s readings of 1 s samples),
    no sample is shared."""
    import pyarrow as pa
    import pyarrow.compute as pc

    carried = None
    for last, series in range_chunks(base, start, end, step):
        table = _table(sensor_traffic(series, step, sample_s))
        if carried is not None and carried.num_rows:
            table = _regrouped(pa.concat_tables([carried, table]))
        done = pc.less(table.column("ts"), math.floor(last / sample_s) * sample_s)
        carried = table.filter(pc.invert(done))
        if (complete := table.filter(done)).num_rows:
            yield complete
    if carried is not None and carried.num_rows:
        yield carried


def _regrouped(table: Any) -> Any:
    """Rows of the same sample and sensor names added into one, sorted as :func:`sensor_traffic` sorts them."""
    names = ["ts", BROKER_COLUMN, "user", "client_id", "ip"]
    usage = [c for c in table.column_names if c not in names]
    summed = table.group_by(names, use_threads=False).aggregate([(c, "sum") for c in usage])
    out = summed.select([*names, *(f"{c}_sum" for c in usage)]).rename_columns([*names, *usage])
    return out.sort_by([(n, "ascending") for n in names])


def no_readings(base: str, start: float, end: float) -> QuotaError:
    """The error of a range without any quota sensor reading."""
    return QuotaError(
        f"{base}: no quota sensor readings (kafka_quota_{{{','.join(TRAFFIC_METRICS)}}}, or another "
        f"exporter configuration's names for them) between {_utc(start)} and {_utc(end)}: is Prometheus "
        "scraping the brokers' JMX exporters with jmx-exporter-kafka-quotas.yaml? (A broker records its "
        "quota sensors only while some quota is set.)"
    )


def _table(columns: dict[str, Any]) -> Any:
    import pyarrow as pa

    types = {"ts": pa.float64(), BROKER_COLUMN: pa.string(), "user": pa.string(), "client_id": pa.string()}
    types["ip"] = pa.string()
    return pa.table({c: pa.array(v, type=types.get(c, pa.float64())) for c, v in columns.items()})


def _utc(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))
