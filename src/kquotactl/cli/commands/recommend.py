"""``kquotactl recommend``: limits from observed traffic, as a manifest to review; nothing is written to a cluster.

Only click is imported at module level; the traffic readers and the replay load inside the command.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from kquotactl.cli.groups import OnceCommand
from kquotactl.cli.manifestargs import live_records
from kquotactl.cli.options import (
    check_traffic_given,
    engine_options,
    parse_kafka_version,
    prometheus_range,
    prometheus_range_options,
    quota_window_options,
)
from kquotactl.cli.state import AppState, pass_state
from kquotactl.core.errors import UsageError

if TYPE_CHECKING:
    from kquotactl.services.recommend import Recommended

LEVELS = ("user-client", "user", "client-id")


@click.command(cls=OnceCommand)
@click.argument("traffic", metavar="[TRAFFIC...]", nargs=-1, type=click.Path())
@prometheus_range_options
@click.option(
    "--input-format",
    type=click.Choice(("table", "kafka-request-log")),
    default="table",
    show_default=True,
    help="A traffic table (Parquet/CSV/JSON lines), or the brokers' request logs (as impact run reads them).",
)
@click.option("--per-broker", is_flag=True, help="kafka-request-log: each TRAFFIC input is one broker's logs.")
@engine_options
@quota_window_options
@click.option("--kafka-version", metavar="X.Y[.Z]", help="The brokers' version, for the sampled Rate (as impact run).")
@click.option("--percentile", type=float, metavar="P", help="The percentile limits rest on (default 99).")
@click.option("--headroom", metavar="PCT", help="How far above the percentile a limit sits (default 20%).")
@click.option("--floor", "floors", multiple=True, metavar="KEY=VALUE", help="The lowest limit to propose for KEY.")
@click.option("--level", type=click.Choice(LEVELS), help="The entity limits are written on (default user-client).")
@click.option(
    "--tail-share",
    metavar="PCT",
    help="Quota-ids with at most this share of a key's traffic get one default entity instead of their own.",
)
@click.option("--key", "keys", multiple=True, metavar="KEY", help="Recommend only KEY (repeatable).")
@click.option("--keep", multiple=True, metavar="KEY", help="Leave KEY alone (repeatable).")
@click.option("--exempt", multiple=True, metavar="USER", help="Give USER no quota: super users, internal clients.")
@click.option(
    "--super-users",
    metavar="User:A;User:B",
    help="The brokers' super.users, exempted too (read from the cluster when one is given).",
)
@click.option(
    "--policy",
    "policy_file",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="A YAML policy with the fields percentile, headroom, floors, level, tail_share, keys, keep, exempt.",
)
@click.option(
    "--current",
    multiple=True,
    metavar="FILE",
    help="The quotas to start from (a manifest or an export), instead of the cluster's.",
)
@pass_state
@click.pass_context
def recommend(
    ctx: click.Context,
    state: AppState,
    traffic: Sequence[str],
    prometheus: str | None,
    since: str | None,
    until: str | None,
    step: str | None,
    input_format: str,
    per_broker: bool,
    engine: str,
    master: str,
    confs: Sequence[str],
    window_num: int,
    window_size_seconds: int,
    kafka_version: str | None,
    percentile: float | None,
    headroom: str | None,
    floors: Sequence[str],
    level: str | None,
    tail_share: str | None,
    keys: Sequence[str],
    keep: Sequence[str],
    exempt: Sequence[str],
    super_users: str | None,
    policy_file: str | None,
    current: Sequence[str],
) -> None:
    """Recommend quotas from observed traffic: a manifest whose every value carries its evidence.

    Each quota-id's rate per quota window sample is measured as the broker's Rate would (the replay impact
    runs; from Prometheus, the brokers' own sensors), ranked, and the policy applied: the percentile on the
    busiest broker, plus headroom, rounded up to two significant digits, never below a floor. The current
    quotas (the cluster's, or --current files) are kept where the traffic says nothing. Nothing is written
    to a cluster: review the manifest, then plan and apply it.

    \b
    Examples:
      kquotactl recommend traffic.parquet --current quotas.yaml > recommended.yaml
      kquotactl --bootstrap-server b:9092 recommend traffic/ --percentile 95 --headroom 50%
      kquotactl recommend traffic.csv --level user --tail-share 1% --exempt admin --floor producer_byte_rate=1MiB
      kquotactl recommend --input-format kafka-request-log --per-broker b1/ b2/ b3/ --current quotas.yaml
      kquotactl recommend --from-prometheus http://prometheus:9090 --since 14d --current quotas.yaml
    """
    from kquotactl.services.recommend import policy_of, protected_users, recommend_from_traffic, traffic_source

    fmt = state.output or "yaml"
    if fmt not in ("yaml", "json", "markdown"):
        raise UsageError(f"recommend writes yaml, json or markdown, not {fmt}")
    policy = policy_of(policy_file, percentile, headroom, floors, level, tail_share, keys, keep, exempt)
    check_traffic_given(traffic, prometheus, since, until, step, input_format)
    if prometheus and engine == "spark":
        raise UsageError("--from-prometheus is read on the local engine, streamed: drop --engine spark")
    if per_broker and input_format != "kafka-request-log":
        raise UsageError("--per-broker reads request logs: add --input-format kafka-request-log")
    version = parse_kafka_version(kafka_version) if kafka_version else None
    span = prometheus_range(since, until, step) if prometheus else None
    source = traffic_source(
        traffic, input_format, per_broker, engine, master, confs, window_num, window_size_seconds, version,
        prometheus, span,
    )  # fmt: skip
    live = bool(current) or state.conn.with_env().has_cluster  # the policy is checked before any cluster is read
    backend, records = live_records(state, ctx, current) if live else (None, [])
    protected, notes = protected_users(backend if not current else None, super_users)
    for note in notes:
        state.warn(note)
    policy = dataclasses.replace(policy, exempt=policy.exempt | protected)
    found = recommend_from_traffic(source, policy, current=records, warn=state.warn)
    _render(found, fmt)


def _render(found: Recommended, fmt: str) -> None:
    """The recommendation as ``fmt`` on standard output (the manifest's replay summary on standard error)."""
    if fmt == "json":
        from kquotactl.render.recommend import recommendation_json
        from kquotactl.render.records import dump_json

        doc = recommendation_json(found.recommendation, found.distributions)
        dump_json({**doc, "replayed": found.replayed}, sys.stdout)
    elif fmt == "markdown":
        from kquotactl.render.recommend import markdown_report

        sys.stdout.write(markdown_report(found.recommendation, found.current, found.replayed))
    else:
        from kquotactl.render.recommend import manifest_text, replay_lines

        sys.stdout.write(manifest_text(found.recommendation, found.current))
        for line in replay_lines(found.replayed):
            click.echo(line, err=True)
