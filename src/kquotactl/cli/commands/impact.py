"""``kquotactl impact``: replay recorded traffic against a quota set — who would be throttled, how much, how often.

Only click is imported here at start-up; the engines (Spark, pyarrow, matplotlib, rich) load in the bodies.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click

from kquotactl.cli.groups import OnceGroup
from kquotactl.cli.options import (
    check_traffic_given,
    engine_options,
    parse_kafka_version,
    prometheus_range,
    prometheus_range_options,
    quota_window_options,
)


@click.group(cls=OnceGroup)
def impact() -> None:
    """Traffic impact replay: what a quota set would throttle on recorded traffic.

    The traffic is Parquet, CSV or JSON lines (ts, user, client_id, ip, produce_bytes, fetch_bytes, requests,
    request_time_ms, connections); every row resolves per quota key like a broker does, and each quota-id's usage
    is recorded, millisecond by millisecond, through Kafka's own sampled Rate and throttled as the broker would.
    kquotactl impact run --help lists the outputs (man kquotactl-impact-run).

    \b
    Examples:
      kquotactl impact generate traffic.parquet --rows 1000000 --quotas-out quotas.yaml
      kquotactl impact run traffic.parquet -f quotas.yaml --engine local
      kquotactl --zookeeper zk:2181 impact run traffic/ --compare proposed.yaml --out report/
    """


def _status(console: Any) -> Any:
    """A spinner on stderr while the engine works (nothing when stderr is not a terminal)."""
    import contextlib

    if not console.is_terminal:
        return contextlib.nullcontext(None)
    return console.status("starting", spinner="dots")


@impact.command("run")
@click.argument("traffic", metavar="[TRAFFIC...]", nargs=-1)
@prometheus_range_options
@click.option(
    "--input-format",
    type=click.Choice(["table", "kafka-request-log"]),
    default="table",
    show_default=True,
    help="table: Parquet/CSV/JSON lines traffic; kafka-request-log: broker request logs (kafka.request.logger at "
    "DEBUG: files, directories, rotated files, compressed .gz/.zip/.bz2/.deflate/.xz/.zst), parsed on the chosen "
    "engine; connections counted from them are a lower bound (SASL listeners do not log the first ApiVersions).",
)
@click.option(
    "-f",
    "--file",
    "files",
    multiple=True,
    metavar="MANIFEST",
    help="Quota set from manifest files/directories (offline); default: the live cluster's quotas.",
)
@click.option(
    "--compare",
    "compare_with",
    multiple=True,
    metavar="BASE",
    help="Compare with another quota set on the same traffic: a manifest, or 'live' for the cluster's quotas.",
)
@engine_options
@quota_window_options
@click.option(
    "--kafka-version",
    metavar="X.Y[.Z]",
    help="The brokers' version, for the sampled Rate the traffic is replayed through (the 3.8 ring of N + 1 "
    "samples, the 1 ms window floor from 3.3). Default: the latest behaviour.",
)
@click.option(
    "--top", type=click.IntRange(1, 1000), default=10, show_default=True, help="Quota-ids in the table and the picture."
)
@click.option(
    "--model",
    type=click.Choice(["client", "topic-threshold"]),
    default="client",
    show_default=True,
    help="topic-threshold adds the seed 'Broker side quota (V1)' model (needs a topic column).",
)
@click.option("--total-threshold", metavar="BYTES/S", help="topic-threshold: total.bytes.in.per.sec.threshold.")
@click.option(
    "--topic-threshold",
    "topic_thresholds",
    multiple=True,
    metavar="TOPIC=BYTES/S",
    help="topic-threshold: a topic's bytes.in.per.sec.threshold, repeatable (others share the rest).",
)
@click.option(
    "--topic-rate",
    type=click.Choice(["one-minute-rate", "quota-window"]),
    default="one-minute-rate",
    show_default=True,
    help="topic-threshold: the observed rates; one-minute-rate is the design's Meter OneMinuteRate (an EWMA ticked "
    "every 5 s), quota-window the client quotas' window rate (per sample, over --window-num x --window-size).",
)
@click.option(
    "--out",
    "out_dir",
    metavar="DIR",
    type=click.Path(file_okay=False),
    help="Write quota_ids.parquet, quota_ids.csv, summary.json and impact.png here.",
)
@click.option(
    "--brokers",
    type=click.IntRange(1),
    default=1,
    show_default=True,
    metavar="N",
    help="The traffic is the whole cluster's, assumed spread evenly over N brokers, each enforcing the per-broker "
    "limits (the replay compares it with each limit times N); also the count manifests' cluster: budgets divide by.",
)
@click.option(
    "--per-broker",
    is_flag=True,
    help="kafka-request-log: each TRAFFIC input is one broker's logs, replayed on its own against the per-broker "
    "limits (each broker meters only what it served).",
)
@click.pass_context
def run(
    ctx: click.Context,
    traffic: tuple[str, ...],
    prometheus: str | None,
    since: str | None,
    until: str | None,
    step: str | None,
    input_format: str,
    files: tuple[str, ...],
    compare_with: tuple[str, ...],
    engine: str,
    master: str | None,
    confs: tuple[str, ...],
    window_num: int,
    window_size_seconds: int,
    kafka_version: str | None,
    top: int,
    model: str,
    total_threshold: str | None,
    topic_thresholds: tuple[str, ...],
    topic_rate: str,
    out_dir: str | None,
    brokers: int,
    per_broker: bool,
) -> None:
    """Replay TRAFFIC (a file or directory), or the brokers' own sensors (--from-prometheus), against a quota set and
    report throttling per quota-id.

    For every quota-id: the level and entity that set its limit, the seconds it would be throttled, its
    highest rate, and the total and largest throttle. The replay is open loop: throttling does not slow the
    recorded traffic down. -o json prints {"summary": ..., "quota_ids": [...]} (plus "compare" with --compare).

    \b
    Examples:
      kquotactl impact run traffic.parquet -f quotas.yaml
      kquotactl impact run traffic/ -f proposed.yaml --compare current.yaml -o json
      kquotactl --zookeeper zk:2181 impact run s3a://bucket/traffic/ --engine spark --master yarn
      kquotactl impact run traffic.csv -f quotas.yaml --out report/ --top 5 --conf spark.driver.memory=8g
      kquotactl impact run --input-format kafka-request-log logs/ -f quotas.yaml --engine spark
      kquotactl impact run --from-prometheus http://prometheus:9090 --since 24h -f proposed.yaml
    """
    from rich.console import Console

    from kquotactl.cli.state import AppState
    from kquotactl.impact.replay import Window
    from kquotactl.impact.spark import parse_conf
    from kquotactl.services import impact as impact_service

    state = ctx.find_object(AppState) or AppState()
    _refuse_inputs(traffic, prometheus, since, until, step, input_format, out_dir)
    conf = parse_conf(confs)
    master = None if master == "submit" else master  # (None: left to spark-submit)
    version = parse_kafka_version(kafka_version) if kafka_version else None
    window = Window(window_num, window_size_seconds, windowed=prometheus is not None, kafka_version=version)
    rate_given = ctx.get_parameter_source("topic_rate") is click.core.ParameterSource.COMMANDLINE
    topic_cfg = _refuse_models(files, compare_with, model, total_threshold, topic_thresholds, topic_rate, rate_given)
    _refuse_brokers(input_format, per_broker, brokers, prometheus, topic_cfg is not None)
    span = prometheus_range(since, until, step) if prometheus else None
    replay = impact_service.Replay(window, traffic, prometheus, span, input_format, per_broker, engine, master, conf)
    with _status(Console(stderr=True)) as status:
        result = impact_service.impact(
            replay,
            files,
            compare_with,
            lambda: state.backend(ctx),
            brokers=brokers,
            top=top,
            topic=topic_cfg,
            out_dir=out_dir,
            say=_say(status, state.verbose),
            warn=state.warn,
            note=lambda line: click.echo(f"kquotactl: {line}", err=True),
        )
    _render(state, result, top)


def _say(status: Any, verbose: bool) -> Callable[[str], None]:
    """Each step of the replay: on the spinner (a terminal), else on stderr with --verbose."""

    def say(msg: str) -> None:
        if status is not None:
            status.update(msg)
        elif verbose:
            click.echo(f"kquotactl: {msg}", err=True)

    return say


def _refuse_inputs(
    traffic: tuple[str, ...],
    prometheus: str | None,
    since: str | None,
    until: str | None,
    step: str | None,
    input_format: str,
    out_dir: str | None,
) -> None:
    """The traffic given once (files or --from-prometheus), each input there, --out writable: before the replay."""
    from kquotactl.core.errors import UsageError
    from kquotactl.impact.engine import input_exists

    check_traffic_given(traffic, prometheus, since, until, step, input_format)
    if len(traffic) > 1 and input_format == "table":
        raise UsageError("several TRAFFIC inputs need --input-format kafka-request-log; give one table input")
    for path in traffic:
        input_exists(path)
    if out_dir is not None:
        from kquotactl.render.outfiles import check_dir

        check_dir(out_dir, "--out")  # before the replay, not after minutes of it


def _refuse_models(
    files: tuple[str, ...],
    compare_with: tuple[str, ...],
    model: str,
    total_threshold: str | None,
    topic_thresholds: tuple[str, ...],
    topic_rate: str,
    topic_rate_given: bool,
) -> Any:
    """The quota sets compared and the topic-threshold model's settings (its config, or None), checked."""
    from kquotactl.core.errors import UsageError

    if len(compare_with) > 1 and "live" in compare_with:
        raise UsageError("--compare takes manifests or 'live', not both")
    if not files and compare_with == ("live",):
        raise UsageError("--compare live needs the proposed quota set from -f MANIFEST")
    if model != "topic-threshold" and topic_rate_given:
        raise UsageError("--topic-rate needs --model topic-threshold")
    return _topic_config(model, total_threshold, topic_thresholds, topic_rate)


