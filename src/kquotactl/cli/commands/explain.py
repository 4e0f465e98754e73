"""``kquotactl explain``: which quota applies to a connection, from which precedence level, shared with whom,
and what throttle a given rate would get. Works live (either backend) or offline on manifests."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

import click

from kquotactl.cli.groups import OnceCommand
from kquotactl.cli.options import (
    controller_window_options,
    manifest_quotas_option,
    parse_kafka_version,
    principal_options,
    quota_window_options,
)
from kquotactl.cli.state import AppState, quota_index
from kquotactl.core.errors import UsageError

if TYPE_CHECKING:
    from kquotactl.core.explain import Connection, ThrottleModel
    from kquotactl.core.precedence import QuotaIndex
    from kquotactl.services.explain import Explained, ExplainedMany, Replayed
    from kquotactl.services.principals import PrincipalRuleArgs


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
def explain(ctx: click.Context, **kw: Any) -> None:
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
    state = ctx.ensure_object(AppState)
    fmt = state.output_format()
    if fmt == "kafka":
        raise UsageError("-o kafka has no explain form: use -o table, json or yaml")
    args = _Parsed.of(ctx, state, fmt, kw)
    opts, load = args.options, args.loader(ctx, state)
    if opts.replay is not None:
        from kquotactl.inputs import read_events
        from kquotactl.services.explain import replay

        events = read_events(opts.replay, getattr(opts.replay, "name", "events"))
        _render_replay(state, fmt, replay(events, conn=args.conn, quota_set=load, **args.replay_settings()))
    elif args.conn is not None:
        from kquotactl.services.explain import explain as explain_one

        backend = None if opts.offline else lambda: state.backend(ctx)
        wide = opts.cluster_wide or opts.brokers is not None
        done = explain_one(load, args.conn, args.throttle, cluster_wide=wide, brokers=opts.brokers, backend=backend)
        _render_one(state, fmt, done, opts.with_chain)
    else:
        from kquotactl.inputs import read_connections
        from kquotactl.services.explain import explain_many

        assert opts.connections is not None
        conns = read_connections(opts.connections, getattr(opts.connections, "name", "connections"))
        many = explain_many(load, conns, args.throttle)
        if opts.cluster_wide or opts.brokers is not None:  # said after loading the quotas, as it always was
            raise UsageError("--cluster-wide explains one connection (--user/--client-id/--ip), not --connections")
        _render_many(state, fmt, many, opts.with_chain)


@dataclass
class _Options:
    """explain's options as click parses them (the principal options are taken out first)."""

    user: str | None
    client_id: str | None
    ip: str | None
    files: tuple[str, ...]
    example: bool
    connections: IO[str] | None
    observed: tuple[str, ...]
    window_num: int
    window_size_seconds: int
    controller_window_num: int
    controller_window_size_seconds: int
    kafka_version: str | None
    static_default: tuple[str, ...]
    with_chain: bool
    replay: IO[str] | None
    key: str | None
    limit_text: str | None
    unrecord_throttled: bool
    mutation_mode: str
    cluster_wide: bool
    brokers: int | None

    @property
    def offline(self) -> bool:
        return bool(self.files) or self.example

    @property
    def has_connection(self) -> bool:
        return self.user is not None or self.client_id is not None or self.ip is not None

    def check_combination(self) -> None:
        """The options that go together, before anything is read."""
        if self.connections is not None and self.has_connection:
            raise UsageError("give either --connections FILE or one connection (--user/--client-id/--ip), not both")
        if self.replay is None and self.connections is None and not self.has_connection:
            raise UsageError("nothing to explain: give --user/--client-id, --ip, --connections FILE or --replay EVENTS")
        if self.replay is not None and self.connections is not None:
            raise UsageError("--replay explains one connection's key: it cannot be combined with --connections")
        if self.replay is None and (self.key or self.limit_text or self.unrecord_throttled):
            raise UsageError("--key, --limit and --unrecord-throttled go with --replay")


