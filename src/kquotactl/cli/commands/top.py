"""``kquotactl top``: who is throttled now. The brokers' quota sensors (from Prometheus, or scraped from the JMX
exporter endpoints) joined with the limits the cluster's quotas give each quota-id (:mod:`kquotactl.observe`).

Only click is imported at module level; the observe layer, requests and rich load inside the command.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from typing import Any

import click

from kquotactl.cli.collector import collector_paused
from kquotactl.cli.groups import OnceCommand
from kquotactl.cli.options import manifest_quotas_option
from kquotactl.cli.state import AppState
from kquotactl.cli.terminal import stdout_closed


@click.command(cls=OnceCommand)
@click.option("--prometheus", "prometheus", metavar="URL", help="A Prometheus server scraping the brokers' exporters.")
@click.option(
    "--scrape",
    "scrape_urls",
    metavar="URL",
    multiple=True,
    help="A broker's JMX exporter endpoint (host:port or URL; repeat for each broker), read directly.",
)
@click.option(
    "--lookback",
    type=click.FloatRange(min=0),
    default=0.0,
    show_default=True,
    metavar="SECONDS",
    help="--prometheus: a range query over the last SECONDS (largest throttle, average usage) instead of now.",
)
@manifest_quotas_option(
    "Take the limits from manifest files or directories instead of the cluster (repeatable; '-' = stdin)."
)
@click.option("--all", "show_all", is_flag=True, help="List every quota-id with a sensor, not only throttled ones.")
@click.option("-o", "--output", "fmt", type=click.Choice(["table", "json"]), help="Output format.")
@click.option(
    "--watch",
    type=click.FloatRange(min=0.5),
    is_flag=False,
    flag_value=2.0,
    default=None,
    metavar="[SECONDS]",
    help="Refresh the table every SECONDS (default 2) until interrupted.",
)
@click.pass_context
def top(
    ctx: click.Context,
    prometheus: str | None,
    scrape_urls: tuple[str, ...],
    lookback: float,
    files: tuple[str, ...],
    show_all: bool,
    fmt: str | None,
    watch: float | None,
) -> None:
    """Who is throttled now: per quota-id (user/client-id, ip), usage and throttle time per broker and summed,
    next to the limit that applies and the level it comes from (as explain resolves it), sorted by throttle.

    Reads the brokers' quota sensors through the Prometheus JMX exporter (with the rules kquotactl ships,
    jmx-exporter-kafka-quotas.yaml), from a Prometheus server (--prometheus) or straight from each broker's
    exporter (--scrape, repeated); the limits come from the cluster given as for the other commands, or from
    manifests (-f: e.g. the proposed ones, before they are applied). Limits are per broker.

    \b
    Examples:
      kquotactl --bootstrap-server b:9092 top --prometheus http://prometheus:9090
      kquotactl --bootstrap-server b:9092 top --scrape b1:7071 --scrape b2:7071 -o json
      kquotactl --bootstrap-server b:9092 top --prometheus http://prometheus:9090 --watch 5
      kquotactl top --prometheus http://prometheus:9090 -f quotas/
    """
    from kquotactl.cli.state import quota_index
    from kquotactl.services.top import top as top_rows

    state = ctx.ensure_object(AppState)
    fmt = _checked_format(state, prometheus, scrape_urls, lookback, fmt, watch)
    # once (not --watch): the quota set, the sensors and the rows read with the cycle collector paused, as describe
    # reads (a fifth of the time of 30,000 quota-ids went to collections walking objects that are all kept)
    with collector_paused() if watch is None else contextlib.nullcontext():
        index = quota_index(ctx, state, files) if files else None  # manifests read once, the cluster every refresh

        def rows() -> list[Any]:
            live = index or (lambda: quota_index(ctx, state, ()))  # an empty manifest's index is falsy, as it was
            return top_rows(live, prometheus=prometheus, scrape=scrape_urls, lookback=lookback, show_all=show_all)

        if fmt == "json":
            from kquotactl.render.jsontext import indented_json

            click.echo(indented_json([r.to_json() for r in rows()]))
        else:
            _show(rows, show_all, watch)


def _checked_format(
    state: AppState,
    prometheus: str | None,
    scrape_urls: tuple[str, ...],
    lookback: float,
    fmt: str | None,
    watch: float | None,
) -> str:
    """The output format, once the options are known to go together."""
    from kquotactl.core.errors import UsageError

    if bool(prometheus) == bool(scrape_urls):
        raise UsageError("give either --prometheus URL or --scrape URL (one per broker), not both")
    if lookback and not prometheus:
        raise UsageError("--lookback is a Prometheus range query: it goes with --prometheus")
    fmt = fmt or state.output
    if fmt not in (None, "table", "json"):
        raise UsageError(f"-o {fmt}: top shows a table or json")
    fmt = fmt or ("table" if sys.stdout.isatty() else "json")
    if watch is not None and fmt != "table":
        raise UsageError("--watch refreshes a table: drop -o json, or --watch")
    return fmt


def _show(rows: Callable[[], list[Any]], show_all: bool, watch: float | None) -> None:
    """The table once, or every ``watch`` seconds until interrupted: redrawn in place on a terminal, appended in
    a pipe or a file (rich's Live draws only on a terminal)."""
    from kquotactl.cli.manifestargs import terminal_width

    width = terminal_width()
    if watch is None:
        click.echo("\n".join(_lines(rows(), show_all, width)))
        return
    if not sys.stdout.isatty():
        try:
            while True:
                click.echo("\n".join(_lines(rows(), show_all, width)))
                sys.stdout.flush()
                if stdout_closed():  # `top --watch | head`: nobody reads on
                    break
                time.sleep(watch)
        except KeyboardInterrupt:
            pass
        return
    from rich.console import Console
    from rich.live import Live
    from rich.text import Text

    def screen() -> Text:
        return Text("\n".join(_lines(rows(), show_all, terminal_width())), no_wrap=True, overflow="ignore")

    with Live(screen(), console=Console(highlight=False), auto_refresh=False) as live:
        try:
            while True:
                time.sleep(watch)
                live.update(screen(), refresh=True)
        except KeyboardInterrupt:
            pass


HEADER = ["QUOTA-ID", "KEY", "USAGE", "LIMIT/BROKER", "THROTTLE", "LEVEL FROM", "PER BROKER (usage, throttle)"]


def _lines(rows: list[Any], show_all: bool, width: int | None) -> list[str]:
    """The title, one table row per quota-id and key when the table fits ``width`` (None: a pipe, any width; the
    quota-id on its first row only), else per quota-id a block per key; then the note on what "now", "recent"
    and "past" mean, wrapped."""
    from kquotactl.core.keys import KEYS, human, limit_text
    from kquotactl.core.layout import blocks, fits, table_lines, wrap
    from kquotactl.observe.throttled import CURRENT_SHARE, FORWARDED_NOTE, LISTENER_NOTE

    title = "quota-ids with a sensor" if show_all else "throttled quota-ids"
    table: list[list[str]] = []
    for row in rows:
        for use in row.uses:
            key = KEYS[use.key]
            listener = use.note == LISTENER_NOTE
            per_broker = "; ".join(
                f"{b}: {human(key, f.usage)}, {f.throttle_ms:.0f} ms"
                + (f" ({state})" if (state := use.state(f)) not in (None, "now") else "")
                for b, f in sorted(use.brokers.items())
            )
            table.append(
                [
                    row.quota_id.words(),
                    use.key,
                    "-" if listener else human(key, use.usage),
                    limit_text(key, use.limit) if use.limit is not None else "per ip" if listener else "unlimited",
                    _throttle_words(use),
                    f"{use.resolution.level or '-'} {use.applies}"
                    + (" (forwarded: the controller's throttle)" if use.note == FORWARDED_NOTE else ""),
                    per_broker,
                ]
            )
    out = [f"{title} ({time.strftime('%H:%M:%S')})"]
    if not table:
        out.append("(none)")
    elif fits(HEADER, table, width):
        shown = [[r[0] if i == 0 or r[0] != table[i - 1][0] else "", *r[1:]] for i, r in enumerate(table)]
        out += table_lines(HEADER, shown)
    else:
        out += blocks(HEADER, table, 2, width, group=True)
    note = (
        "throttle-time averages over the last minute (metrics.num.samples × metrics.sample.window.ms): "
        f"a throttle is now when its usage is at least {CURRENT_SHARE:.0%} of the limit; recent where throttled "
        "traffic is not recorded (fetch, controller mutations, ip connections, forwarded requests), so the "
        "usage cannot tell; past (not a throttle) when the usage is under it"
    )
    return out + wrap(note, width or 100)


def _throttle_words(use: Any) -> str:
    """The throttle now; "recent" where the sensors cannot tell it from one in the last minute; a throttle time
    that is history (its usage is under the limit) as "past", not as a throttle."""
    if use.throttle == "past":
        return f"0 ms (past: {max(f.throttle_ms for f in use.brokers.values()):.0f} ms)"
    return f"{use.throttle_ms:.0f} ms" + (" (recent)" if use.throttle == "recent" else "")
