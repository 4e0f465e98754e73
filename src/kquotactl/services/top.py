"""``top`` callable from Python: the brokers' quota sensors (from a Prometheus server, or read straight from each
broker's JMX exporter) joined with the limit and level a quota set gives each quota-id (:mod:`kquotactl.observe`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the observe layer (and requests) loads inside the service
    from kquotactl.core.precedence import QuotaIndex
    from kquotactl.observe.throttled import QuotaIdRow


def top(
    quotas: QuotaIndex | Callable[[], QuotaIndex],
    *,
    prometheus: str | None = None,
    scrape: Sequence[str] = (),
    lookback: float = 0.0,
    show_all: bool = False,
) -> list[QuotaIdRow]:
    """The throttled quota-ids (``show_all``: every one with a sensor), sorted by throttle. The sensors come from
    the Prometheus server ``prometheus`` (``lookback``: a range query over that many seconds instead of now), else
    from the exporter endpoints ``scrape``; ``quotas`` (or its loader, called after the sensors are read) gives
    the limits."""
    from kquotactl.observe import prometheus as source
    from kquotactl.observe.throttled import top_rows

    samples = source.from_prometheus(prometheus, lookback) if prometheus else source.scrape(scrape)
    found = top_rows(samples, quotas() if callable(quotas) else quotas)
    return found if show_all else [r for r in found if r.throttled]