@dataclass
class _Parsed:
    """explain's command line as the services take it: the connection, the throttle model, the static defaults."""

    options: _Options
    conn: Connection | None
    throttle: ThrottleModel
    version: tuple[int, ...] | None
    statics: dict[str, int]
    rule_args: PrincipalRuleArgs

    @classmethod
    def of(cls, ctx: click.Context, state: AppState, fmt: str, kw: dict[str, Any]) -> _Parsed:
        from kquotactl.cli.principalargs import echo_mapping, map_for_user, pop_principal, pop_rule_args
        from kquotactl.core.explain import Connection, ThrottleModel, parse_observed

        principal, principal_type = pop_principal(kw)
        rule_args = pop_rule_args(kw)
        opts = _Options(**kw)
        if principal is not None:
            if opts.user is not None:
                raise UsageError("--principal names the user: drop --user")
            backend = None if opts.offline else lambda: state.backend(ctx)
            mapping = map_for_user(principal, principal_type, rule_args, backend)
            opts.user = mapping.user
            echo_mapping(mapping, fmt)
        version = parse_kafka_version(opts.kafka_version) if opts.kafka_version else None
        statics = _parse_statics(opts.static_default, version)
        opts.check_combination()
        throttle = ThrottleModel(
            parse_observed(list(opts.observed)),
            opts.window_num,
            opts.window_size_seconds,
            kafka_version=version,
            mutation_mode=opts.mutation_mode,
            mutation_window_num=opts.controller_window_num,
            mutation_window_size_seconds=opts.controller_window_size_seconds,
        )
        conn = Connection.of(opts.user, opts.client_id, opts.ip) if opts.has_connection else None
        if "-" in opts.files and opts.connections is not None and getattr(opts.connections, "name", "") == "<stdin>":
            raise UsageError("-f - and --connections - cannot both read stdin: put one of them in a file")
        if conn is not None and opts.replay is None:
            _warn_unmatched_observed(state, conn, throttle)
        if opts.example and opts.files:
            raise UsageError("--example uses the embedded example quotas: drop -f, or drop --example")
        return cls(opts, conn, throttle, version, statics, rule_args)

    def loader(self, ctx: click.Context, state: AppState) -> Callable[[], QuotaIndex]:
        """What loads the quotas when a service first needs them, saying what it noticed on the way."""

        def load() -> QuotaIndex:
            if self.options.example:
                from kquotactl.services.explain import example_quota_set

                click.echo(
                    "kquotactl: --example: these answers use kquotactl's built-in example quotas, not a cluster's",
                    err=True,
                )
                return example_quota_set(self.statics).index
            from kquotactl.cli.principalargs import given_principals

            opts = self.options
            return quota_index(ctx, state, opts.files, self.statics, opts.brokers, given_principals(self.rule_args))

        return load

    def replay_settings(self) -> dict[str, Any]:
        """The replay service's settings from the options."""
        opts = self.options
        return {
            "key": opts.key,
            "limit": opts.limit_text,
            "unrecord_throttled": opts.unrecord_throttled,
            "window_num": opts.window_num,
            "window_size_seconds": opts.window_size_seconds,
            "kafka_version": self.version,
            "mutation_mode": opts.mutation_mode,
            "mutation_window": (opts.controller_window_num, opts.controller_window_size_seconds),
        }


def _warn_unmatched_observed(state: AppState, conn: Connection, throttle: ThrottleModel) -> None:
    """An observed rate for a key this connection has no quota of (an ip key without --ip, or the reverse)."""
    from kquotactl.core.keys import KEYS, KeyScope

    for k in throttle.observed:
        if (KEYS[k].kind is KeyScope.IP) != (conn.user is None) and not (conn.ip and conn.user):
            needs = "--ip" if conn.user else "--user/--client-id"
            state.warn(f"--observed {k}: this connection has no {k} (it needs {needs})")


def _parse_statics(items: tuple[str, ...], version: tuple[int, ...] | None) -> dict[str, int]:
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


def _render_one(state: AppState, fmt: str, done: Explained, with_chain: bool) -> None:
    if fmt == "table":
        from kquotactl.render.explain import cluster_wide_lines, explain_table

        explain_table(done.index, done.connection, sys.stdout, state.color, done.throttle)
        cluster_wide_lines(done.cluster_limits, done.brokers, sys.stdout)
    else:
        from kquotactl.render.records import dump_json, dump_yaml

        (dump_json if fmt == "json" else dump_yaml)(done.to_json(chain=with_chain or fmt == "yaml"), sys.stdout)


def _render_many(state: AppState, fmt: str, many: ExplainedMany, with_chain: bool) -> None:
    if fmt == "table":
        from kquotactl.render.explain import connections_table

        connections_table(many.index, many.connections, sys.stdout, state.color, many.throttle)
    elif fmt == "json":
        from kquotactl.render.explain import json_lines

        json_lines(many.lines(with_chain), sys.stdout)
    else:
        from kquotactl.render.records import dump_yaml

        for document in many.documents(with_chain):
            dump_yaml([document], sys.stdout)


def _render_replay(state: AppState, fmt: str, done: Replayed) -> None:
    from kquotactl.render.explain import json_lines, replay_json, replay_table

    if fmt == "table":
        replay_table(done.steps, done.key, done.limit, sys.stdout, state.color)
    elif fmt == "json":
        json_lines((replay_json(s, done.key) for s in done.steps), sys.stdout)
    else:
        from kquotactl.render.records import dump_yaml

        dump_yaml([replay_json(s, done.key) for s in done.steps], sys.stdout)
