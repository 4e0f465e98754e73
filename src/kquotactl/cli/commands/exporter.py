"""``kquotactl exporter``: quota limits, utilization and throttling as Prometheus metrics, served until stopped
(:mod:`kquotactl.services.exporter`; the metric contract is in docs/exporter.md).

Only click is imported at module level; prometheus_client, the observe layer and the backends load inside.
"""

from __future__ import annotations

from typing import Any

import click

from kquotactl.cli.groups import OnceCommand
from kquotactl.cli.state import AppState


def _duration(ctx: click.Context, param: click.Parameter, value: str) -> float:
    from kquotactl.core.errors import UsageError
    from kquotactl.core.timespec import parse_duration

    seconds = parse_duration(value, f"--{param.name.replace('_', '-')}" if param.name else "")
    if not 1 <= seconds <= 86_400:
        raise UsageError(f"--{(param.name or '').replace('_', '-')} {value!r}: give between 1s and 24h")
    return seconds


def _listen(ctx: click.Context, param: click.Parameter, value: str) -> tuple[str, int]:
    from kquotactl.core.errors import UsageError

    host, _, port = value.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        raise UsageError(f"--listen {value!r} is not HOST:PORT (e.g. 127.0.0.1:9798, 0.0.0.0:9798)")
    return host.strip("[]"), int(port)


@click.command(cls=OnceCommand)
@click.option(
    "--listen",
    default="127.0.0.1:9798",
    show_default=True,
    metavar="HOST:PORT",
    callback=_listen,
    help="Where to serve /metrics.",
)
@click.option(
    "--scrape",
    "scrape_urls",
    metavar="URL",
    multiple=True,
    help="A broker's JMX exporter endpoint (host:port or URL; repeat for each broker), read directly.",
)
@click.option("--prometheus", metavar="URL", help="A Prometheus server scraping the brokers' exporters.")
@click.option(
    "--refresh",
    default="30s",
    show_default=True,
    metavar="DURATION",
    callback=_duration,
    help="How often to read every quota over the admin API (ZooKeeper: a watch; a full read only after an outage).",
)
@click.option(
    "--sensor-interval",
    default="15s",
    show_default=True,
    metavar="DURATION",
    callback=_duration,
    help="How often to read the brokers' sensors.",
)
@click.option(
    "-f",
    "--file",
    "files",
    multiple=True,
    metavar="MANIFEST",
    type=click.Path(exists=True),
    help="Manifest files or directories to compare the cluster with (drift; cluster-wide budgets). Repeatable.",
)
@click.pass_context
def exporter(
    ctx: click.Context,
    listen: tuple[str, int],
    scrape_urls: tuple[str, ...],
    prometheus: str | None,
    refresh: float,
    sensor_interval: float,
    files: tuple[str, ...],
) -> None:
    """Serve quota limits, utilization and throttling as Prometheus metrics until stopped (SIGTERM, Ctrl-C).

    Per quota-id with a sensor: the limit that applies with its level and entity (as explain resolves it), the
    usage and throttle time per broker, and usage / limit; per entity: the configured values, and with -f the
    drift from manifests. Quotas follow changes without a restart (ZooKeeper: a watch on /config/changes; admin
    API: one describe every --refresh). A source that fails keeps its last values and shows
    kquotactl_exporter_up{source} 0. Also /-/healthy and /-/ready.

    \b
    Examples:
      kquotactl --bootstrap-server b:9092 exporter --scrape b1:7071 --scrape b2:7071
      kquotactl --zookeeper zk:2181/kafka exporter --prometheus http://prometheus:9090 -f quotas/
      kquotactl --context prod exporter --listen 0.0.0.0:9798 --refresh 1m
    """
    from kquotactl.backends.factory import open_backend
    from kquotactl.core.errors import UsageError
    from kquotactl.services.exporter import serve

    if scrape_urls and prometheus:
        raise UsageError("give either --prometheus URL or --scrape URL (one per broker), not both")
    conn = ctx.ensure_object(AppState).connection().check()  # no cluster, bad TLS files: said before serving
    handle = serve(
        lambda: open_backend(conn),
        listen=listen,
        scrape=scrape_urls,
        prometheus=prometheus,
        refresh=refresh,
        sensor_interval=sensor_interval,
        manifests=files,
    )
    click.echo(f"kquotactl exporter: serving {handle.url}/metrics", err=True)
    _serve_until_stopped(handle)


def _serve_until_stopped(handle: Any) -> None:
    """Wait until SIGTERM or Ctrl-C, then stop serving: a stop that was asked for, so exit 0 (not 143 as commands
    cut short by SIGTERM, cli/signals.py): SIGTERM only ends the wait, it interrupts nothing."""
    import signal

    try:
        previous = signal.signal(signal.SIGTERM, lambda signum, frame: handle.request_stop())
    except ValueError:  # not the main thread: the caller stops it
        previous = None
    try:
        handle.wait()
    except KeyboardInterrupt:
        pass
    finally:
        handle.stop()
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        click.echo("kquotactl exporter: stopped", err=True)
