"""The command line: parse, call the core and a backend, render. Nothing else lives here.

Only click is imported at start-up; rich, kazoo, YAML and Kafka clients load inside the commands that
use them, and shell completion (:mod:`kquotactl.cli.completion`, whose callbacks attach to options by name) only
when completing, so ``kquotactl --help`` stays fast.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from kquotactl import __version__
from kquotactl.cli.argv import normalize_argv, refuse_non_utf8
from kquotactl.cli.collector import collector_paused
from kquotactl.cli.errorwords import worded
from kquotactl.cli.groups import LazyGroup, is_own_option
from kquotactl.cli.options import (
    CI_REPORTS,
    EPILOG_EXIT,
    KEYS_HELP,
    connection_options,
    entity_options,
    principal_options,
)
from kquotactl.cli.signals import stopped_by, terminate_like_ctrl_c, terminated
from kquotactl.cli.state import AppState, pass_state
from kquotactl.cli.terminal import guard_stdout
from kquotactl.connection.cluster import ConnectionOptions
from kquotactl.connection.extras import missing_extra
from kquotactl.core.errors import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_TERMINATED, QuotaError, UsageError, one_line

if TYPE_CHECKING:  # loaded lazily at run time: nothing heavy at import
    from kquotactl.backends.base import QuotaBackend
    from kquotactl.cli.entityargs import EntityArgs
    from kquotactl.core.changes import EntityResult
    from kquotactl.core.principals import PrincipalMapping


PARSE_ONLY = "kquotactl.parse_only"  # ctx.meta key: describe/alter return their request instead of running it


def _dialect(backend: QuotaBackend) -> str:
    return backend.kafka_configs_mode


def _warn_all(state: AppState, warnings: list[str]) -> None:
    for w in warnings:
        state.warn(w)


# -- the group ----------------------------------------------------------------------------------

CI_REPORT_COMMANDS = ("validate", "plan")
#: the commands with a pull-request report besides their own formats (-o markdown)
MARKDOWN_COMMANDS = ("recommend",)


@click.group(
    cls=LazyGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110},
    epilog="kafka-configs' flat form works too: kquotactl --zookeeper HOST:PORT --alter --entity-type users "
    "--entity-name alice --add-config producer_byte_rate=1048576.\n\n" + EPILOG_EXIT,
)
@connection_options
@click.option(
    "-o",
    "--output",
    type=click.Choice(["table", "json", "yaml", "kafka", *CI_REPORTS]),
    help="Output format (default: table on a terminal, json otherwise; kafka in the flat form; markdown, junit "
    "and sarif: CI reports of validate and plan).",
)
@click.option(
    "--context",
    "context_name",
    metavar="NAME",
    help="Use this named cluster from the config file (env KQUOTACTL_CONTEXT; see `kquotactl config`).",
)
@click.option(
    "--config",
    "config_path",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Config file with named contexts (env KQUOTACTL_CONFIG; default ~/.config/kquotactl/config.yaml).",
)
@click.option("-v", "--verbose", is_flag=True, help="Show the ZooKeeper nodes written or Kafka requests sent.")
@click.option("--debug", is_flag=True, help="Trace the ZooKeeper paths and Kafka requests involved.")
@click.option("--no-color", is_flag=True, help="No colour (also: NO_COLOR non-empty, or not a terminal).")
@click.version_option(__version__, "--version", prog_name="kquotactl")
@click.pass_context
def cli(
    ctx: click.Context,
    output: str | None,
    context_name: str | None,
    config_path: str | None,
    verbose: bool,
    debug: bool,
    no_color: bool,
    **conn: Any,
) -> None:
    """Manage Apache Kafka client quotas: a drop-in for kafka-configs' quota commands.

    Quotas apply to users, client-ids, (user, client-id) pairs and their defaults, and to ips.
    Talk to a ZooKeeper-mode cluster with --zookeeper, or to any cluster (KRaft included) through the
    broker admin API with --bootstrap-server.

    \b
    Examples:
      kquotactl --zookeeper zk:2181/kafka describe
      kquotactl --context prod alter --user alice --add-config producer_byte_rate=10MiB
      kquotactl --zookeeper zk:2181 --describe --entity-type users   # kafka-configs' flat form
    """
    # `--zookeeper "$ZK"` with ZK unset must not fall back to a context's cluster: an empty value is refused by the
    # parser (groups.refuse_empty), a value that is one of our options (`--zookeeper --user`) here, where the command
    # named is known
    for param in ctx.command.params:
        value = ctx.params.get(param.name or "")
        if isinstance(param, click.Option) and isinstance(value, str) and value.startswith("-"):
            assert isinstance(ctx.command, click.Group)
            named = ctx.command.get_command(ctx, ctx.invoked_subcommand) if ctx.invoked_subcommand else None
            if is_own_option(value, *filter(None, [named])):
                raise UsageError(
                    f"{param.opts[0]} {value!r} is one of kquotactl's options, so {param.opts[0]} has no value "
                    "(an unset variable?)"
                )
    state = ctx.ensure_object(AppState)
    state.conn = ConnectionOptions.from_params(conn)
    markdown_ok = output == "markdown" and ctx.invoked_subcommand in MARKDOWN_COMMANDS
    if output in CI_REPORTS and ctx.invoked_subcommand not in CI_REPORT_COMMANDS and not markdown_ok:
        raise UsageError(f"-o {output} is a CI report of validate and plan; this command prints table, json or yaml")
    state.output = output
    state.context_name = context_name
    state.config_path = config_path
    state.explicit = frozenset(
        name for name in conn if ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE
    )
    state.verbose = verbose or debug
    state.kafka_compat = ctx.meta.get("kquotactl.flat", False)
    state.color = not no_color and not os.environ.get("NO_COLOR") and sys.stdout.isatty()  # no-color.org: non-empty
    if debug:
        import logging

        logging.basicConfig(stream=sys.stderr, format="kquotactl: debug: %(name)s: %(message)s")
        logging.getLogger("kquotactl").setLevel(logging.DEBUG)
    elif verbose:  # the znodes written / requests sent, without the read-by-read trace
        import logging

        logging.basicConfig(stream=sys.stderr, format="kquotactl: %(message)s")
        logging.getLogger("kquotactl").setLevel(logging.INFO)


@cli.command()
@entity_options
@principal_options
@pass_state
@click.pass_context
def describe(ctx: click.Context, state: AppState, **kw: Any) -> tuple[str, Any] | None:
    """Show quotas: every quota entity, or those matching the entity options.

    With no entity options, lists users, (user, client-id) pairs, client-ids and ips. An entity type
    without a name matches every entity of that type (the default included), and only entities made of
    exactly the given types are shown, as kafka-configs does.

    \b
    Examples:
      kquotactl --zookeeper zk:2181/kafka describe
      kquotactl --zookeeper zk:2181 describe --user alice --client-id app1
      kquotactl --zookeeper zk:2181 describe --entity-type users --entity-type clients -o json
      kquotactl --zookeeper zk:2181 --describe --entity-type users --entity-name alice   # flat form
      kquotactl --bootstrap-server b:9092 describe --principal 'CN=svc-a,OU=payments,O=acme'
    """
    from kquotactl.cli.entityargs import EntityArgs, filter_for_describe
    from kquotactl.cli.principalargs import echo_mapping, map_for_user, pop_principal, pop_rules_for, principal_as_user
    from kquotactl.render.records import render_records

    principal, principal_type = pop_principal(kw)
    rule_args = pop_rules_for(principal, kw)
    entity_args = EntityArgs.pop_from(kw)
    if principal is not None and rule_args is not None:
        mapping = map_for_user(principal, principal_type, rule_args, lambda: state.backend(ctx))
        principal_as_user(entity_args, mapping)
        echo_mapping(mapping, state.output_format())
    if state.kafka_compat and not entity_args.given:  # kafka-configs refuses it; the describe command lists all
        raise UsageError(
            "At least one entity type must be specified (kafka-configs' --describe; 'kquotactl describe' lists all)"
        )
    flt = filter_for_describe(entity_args)
    if ctx.meta.get(PARSE_ONLY):
        return ("describe", flt)
    from kquotactl.services.quotas import describe as describe_service

    backend = state.backend(ctx)
    with collector_paused():  # every live quota and its rendering: many objects, none in a cycle
        described = describe_service(backend, flt)
        _warn_all(state, described.warnings)
        render_records(described.records, state.output_format(), sys.stdout, _dialect(backend), state.color)
    return None


@cli.command()
@entity_options
@principal_options
@click.option(
    "--add-config",
    metavar="K=V,...",
    help="Keys to set: k1=v1,k2=[v2,v3] (kafka-configs grammar). " + KEYS_HELP,
)
@click.option(
    "--add-config-file",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Keys to set, from a Java properties file.",
)
@click.option(
    "--delete-config",
    "delete_config",
    multiple=True,
    metavar="K,...",
    help="Keys to remove.",
)
@click.option("--if-exists", is_flag=True, help="Removing a key that is not set is not an error.")
@click.option("--dry-run", is_flag=True, help="Check and show the change; write nothing.")
@click.option(
    "--cluster-wide",
    is_flag=True,
    help="The values set are cluster-wide budgets: write each broker's share for the live broker count "
    "(byte and connection rates are divided; controller_mutation_rate is written as given: KRaft enforces it once, on "
    "the active controller).",
)
@pass_state
@click.pass_context
def alter(
    ctx: click.Context,
    state: AppState,
    add_config: str | None,
    add_config_file: str | None,
    delete_config: Sequence[str],
    if_exists: bool,
    dry_run: bool,
    cluster_wide: bool,
    **kw: Any,
) -> tuple[str, Any] | None:
    """Set or remove quota keys on one entity, atomically.

    The entity's keys are read, changed and written back with compare-and-set, together with the change
    notification brokers watch; concurrent alters of one entity never lose an update. Removing the last
    key removes the entity.

    \b
    Examples:
      kquotactl --zookeeper zk:2181 alter --user alice --add-config producer_byte_rate=10MiB
      kquotactl --zookeeper zk:2181 alter --user alice --client-id app1 --add-config request_percentage=50
      kquotactl --zookeeper zk:2181 alter --user-defaults --delete-config consumer_byte_rate
      kquotactl --zookeeper zk:2181 alter --ip 192.0.2.10 --add-config connection_creation_rate=20
      kquotactl --bootstrap-server b:9092 alter --user team-a --cluster-wide --add-config producer_byte_rate=200MiB
      kquotactl --bootstrap-server b:9092 alter --principal 'CN=svc-a,O=acme' --add-config producer_byte_rate=1MiB
    """
    from kquotactl.cli.entityargs import EntityArgs, entity_for_alter
    from kquotactl.cli.principalargs import map_for_user, pop_principal, pop_rules_for, principal_as_user
    from kquotactl.core.changes import build_change
    from kquotactl.core.grammar import parse_delete_config
    from kquotactl.services.quotas import alter as alter_service
    from kquotactl.services.quotas import check_alter

    principal, principal_type = pop_principal(kw)
    rule_args = pop_rules_for(principal, kw)
    entity_args = EntityArgs.pop_from(kw)
    mapping = None
    if principal is not None and rule_args is not None:
        mapping = map_for_user(principal, principal_type, rule_args, lambda: state.backend(ctx))
        principal_as_user(entity_args, mapping)
    entity = entity_for_alter(entity_args)
    adds = _adds(add_config, add_config_file)
    change = build_change(entity, adds, parse_delete_config(list(delete_config)), if_exists=if_exists)
    if ctx.meta.get(PARSE_ONLY):
        check_alter(change, cluster_wide=cluster_wide)  # what the service refuses before connecting
        return ("alter", change)
    # one result, or one per stored spelling when several stored ip names are this address; the service checks the
    # change before it opens the backend
    altered = alter_service(lambda: state.backend(ctx), change, dry_run=dry_run, cluster_wide=cluster_wide)
    backend = state.backend(ctx)
    for share in altered.shares:
        click.echo(f"{entity.label()}: {share.describe()}", err=True)
    _warn_all(state, altered.warnings)
    if altered.rejection is not None:
        raise altered.rejection
    _render_altered(state, altered.results, mapping, _dialect(backend), entity_args)
    return None


def _adds(add_config: str | None, add_config_file: str | None) -> dict[str, str]:
    """The keys to set: ``--add-config`` in kafka-configs' grammar, or ``--add-config-file`` (Java properties)."""
    from kquotactl.connection.clientprops import load_properties
    from kquotactl.core.grammar import parse_add_config

    if add_config is not None and add_config_file is not None:
        raise UsageError("Only one of --add-config or --add-config-file must be specified")
    adds = parse_add_config(add_config) if add_config is not None else {}
    if add_config_file is not None:
        if not os.path.isfile(add_config_file):
            raise UsageError(f"--add-config-file {add_config_file}: no such file (a Java properties file of keys)")
        adds = load_properties(add_config_file)
    return adds


