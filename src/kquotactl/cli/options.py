"""The option spec of the commands that take kafka-configs' options: which cluster (``connection_options``) and which
entity (``entity_options``), with the help texts they share, and the option groups several commands share (the
quota windows, ``--kafka-version``, ``-f MANIFEST``). Declared apart from the commands that use them, as
httpie declares its options, so the help, the man pages (:mod:`kquotactl.cli.docsgen`) and completion
(:mod:`kquotactl.cli.completion`, by option name) all read one definition. Only click and the key registry
(``core/keys.py``, for the keys' help) are imported.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import click

from kquotactl.core.keys import KEYS, KeyScope, keys_for

#: how the help names the entities of each key scope
SCOPE_WORDS = {KeyScope.CLIENT: "users and clients", KeyScope.IP: "ips"}


def keys_help() -> str:
    """``alter --add-config``'s list of keys, from the registry: the live keys per scope grouped by type (byte rates
    with their units), then each offline-only key and what to set instead."""
    scopes = []
    for scope, words in SCOPE_WORDS.items():
        groups: list[tuple[str, list[str]]] = []  # (type words, keys): consecutive keys of one type share them
        for k in keys_for(scope):
            key = KEYS[k]
            if not key.live:
                continue
            words_of_type = f"{key.type}, {key.unit}; units like 10MiB or 5MB accepted" if key.byte_rate else key.type
            if groups and groups[-1][0] == words_of_type:
                groups[-1][1].append(k)
            else:
                groups.append((words_of_type, [k]))
        scopes.append(", ".join(f"{', '.join(ks)} ({t})" for t, ks in groups) + f" for {words}")
    offline = [
        f"{k} (the {v.draft} draft key, which no Apache Kafka release knows) is refused: set {v.shipped_instead}; "
        f"--delete-config {k} still removes one another tool stored."
        for k, v in KEYS.items()
        if not v.live
    ]
    return " ".join([f"Keys: {'; '.join(scopes)}. Values must be greater than 0.", *offline])


KEYS_HELP = keys_help()

EPILOG_EXIT = (
    "Exit status: 0 success, 1 error (bad input, connection, conflict), 2 changes pending (plan, apply --dry-run, "
    "a declined apply), 130 interrupted (Ctrl-C), 143 terminated (SIGTERM)."
)


# -- option groups ------------------------------------------------------------------------------


def connection_options(f: Callable[..., Any]) -> Callable[..., Any]:
    opts = [
        click.option(
            "--zookeeper",
            metavar="HOST:PORT[/CHROOT]",
            help=f"ZooKeeper connect string of a ZooKeeper-mode cluster (env {'KQUOTACTL_ZOOKEEPER'}).",
        ),
        click.option(
            "--bootstrap-server",
            metavar="HOST:PORT[,...]",
            help="Brokers to use the admin API (KIP-546) with: KRaft and ZooKeeper-mode clusters.",
        ),
        click.option(
            "--bootstrap-controller",
            metavar="HOST:PORT[,...]",
            help="KRaft controllers to use the admin API with (Kafka 3.7+).",
        ),
        click.option(
            "--command-config",
            metavar="FILE",
            type=click.Path(dir_okay=False),
            help="Java client properties for the admin API (security.protocol, sasl.*, ssl.*).",
        ),
        click.option(
            "--connect-timeout",
            "--zk-timeout",
            "connect_timeout",
            type=click.FloatRange(0.1, 3600),
            default=10.0,
            show_default=True,
            metavar="SECONDS",
            help="Give up connecting after this long.",
        ),
        click.option(
            "--timeout",
            type=click.FloatRange(0.1, 3600),
            default=30.0,
            show_default=True,
            metavar="SECONDS",
            help="Give up on any single request after this long.",
        ),
        click.option(
            "--zk-auth",
            multiple=True,
            metavar="SCHEME:USER:PASSWORD",
            help="ZooKeeper authentication: digest:USER:PASSWORD or sasl:USER:PASSWORD "
            "(env KQUOTACTL_ZK_AUTH keeps it off the command line).",
        ),
        click.option(
            "--zk-sasl-jaas",
            metavar="FILE",
            type=click.Path(dir_okay=False),
            help="JAAS file whose 'Client' section has the ZooKeeper SASL login "
            "(default: -Djava.security.auth.login.config in KAFKA_OPTS).",
        ),
        click.option(
            "--zk-tls-config-file",
            metavar="FILE",
            type=click.Path(dir_okay=False),
            help="ZooKeeper TLS client properties (Kafka's zookeeper.ssl.* names, PEM stores).",
        ),
        click.option(
            "--zk-acl",
            type=click.Choice(["open", "secure"]),
            default="open",
            show_default=True,
            help="ACLs for nodes kquotactl creates: 'secure' = what brokers use with zookeeper.set.acl=true.",
        ),
        click.option(
            "--allow-no-brokers",
            is_flag=True,
            help="Write into a ZooKeeper chroot that has no /brokers yet (a cluster whose brokers have not started); "
            "without it such a write is refused as a probably forgotten chroot.",
        ),
    ]
    return stacked(opts, f)


ENTITY_TYPES = ("users", "clients", "ips")

ENTITY_DEFAULT_TOKEN = "\x00entity-default"  # kquotactl.cli.entityargs.ENTITY_DEFAULT (not imported: start-up time)


def entity_options(f: Callable[..., Any]) -> Callable[..., Any]:
    opts = [
        click.option(
            "--entity-type",
            "entity_types",
            multiple=True,
            metavar="[users|clients|ips]",
            shell_complete=lambda ctx, param, incomplete: [
                t for t in ENTITY_TYPES if t.startswith(incomplete)
            ],  # no click.Choice: kafka-configs refuses a duplicate type before an unknown one, and so do we
            help="Entity type; repeat to combine users and clients into a pair.",
        ),
        click.option(
            "--entity-name",
            "entity_names",
            multiple=True,
            metavar="NAME",
            help="Name for the --entity-type at the same position (never empty: --entity-default is the default).",
        ),
        click.option(
            "--entity-default",
            "entity_names",
            flag_value=ENTITY_DEFAULT_TOKEN,
            multiple=True,
            help="The default entity for the --entity-type at the same position.",
        ),
        click.option(
            "--user",
            metavar="NAME",
            help="A user principal (same as --entity-type users --entity-name).",
        ),
        click.option(
            "--client",
            "--client-id",
            "client",
            metavar="NAME",
            help="A client-id.",
        ),
        click.option(
            "--ip",
            metavar="ADDRESS",
            help="An IPv4/IPv6 address (connection_creation_rate only).",
        ),
        click.option("--user-defaults", is_flag=True, help="The default user."),
        click.option("--client-defaults", is_flag=True, help="The default client-id."),
        click.option("--ip-defaults", is_flag=True, help="The default ip."),
        click.option(
            "--literal-names",
            is_flag=True,
            help="A user or client-id named '<default>' is a real name (without it, that name is refused as ambiguous: "
            "kafka-configs writes such a user, manifests mean the default).",
        ),
    ]
    return stacked(opts, f)


def principal_rule_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The brokers' principal mapping rules, for commands that map a principal (``--principal``, manifests'
    ``principal:``) or lint against them. Not given: read from the cluster when there is one."""
    opts = [
        click.option(
            "--ssl-principal-mapping-rules",
            "ssl_rules",
            metavar="RULES",
            help="The brokers' ssl.principal.mapping.rules (default: read from the cluster; DEFAULT if unset there).",
        ),
        click.option(
            "--kerberos-rules",
            "kerberos_rules",
            metavar="RULES",
            help="The brokers' sasl.kerberos.principal.to.local.rules, comma-separated as in server.properties "
            "(default: read from the cluster).",
        ),
        click.option(
            "--kerberos-realm",
            metavar="REALM",
            help="The brokers' default Kerberos realm (their krb5.conf): the DEFAULT rule maps only names of it.",
        ),
    ]
    return stacked(opts, f)


