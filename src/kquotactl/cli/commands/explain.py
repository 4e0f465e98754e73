"""``kquotactl explain``: which quota applies to a connection, from which precedence level, shared with whom,
and what throttle a given rate would get. Works live (either backend) or offline on manifests."""

from __future__ import annotations

import sys
from typing import IO, TYPE_CHECKING, Any

import click

from kquotactl.cli.kit import (
    OnceCommand,
    controller_window_options,
    manifest_quotas_option,
    parse_kafka_version,
    quota_index,
    quota_window_options,
)
from kquotactl.cli.options import principal_options

if TYPE_CHECKING:
    from collections.abc import Callable

    from kquotactl.core.explain import Connection
    from kquotactl.core.precedence import QuotaIndex


@click.command(cls=OnceCommand)
@click.option(
    "--user",
    metavar="NAME",
    help="The connection's user principal (default ANONYMOUS, as brokers name unauthenticated clients).",
)
@principal_options
@click.option("--client-id", "--client", "client_id", metavar="NAME", help='The connection\'s client-id (default "").')
@click.option("--ip", metavar="ADDRESS", help="The connection's address (connection_creation_rate).")
@manifest_quotas_option(
    "Explain against manifest files or directories instead of a cluster (offline; repeatable; '-' = stdin)."
)
@click.option(
    "--example",
    is_flag=True,
    help="Explain against a small embedded example quota set (offline, to try explain without a cluster).",
)
@click.option(
    "--connections",
    type=click.File("rb"),
    metavar="FILE",
    help="Explain many connections: CSV with a user,client-id,ip header, or JSON lines ('-' = stdin). "
    "With -o json: one JSON object per input line, in order.",
)
@click.option(
    "--observed",
    multiple=True,
    metavar="KEY=RATE",
    help="A rate the client sustains (e.g. producer_byte_rate=12MiB): shows the steady-state throttle. Repeatable.",
)
@quota_window_options
@controller_window_options
@click.option(
    "--kafka-version",
    metavar="X.Y[.Z]",
    help="Broker version to emulate, up to 4.4: static defaults on <= 2.8; the sampled Rate of --replay and "
    "--observed (1 ms window floor from 3.3, the 3.8 SampledStat); controller_mutation_rate from 2.7, its throttle "
    "narrowed first from 4.2. Default: the newest behaviour (4.4).",
)
@click.option(
    "--static-default",
    multiple=True,
    metavar="CONFIG=VALUE",
    help="A <= 2.8 broker's quota.producer.default / quota.consumer.default (the 9th level); needs --kafka-version.",
)
@click.option("--chain", "with_chain", is_flag=True, help="JSON/YAML: include every level of the chain per key.")
@click.option(
    "--replay",
    type=click.File("rb"),
    metavar="EVENTS",
    help="Replay recordings ('TIME_MS VALUE' lines or JSON lines) through Kafka's sampled Rate for one key and "
    "show each recording's throttle.",
)
@click.option(
    "--key",
    metavar="KEY",
    help="--replay: the quota key (default producer_byte_rate, or connection_creation_rate with --ip).",
)
@click.option(
    "--limit",
    "limit_text",
    metavar="VALUE",
    help="--replay: the quota (default: what the connection resolves to); 0 or a negative limit is replayed as a "
    "broker applies it.",
)
@click.option(
    "--unrecord-throttled",
    is_flag=True,
    help="--replay: take a recording whose throttle is above 0 back out, as the fetch (consumer_byte_rate) and "
    "connection (connection_creation_rate) paths do.",
)
@click.option(
    "--mutation-mode",
    type=click.Choice(["strict", "permissive"]),
    default="strict",
    show_default=True,
    help="controller_mutation_rate (--replay, --observed): strict = a request is refused, unrecorded, while the "
    "token bucket is below zero (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+: current clients); "
    "permissive = recorded, then throttled (older request versions).",
)
@click.option(
    "--cluster-wide",
    is_flag=True,
    help="Also show each limit cluster-wide: the per-broker limit times the live broker count (or --brokers).",
)
@click.option(
    "--brokers",
    type=click.IntRange(1),
    metavar="N",
    help="The broker count for the cluster-wide view and for manifests' cluster: budgets (offline, -f).",
)
@click.pass_context
def explain(
    ctx: click.Context,
    user: str | None,
    client_id: str | None,
    ip: str | None,
    files: tuple[str, ...],
    example: bool,
    connections: IO[str] | None,
    observed: tuple[str, ...],
    window_num: int,
    window_size_seconds: int,
    controller_window_num: int,
    controller_window_size_seconds: int,
    kafka_version: str | None,
    static_default: tuple[str, ...],
    with_chain: bool,
    replay: IO[str] | None,
    key: str | None,
    limit_text: str | None,
    unrecord_throttled: bool,
    mutation_mode: str,
    cluster_wide: bool,
    brokers: int | None,
    **principal_kw: Any,
) -> None:
    """Explain which quota applies to a connection, per quota type, and the throttle it would get.

    Each key resolves independently through the broker's 8 precedence levels (users/<u>/clients/<c>,
    users/<u>/clients/<default>, users/<u>, users/<default>/clients/<c>, users/<default>/clients/<default>,
    users/<default>, clients/<c>, clients/<default>; ips: ips/<ip>, ips/<default>), exactly as brokers do it,
    empty names included. Shows the level that applied, its limit, who shares it, and the whole chain with each
    level marked applied / not set / shadowed.

    \b
    Examples:
      kquotactl --zookeeper zk:2181 explain --user alice --client-id app1
      kquotactl explain -f quotas.yaml --user alice --client-id app1 --observed producer_byte_rate=12MiB
      kquotactl explain -f quotas.yaml --ip 192.0.2.10
      kquotactl explain --example --user alice --client-id ingest
      kquotactl --zookeeper zk:2181 explain --connections conns.csv -o json
      kquotactl explain --replay events.txt --key producer_byte_rate --limit 500
      kquotactl --bootstrap-server b:9092 explain --user team-a --cluster-wide
      kquotactl --bootstrap-server b:9092 explain --principal 'CN=svc-a,OU=payments,O=acme' --client-id app1
    """
    from kquotactl.cli.kit import AppState
    from kquotactl.cli.principalargs import (
        echo_mapping,
        given_principals,
        map_for_user,
        pop_principal,
        pop_rule_args,
    )
    from kquotactl.core.errors import UsageError
    from kquotactl.core.explain import Connection, ThrottleModel, explain_json, parse_observed
    from kquotactl.core.keys import KEYS
    from kquotactl.inputs import read_connections, read_events

    state = ctx.ensure_object(AppState)
    fmt = state.output_format()
    if fmt == "kafka":
        raise UsageError("-o kafka has no explain form: use -o table, json or yaml")
    principal, principal_type = pop_principal(principal_kw)
    rule_args = pop_rule_args(principal_kw)
    if principal is not None:
        if user is not None:
            raise UsageError("--principal names the user: drop --user")
        offline = bool(files) or example
        mapping = map_for_user(principal, principal_type, rule_args, None if offline else lambda: state.backend(ctx))
        user = mapping.user
        echo_mapping(mapping, fmt)
    version = parse_kafka_version(kafka_version) if kafka_version else None
    statics = _parse_statics(static_default, version)
    has_conn = user is not None or client_id is not None or ip is not None
    if connections is not None and has_conn:
        raise UsageError("give either --connections FILE or one connection (--user/--client-id/--ip), not both")
    if replay is None and connections is None and not has_conn:
        raise UsageError("nothing to explain: give --user/--client-id, --ip, --connections FILE or --replay EVENTS")
    if replay is not None and connections is not None:
        raise UsageError("--replay explains one connection's key: it cannot be combined with --connections")
    if replay is None and (key or limit_text or unrecord_throttled):
        raise UsageError("--key, --limit and --unrecord-throttled go with --replay")
    throttle = ThrottleModel(
        parse_observed(list(observed)),
        window_num,
        window_size_seconds,
        kafka_version=version,
        mutation_mode=mutation_mode,
        mutation_window_num=controller_window_num,
        mutation_window_size_seconds=controller_window_size_seconds,
    )
    conn = Connection.of(user, client_id, ip) if has_conn else None
    if "-" in files and connections is not None and getattr(connections, "name", "") == "<stdin>":
        raise UsageError("-f - and --connections - cannot both read stdin: put one of them in a file")
    if conn is not None and replay is None:
        from kquotactl.core.keys import KeyScope

        for k in throttle.observed:
            if (KEYS[k].kind is KeyScope.IP) != (conn.user is None) and not (conn.ip and conn.user):
                needs = "--ip" if conn.user else "--user/--client-id"
                state.warn(f"--observed {k}: this connection has no {k} (it needs {needs})")

    if example and files:
        raise UsageError("--example uses the embedded example quotas: drop -f, or drop --example")

    def load() -> Any:
        if example:
            click.echo(
                "kquotactl: --example: these answers use kquotactl's built-in example quotas, not a cluster's",
                err=True,
            )
            return _example_index(statics)
        return quota_index(ctx, state, files, statics, brokers, given_principals(rule_args))

    if replay is not None:
        events = read_events(replay, getattr(replay, "name", "events"))
        _replay(
            state,
            fmt,
            conn,
            load,
            events,
            key,
            limit_text,
            unrecord_throttled,
            window_num,
            window_size_seconds,
            version,
            mutation_mode,
            (controller_window_num, controller_window_size_seconds),
        )
        return

    index = load()
    out = sys.stdout
    if (cluster_wide or brokers is not None) and conn is None:
        raise UsageError("--cluster-wide explains one connection (--user/--client-id/--ip), not --connections")
    if conn is not None:
        views: list[tuple[Any, Any]] = []
        count = 0
        if cluster_wide or brokers is not None:
            from kquotactl.core.explain import resolutions

            if brokers is None and (files or example):
                raise UsageError("--cluster-wide offline (-f, --example) needs the broker count: add --brokers N")
            count = brokers if brokers is not None else len(state.backend(ctx).broker_ids())
            views = [(KEYS[r.key], r.limit) for r in resolutions(index, conn) if r.limit is not None]
        if fmt == "table":
            from kquotactl.render.explain import explain_table

            explain_table(index, conn, out, state.color, throttle)
            if views:
                from kquotactl.core.budget import cluster_view_words
                from kquotactl.core.wording import counted

                click.echo(f"Cluster-wide ({counted(count, 'broker')}; traffic assumed spread evenly):", file=out)
                for qk, limit in views:
                    click.echo(f"  {cluster_view_words(qk, limit, count)}", file=out)
        else:
            from kquotactl.render.records import dump_json, dump_yaml

            data = explain_json(index, conn, throttle, chain=with_chain or fmt == "yaml")
            if views:
                from kquotactl.core.budget import cluster_view

                data["cluster_wide"] = [cluster_view(qk, limit, count) for qk, limit in views]
            (dump_json if fmt == "json" else dump_yaml)(data, out)
        return

    assert connections is not None
    conns = read_connections(connections, getattr(connections, "name", "connections"))
    if fmt == "table":
        from kquotactl.render.explain import connections_table

        connections_table(index, conns, out, state.color, throttle)
    elif fmt == "json":
        from kquotactl.render.explain import json_lines
        from kquotactl.services.simulate import explain_lines

        json_lines(explain_lines(index, conns, throttle, with_chain), out)
    else:
        from kquotactl.render.records import dump_yaml

        for c in conns:
            dump_yaml([explain_json(index, c, throttle, with_chain)], out)