def _refuse_brokers(
    input_format: str, per_broker: bool, brokers: int, prometheus: str | None, topic_model: bool
) -> None:
    """Per-broker replays (--per-broker, --from-prometheus) against --brokers N and the one-broker topic model."""
    from kquotactl.core.errors import UsageError

    if per_broker and input_format != "kafka-request-log":
        raise UsageError("--per-broker replays broker request logs: add --input-format kafka-request-log")
    if brokers > 1 and (per_broker or prometheus):
        raise UsageError(
            "--brokers N spreads traffic that does not say which broker served it: "
            + ("--per-broker" if per_broker else "--from-prometheus")
            + " replays each broker's own"
        )
    if topic_model and (per_broker or prometheus):
        where = "--per-broker" if per_broker else "--from-prometheus"
        raise UsageError(f"--model topic-threshold replays the traffic as one broker's: drop {where}")


def _topic_config(model: str, total: str | None, pairs: tuple[str, ...], rate: str) -> Any:
    from kquotactl.core.errors import UsageError

    if model != "topic-threshold":
        if total or pairs:
            raise UsageError("--total-threshold and --topic-threshold need --model topic-threshold")
        return None
    from kquotactl.core.keys import KEYS, PRODUCE_KEY, parse_value
    from kquotactl.impact.topic import TopicConfig, parse_topic_thresholds

    if not total:
        raise UsageError("--model topic-threshold needs --total-threshold BYTES/S (e.g. 100MiB)")

    def parse(text: str) -> float:
        return float(parse_value(KEYS[PRODUCE_KEY], text))

    cfg = TopicConfig(parse(total), parse_topic_thresholds(pairs, parse), rate)
    cfg.check()
    return cfg