def principal_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--principal`` (instead of a user name) and its type, with the rule options."""
    opts = [
        click.option(
            "--principal",
            metavar="DN|NAME@REALM",
            help="A client's mTLS certificate DN (CN=svc-a,OU=payments,O=acme) or Kerberos principal "
            "(svc-a@EXAMPLE.COM): the user is what the brokers' mapping rules make of it. Instead of --user.",
        ),
        click.option(
            "--principal-type",
            type=click.Choice(["ssl", "kerberos"]),
            help="Which mapping --principal goes through, when its text could be either.",
        ),
    ]
    return stacked(opts, principal_rule_options(f))


CI_REPORTS = ("markdown", "junit", "sarif")  # kquotactl.render.ci


# -- options several commands share (quota windows, --kafka-version, -f MANIFEST) ----------------------------


def stacked(options: list[Callable[..., Any]], f: Callable[..., Any]) -> Callable[..., Any]:
    """Apply click option decorators so that they appear in ``--help`` in list order."""
    for o in reversed(options):
        f = o(f)
    return f


def _window_options(flag: str, config: str, what: tuple[str, str]) -> list[Callable[..., Any]]:
    """``--<flag>-num`` and ``--<flag>-size[-seconds]``: a broker's ``<config>.num`` x ``<config>.size.seconds``, with
    Kafka's own lower bounds and defaults."""
    dest = flag.replace("-", "_") + "_size_seconds"
    return [
        click.option(
            f"--{flag}-num",
            type=click.IntRange(min=1),
            default=11,
            show_default=True,
            help=f"The brokers' {config}.num{what[0]}.",
        ),
        click.option(
            f"--{flag}-size-seconds",
            f"--{flag}-size",
            dest,
            type=click.IntRange(min=1),
            default=1,
            show_default=True,
            metavar="SECONDS",
            help=f"The brokers' {config}.size.seconds{what[1]}.",
        ),
    ]


ENGINE_HELP = "spark (PySpark; the default for large inputs), local (plain Python), auto (local below 32 MiB of input)."