def _parse_statics(items: tuple[str, ...], version: tuple[int, ...] | None) -> dict[str, int]:
    from kquotactl.core.errors import UsageError
    from kquotactl.core.keys import KEYS, parse_value
    from kquotactl.core.precedence import STATIC_CONFIGS

    if not items:
        return {}
    from kquotactl.core.kafkaversions import behaviour

    if behaviour(version).has("no_static_defaults"):
        raise UsageError(
            "--static-default: static quota.producer.default / quota.consumer.default were removed in Kafka 3.0; "
            "add --kafka-version 2.8 (or older) to emulate a broker that has them"
        )
    by_config = {v: k for k, v in STATIC_CONFIGS.items()}
    out: dict[str, int] = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip()
        key = by_config.get(name, name if name in STATIC_CONFIGS else None)
        if not sep or key is None:
            raise UsageError(
                f"--static-default {item!r}: expected quota.producer.default=VALUE or quota.consumer.default=VALUE"
            )
        if key in out:
            raise UsageError(f"--static-default: {STATIC_CONFIGS[key]} given twice: give each once")
        out[key] = int(parse_value(KEYS[key], value))
    return out


EXAMPLE_MANIFEST = """\
# kquotactl explain --example: a small quota set with the classic surprises (man kquotactl-explain)
quotas:
  - entity: {user: alice}
    config: {producer_byte_rate: 10MiB}
  - entity: {user: alice, client-id: "<default>"}     # an old per-client cap nobody remembers
    config: {producer_byte_rate: 2MiB}
  - entity: {client-id: ingest}
    config: {producer_byte_rate: 50MiB, consumer_byte_rate: 20MiB}
  - entity: {user: "<default>"}
    config: {consumer_byte_rate: 5MiB, request_percentage: 50}
  - entity: {client-id: "<default>"}
    config: {consumer_byte_rate: 1MiB, controller_mutation_rate: 10}
  - entity: {ip: "<default>"}
    config: {connection_creation_rate: 20}
"""