def _render(state: Any, result: dict[str, Any], top: int) -> None:
    from kquotactl.impact.output import dump_json, render_compare, render_table

    fmt = state.output_format()
    if fmt == "json":
        dump_json(result, sys.stdout)
    elif fmt == "yaml":
        from kquotactl.render.records import dump_yaml

        dump_yaml(result, sys.stdout)
    else:
        from kquotactl.cli.manifestargs import terminal_width

        width = terminal_width()
        render_table(result, sys.stdout, top, width)
        if "compare" in result:
            render_compare(result["compare"], sys.stdout, top, width)
        if "topic_threshold" in result:
            from kquotactl.impact.output import render_topics

            render_topics(result["topic_threshold"], sys.stdout, top, width)


@impact.command("generate")
@click.argument("path", metavar="PATH")
@click.option("--rows", type=click.IntRange(1), default=100_000, show_default=True, help="Samples to write.")
@click.option("--users", type=click.IntRange(1), default=2000, show_default=True)
@click.option("--clients", type=click.IntRange(1), default=10000, show_default=True)
@click.option("--rate", type=click.IntRange(1), default=14000, show_default=True, help="Samples per second.")
@click.option("--seed", type=int, default=7, show_default=True)
@click.option(
    "--files",
    type=click.IntRange(1, 10000),
    default=1,
    show_default=True,
    help="Split into this many Parquet files under PATH (a directory).",
)
@click.option(
    "--quotas-out",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Also write a matching quota manifest (every precedence level wins somewhere).",
)
def generate(
    path: str, rows: int, users: int, clients: int, rate: int, seed: int, files: int, quotas_out: str | None
) -> None:
    """Write synthetic traffic to PATH (.parquet, .csv or .jsonl): skewed users and clients, bursts, reconnect storms.

    \b
    Examples:
      kquotactl impact generate traffic.parquet --rows 1000000 --quotas-out quotas.yaml
      kquotactl impact generate traffic/ --rows 10000000 --files 10
      kquotactl impact generate small.csv --rows 5000 --users 20 --clients 50
    """
    from kquotactl.impact import generate as gen
    from kquotactl.render.outfiles import check_dir, check_file

    (check_dir if files > 1 else check_file)(path, "PATH")  # missing parent directories are not created
    if quotas_out is not None:
        check_file(quotas_out, "--quotas-out")
    table = gen.generate(rows, seed=seed, users=users, clients=clients, rate=rate)
    written = gen.write(table, path, files)
    msg = f"wrote {rows:,} row{'' if rows == 1 else 's'} to {path}" + (
        f" ({len(written)} files)" if len(written) > 1 else ""
    )
    if quotas_out:
        quota_set = gen.quotas(users, clients)
        gen.write_manifest(quota_set, quotas_out)
        msg += f"; quotas to {quotas_out}"
        if (note := gen.offline_only_note(quota_set)) is not None:
            click.echo(f"kquotactl: note: {quotas_out} is {note}", err=True)
    click.echo(msg)