def _render_altered(
    state: AppState,
    results: list[EntityResult],
    mapping: PrincipalMapping | None,
    dialect: str,
    entity_args: EntityArgs,
) -> None:
    """alter's results: JSON/YAML records (with the principal mapped), a result line each, or kafka-configs' lines."""
    from kquotactl.cli.entityargs import alter_head
    from kquotactl.cli.principalargs import echo_mapping
    from kquotactl.core.changes import Outcome
    from kquotactl.render.records import dump_json, dump_yaml, kafka_alter_line, result_line

    fmt = state.output_format()
    data = [r.to_json() for r in results]
    if mapping is not None:
        for d in data:
            d["principal"] = mapping.to_json()
        if fmt == "table":
            echo_mapping(mapping, fmt)
    if fmt == "json":
        dump_json(data[0] if len(data) == 1 else data, sys.stdout)
    elif fmt == "yaml":
        dump_yaml(data[0] if len(data) == 1 else data, sys.stdout)
    else:
        for result in results:
            if fmt == "kafka" and result.outcome is not Outcome.VALIDATED:
                click.echo(kafka_alter_line(result, dialect, alter_head(entity_args)))
            elif fmt != "kafka":
                click.echo(result_line(result))


from kquotactl.cli.commands import install  # noqa: E402 - commands attach to the group defined above