def _example_index(statics: dict[str, int]) -> Any:
    from kquotactl.core.precedence import QuotaIndex
    from kquotactl.manifests.loader import load_text

    return QuotaIndex(load_text(EXAMPLE_MANIFEST, "<example>").records(), static_defaults=statics)


def _replay(
    state: Any,
    fmt: str,
    conn: Connection | None,
    load: Callable[[], QuotaIndex],
    events: list[tuple[int, float]],
    key: str | None,
    limit_text: str | None,
    unrecord: bool,
    window_num: int,
    window_size_seconds: int,
    version: tuple[int, ...] | None,
    mutation_mode: str,
    mutation_window: tuple[int, int],
) -> None:
    from kquotactl.render.explain import json_lines, replay_json, replay_table
    from kquotactl.services.simulate import replay

    done = replay(
        events,
        conn=conn,
        quota_set=load,
        key=key,
        limit=limit_text,
        unrecord_throttled=unrecord,
        window_num=window_num,
        window_size_seconds=window_size_seconds,
        kafka_version=version,
        mutation_mode=mutation_mode,
        mutation_window=mutation_window,
    )
    if fmt == "table":
        replay_table(done.steps, done.key, done.limit, sys.stdout, state.color)
    elif fmt == "json":
        json_lines((replay_json(s, done.key) for s in done.steps), sys.stdout)
    else:
        from kquotactl.render.records import dump_yaml

        dump_yaml([replay_json(s, done.key) for s in done.steps], sys.stdout)