def engine_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Which engine replays traffic, and Spark's master and configuration (``impact run``, ``recommend``)."""
    return stacked(
        [
            click.option(
                "--engine",
                type=click.Choice(["spark", "local", "auto"]),
                default="auto",
                show_default=True,
                help=ENGINE_HELP,
            ),
            click.option(
                "--master",
                default="local[*]",
                show_default=True,
                metavar="URL",
                help="Spark master (local[N], spark://host:7077, yarn, k8s://...); 'submit' leaves it to spark-submit.",
            ),
            click.option("--conf", "confs", multiple=True, metavar="K=V", help="Spark configuration, repeatable."),
        ],
        f,
    )


def prometheus_range_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The brokers' sensors from a Prometheus server over a range, instead of traffic files (``impact run``,
    ``recommend``); checked by :func:`check_traffic_given`, read by :func:`prometheus_range`."""
    return stacked(
        [
            click.option(
                "--from-prometheus",
                "prometheus",
                metavar="URL",
                help="Instead of TRAFFIC: the brokers' quota sensors from this Prometheus server (scraping their "
                "JMX exporters with jmx-exporter-kafka-quotas.yaml), per broker.",
            ),
            click.option(
                "--since",
                metavar="DURATION",
                help="--from-prometheus: how far back the range starts before --until (90s, 30m, 24h, 7d)  "
                "[default: 24h]",
            ),
            click.option(
                "--until",
                metavar="TIME",
                help="--from-prometheus: the range's end: now, epoch seconds, 2026-11-25T10:00:00Z or a duration "
                "ago  [default: now]",
            ),
            click.option(
                "--step",
                metavar="DURATION",
                help="--from-prometheus: the range query's resolution; each reading counts for one step  [default: 1s]",
            ),
        ],
        f,
    )


def check_traffic_given(
    traffic: Sequence[str],
    prometheus: str | None,
    since: str | None,
    until: str | None,
    step: str | None,
    input_format: str,
) -> None:
    """The traffic given once: files, or ``--from-prometheus`` with its range options (and no ``--input-format``)."""
    from kquotactl.core.errors import UsageError

    if prometheus is None:
        if not traffic:
            raise UsageError("give TRAFFIC (files or directories) or --from-prometheus URL")
        for name, given in (("--since", since), ("--until", until), ("--step", step)):
            if given is not None:
                raise UsageError(f"{name} is a Prometheus range: it goes with --from-prometheus URL")
    elif traffic:
        raise UsageError("give TRAFFIC or --from-prometheus URL, not both")
    elif input_format != "table":
        raise UsageError("--from-prometheus reads the brokers' sensors: drop --input-format")


def prometheus_range(since: str | None, until: str | None, step: str | None) -> tuple[float, float, float]:
    """``(start, end, step)`` in epoch seconds of --from-prometheus' range."""
    import time

    from kquotactl.core.errors import UsageError
    from kquotactl.core.timespec import parse_duration, parse_time

    end = parse_time(until or "now", "--until", time.time())
    lookback = parse_duration(since or "24h", "--since")
    resolution = parse_duration(step or "1s", "--step")
    if resolution > lookback:
        raise UsageError(f"--step {step} is longer than --since {since or '24h'}: no point in the range")
    return end - lookback, end, resolution


def quota_window_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The brokers' quota window (``quota.window.num`` x ``quota.window.size.seconds``), for the commands that model
    throttling (``explain``, ``impact run``): one spelling, Kafka's own lower bounds."""
    what = (": samples in the rate window", ": the length of one sample")
    return stacked(_window_options("window", "quota.window", what), f)


def controller_window_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The brokers' controller mutation window (``controller.quota.window.num`` x
    ``controller.quota.window.size.seconds``): Kafka sizes the controller_mutation_rate bucket from these, not from
    ``quota.window.*``."""
    what = (" (controller_mutation_rate)",) * 2
    return stacked(_window_options("controller-window", "controller.quota.window", what), f)


def parse_kafka_version(text: str) -> tuple[int, ...]:
    """``--kafka-version X.Y[.Z]``."""
    from kquotactl.core.errors import UsageError

    parts = text.strip().split(".")
    if not 2 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise UsageError(f"--kafka-version {text!r}: expected X.Y or X.Y.Z, e.g. 2.8 or 3.7.1")
    version = tuple(int(p) for p in parts)
    from kquotactl.core.kafkaversions import NEWEST_KNOWN, newer_than_known

    if newer_than_known(version):
        newest = ".".join(map(str, NEWEST_KNOWN[:2]))
        raise UsageError(
            f"--kafka-version {text!r}: kquotactl knows Kafka's quota behaviour up to {newest}; "
            "leave the option out to simulate the newest it knows"
        )
    return version


def manifest_quotas_option(help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``-f MANIFEST`` (repeatable, ``-`` = stdin) for the commands that resolve connections against a quota set
    (``explain``, ``top``): the quotas from manifests instead of the cluster; read by :func:`quota_index`."""
    return click.option(
        "-f",
        "--file",
        "files",
        multiple=True,
        metavar="MANIFEST",
        type=click.Path(exists=True, allow_dash=True),
        help=help,
    )