assert isinstance(cli, LazyGroup)
install(cli)


# -- entry point --------------------------------------------------------------------------------


def _invoke(argv: Sequence[str], prog_name: str = "kquotactl", parse_only: bool = False) -> Any:
    refuse_non_utf8(argv)
    args, flat = normalize_argv(argv, cli)
    with cli.make_context(prog_name, args) as ctx:
        ctx.meta["kquotactl.flat"] = flat
        ctx.meta[PARSE_ONLY] = parse_only
        return cli.invoke(ctx)


def parse_request(argv: Sequence[str]) -> tuple[str, Any]:
    """What a describe or alter command line asks for, parsed and checked exactly as :func:`main` does but without
    connecting: ``("describe", EntityFilter)`` or ``("alter", EntityChange)``. Raises what ``main`` would report
    (:class:`QuotaError`, click's ``UsageError``). For differential tests against kafka-configs' own parser."""
    result = _invoke(argv, parse_only=True)
    if not (isinstance(result, tuple) and result and result[0] in ("describe", "alter")):
        raise UsageError("not a describe or alter command line")
    return result


def main(argv: Sequence[str] | None = None, prog_name: str = "kquotactl") -> None:
    """Console entry point: one-line errors, exit 1 on any failure, no tracebacks for user errors; SIGTERM ends a
    command as Ctrl-C does (exit 143)."""
    with terminate_like_ctrl_c():
        _main(list(sys.argv[1:] if argv is None else argv), prog_name)


def _main(args: list[str], prog_name: str) -> None:
    debug = "--debug" in args
    try:
        if os.environ.get("_KQUOTACTL_COMPLETE"):
            from kquotactl.cli import completion

            completion.install(cli)  # --user, --add-config... complete by option name (completion.BY_OPTION)
            cli.main(args=args, prog_name=prog_name)
            return
        guard_stdout()  # a closed stdout (`plan | head -1`) stops the output, never decides the exit code
        _invoke(args, prog_name)
        sys.stdout.flush()
    except QuotaError as e:
        click.echo(f"{prog_name}: error: {one_line(worded(e))}", err=True)
        sys.exit(EXIT_TERMINATED if e.exit_code == EXIT_INTERRUPTED and terminated() else e.exit_code)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.exceptions.UsageError as e:
        if isinstance(e, click.exceptions.NoArgsIsHelpError):
            e.show()
        else:  # one line that names the bad part (click adds "Did you mean ...?") and where help is
            where = f" (see '{e.ctx.command_path} --help')" if e.ctx is not None else ""
            # click lays out a choice list over lines ("Choose from:\n\tbash,\n\tzsh"): one line instead
            message = e.format_message().replace(":\n\t", ": ").replace(",\n\t", ", ")
            click.echo(f"{prog_name}: error: {one_line(message)}{where}", err=True)
        sys.exit(EXIT_ERROR)
    except click.ClickException as e:
        e.message = one_line(e.message)  # type: ignore[misc]  # click types message Final; show() prints it
        e.show()
        sys.exit(EXIT_ERROR)
    except click.exceptions.Abort as e:
        if isinstance(e.__context__, KeyboardInterrupt):  # Ctrl-C at a prompt: an interrupt, not a failure
            click.echo(f"\n{stopped_by()}.", err=True)
            sys.exit(EXIT_TERMINATED if terminated() else EXIT_INTERRUPTED)
        click.echo("Aborted.", err=True)
        sys.exit(EXIT_ERROR)
    except KeyboardInterrupt:
        click.echo(f"{stopped_by()}.", err=True)
        sys.exit(EXIT_TERMINATED if terminated() else EXIT_INTERRUPTED)
    except OSError as e:  # a file named on the command line that cannot be read or written: one line, no traceback
        where = f"{e.filename}: " if e.filename else ""
        click.echo(f"{prog_name}: error: {one_line(where + (e.strerror or str(e)))}", err=True)
        sys.exit(EXIT_ERROR)
    except Exception as e:  # a bug: one line, the traceback only with --debug
        missing = missing_extra(e) if isinstance(e, ImportError) else None
        if missing and not debug:  # an optional dependency (kquotactl[impact], ...) is not installed
            click.echo(f"{prog_name}: error: {missing}", err=True)
            sys.exit(EXIT_ERROR)
        if debug:
            raise
        click.echo(
            f"{prog_name}: internal error: {type(e).__name__}: {one_line(str(e))} (re-run with --debug for details)",
            err=True,
        )
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_TERMINATED if terminated() else 0)  # a command that stops on SIGTERM as on Ctrl-C (top --watch)
