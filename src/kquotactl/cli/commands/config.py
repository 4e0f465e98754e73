"""``kquotactl config get-contexts|use-context|current-context``: named clusters, like kubectl's."""

from __future__ import annotations

import sys
from typing import Any

import click

from kquotactl.cli.groups import OnceGroup


def _config(ctx: click.Context) -> Any:
    from kquotactl.connection.contexts import load_config

    return load_config(ctx.find_root().params.get("config_path"))


@click.group(cls=OnceGroup, name="config")
def config_group() -> None:
    """Named cluster contexts in ~/.config/kquotactl/config.yaml.

    A context names a cluster (zookeeper, bootstrap-server or bootstrap-controller) and how to reach it
    (command-config, zk-auth, zk-sasl-jaas, zk-tls-config-file, zk-acl, timeouts). Precedence: flags,
    then environment variables, then the context (--context, KQUOTACTL_CONTEXT, or current-context).
    Secrets are never printed. A broken context is reported (file, context, problem) only when it is used;
    get-contexts lists it with its problem so that it can be fixed.

    \b
    Examples:
      kquotactl config get-contexts
      kquotactl config set-context prod --zookeeper zk1:2181/kafka --zk-acl secure
      kquotactl config use-context prod
      kquotactl --context staging describe --user alice
    """


@config_group.command("get-contexts")
@click.option("-o", "--output", "fmt", type=click.Choice(["table", "json", "yaml"]), help="Output format.")
@click.pass_context
def get_contexts(ctx: click.Context, fmt: str | None) -> None:
    """List the contexts: name, cluster, authentication (passwords redacted); * marks the current one.

    A context that cannot be used (unknown setting, wrong type, no cluster) is listed with its problem
    (PROBLEM column; "problem" in json/yaml, null when fine). A file that cannot be read at all (bad YAML,
    unknown top-level key) is reported in one line, exit status 1.

    \b
    Examples:
      kquotactl config get-contexts
      kquotactl config get-contexts -o json
      kquotactl --config ./ci-config.yaml config get-contexts
    """
    import os

    from kquotactl.connection.cluster import ENV_CONTEXT
    from kquotactl.core.errors import UsageError

    fmt = fmt or ctx.find_root().params.get("output")
    if fmt not in (None, "table", "json", "yaml"):  # the group's -o kafka: refused before the file is read
        raise UsageError(f"-o {fmt}: get-contexts shows a table, json or yaml")
    config = _config(ctx)
    active = os.environ.get(ENV_CONTEXT) or config.current
    rows = [
        {"name": n, "current": n == active, "cluster": c.cluster, "auth": c.auth, "problem": c.problem}
        for n, c in sorted(config.contexts.items())
    ]
    fmt = fmt or ("table" if sys.stdout.isatty() else "json")
    if fmt == "json":
        from kquotactl.render.records import dump_json

        dump_json(rows, sys.stdout)
    elif fmt == "yaml":
        from kquotactl.render.records import dump_yaml

        dump_yaml(rows, sys.stdout)
    elif rows:
        from kquotactl.cli.manifestargs import terminal_width
        from kquotactl.core.layout import fits, table_or_blocks

        broken = any(r["problem"] for r in rows)
        header = ["CURRENT", "NAME", "CLUSTER", "AUTH"] + (["PROBLEM"] if broken else [])
        cells = [
            ["*" if r["current"] else "", r["name"], r["cluster"], r["auth"]]
            + ([f"BROKEN: {r['problem']}" if r["problem"] else "-"] if broken else [])
            for r in rows
        ]
        width = terminal_width()
        if not fits(header, cells, width):  # one block per context: a cluster's addresses may wrap between them
            cells = [[*c[:2], c[2].replace(",", ", "), *c[3:]] for c in cells]
        for line in table_or_blocks(header, cells, width, ident=2):
            click.echo(line)
    elif not config.problem:
        click.echo(f"no contexts in {config.path}", err=True)
    from kquotactl.core.errors import UsageError

    if config.problem:  # the contexts above (if any) are listed; the file itself needs fixing
        raise UsageError(config.problem)
    if config.current and config.current not in config.contexts:
        click.echo(f"kquotactl: warning: current-context {config.current!r} is not one of the contexts", err=True)


@config_group.command("use-context")
@click.argument("name", shell_complete=lambda ctx, param, incomplete: _context_names(ctx, incomplete))
@click.pass_context
def use_context(ctx: click.Context, name: str) -> None:
    """Make NAME the current context (rewrites only the current-context line of the file).

    \b
    Examples:
      kquotactl config use-context prod
      kquotactl --config ./ci-config.yaml config use-context ci
    """
    from kquotactl.connection.contexts import write_current_context

    config = _config(ctx)
    if not config.exists:
        from kquotactl.core.errors import UsageError

        raise UsageError(
            f"no config file at {config.path}: create a context with `kquotactl config set-context NAME "
            "--zookeeper HOST:PORT` (or --bootstrap-server HOST:PORT)"
        )
    write_current_context(config, name)
    click.echo(f"Switched to context {name!r}.")


@config_group.command("current-context")
@click.pass_context
def current_context(ctx: click.Context) -> None:
    """Print the context in use (KQUOTACTL_CONTEXT, else the file's current-context); exit 1 if none.

    \b
    Examples:
      kquotactl config current-context
      KQUOTACTL_CONTEXT=staging kquotactl config current-context
    """
    import os

    from kquotactl.connection.cluster import ENV_CONTEXT
    from kquotactl.core.errors import UsageError

    config = _config(ctx)
    root = ctx.find_root().params
    name = root.get("context_name") or os.environ.get(ENV_CONTEXT) or config.current
    config.check()  # a file that cannot be read: say so, not "no current context"
    if not name:
        raise UsageError(f"no current context in {config.path}: set one with `kquotactl config use-context NAME`")
    config.get(name)
    click.echo(name)


_UNSET_HELP = "Remove this setting from the context (repeatable; also fixes an unknown or misspelt key)."


@config_group.command("set-context")
@click.argument("name", shell_complete=lambda ctx, param, incomplete: _context_names(ctx, incomplete))
@click.option("--unset", "unset", multiple=True, metavar="KEY", help=_UNSET_HELP)
@click.pass_context
def set_context(ctx: click.Context, name: str, unset: tuple[str, ...]) -> None:
    """Create context NAME, or update it: only the settings given change (like kubectl config set-context).

    The settings are kquotactl's connection options, typed before or after the command: --zookeeper,
    --bootstrap-server, --bootstrap-controller, --command-config, --zk-auth, --zk-sasl-jaas,
    --zk-tls-config-file, --zk-acl, --connect-timeout, --timeout (environment variables are not stored).
    A cluster option (--zookeeper, --bootstrap-server, --bootstrap-controller) replaces the context's
    cluster; file paths are stored absolute. The result is checked like the file is read: a context
    without a cluster, or with a bad value, is an error and nothing is written. The file (created 0600
    if missing) is replaced atomically and keeps its mode. PyYAML cannot keep comments: set-context and
    delete-context rewrite the file without its comments (use-context keeps them).

    \b
    Examples:
      kquotactl config set-context prod --zookeeper zk1:2181,zk2:2181/kafka --zk-acl secure
      kquotactl config set-context staging --bootstrap-server b1:9092 --command-config admin.properties
      kquotactl config set-context prod --timeout 60
      kquotactl config set-context prod --unset zk-auth
    """
    from pathlib import Path

    from click.core import ParameterSource

    from kquotactl.connection.contexts import (
        FIELDS,
        config_target,
        dump_doc,
        read_doc,
        set_context_doc,
        write_atomically,
    )

    root = ctx.find_root()
    path = config_target(root.params.get("config_path"))
    changes: dict[str, Any] = {}
    for key, attr in FIELDS.items():
        value = root.params.get(attr)
        if root.get_parameter_source(attr) is not ParameterSource.COMMANDLINE or value is None or value == ():
            continue
        if key in ("command-config", "zk-sasl-jaas", "zk-tls-config-file"):
            value = str(Path(value).expanduser().absolute())
        elif key == "zk-auth":
            value = value[0] if len(value) == 1 else list(value)
        elif isinstance(value, float) and value.is_integer():
            value = int(value)
        changes[key] = value
    from kquotactl.connection.contexts import CLUSTER_KEYS
    from kquotactl.core.errors import UsageError

    clusters = [f"--{k}" for k in CLUSTER_KEYS if k in changes]
    if len(clusters) > 1:  # a context holds one cluster: keeping one of them would drop the other silently
        raise UsageError(f"give one cluster for context {name!r}: {' and '.join(clusters)} were both given")
    if not changes and not unset:
        raise UsageError(f"nothing to set for context {name!r}: give --zookeeper, --bootstrap-server, ... or --unset")
    doc, created = set_context_doc(read_doc(path), name, changes, unset, path)
    write_atomically(path, dump_doc(doc))
    click.echo(f"Context {name!r} {'created' if created else 'modified'} in {path}.")


@config_group.command("delete-context")
@click.argument("name", shell_complete=lambda ctx, param, incomplete: _context_names(ctx, incomplete))
@click.pass_context
def delete_context(ctx: click.Context, name: str) -> None:
    """Delete context NAME from the file; if it was the current-context, current-context is cleared.

    The file is replaced atomically and keeps its mode. PyYAML cannot keep comments: the file is
    rewritten without them.

    \b
    Examples:
      kquotactl config delete-context old-staging
      kquotactl --config ./ci-config.yaml config delete-context ci
    """
    from kquotactl.connection.contexts import config_target, delete_context_doc, dump_doc, read_doc, write_atomically

    path = config_target(ctx.find_root().params.get("config_path"))
    doc, was_current = delete_context_doc(read_doc(path), name, path)
    write_atomically(path, dump_doc(doc))
    click.echo(f"Deleted context {name!r} from {path}.")
    if was_current:
        click.echo(
            "kquotactl: warning: that was the current context; current-context is now unset "
            "(`kquotactl config use-context NAME` picks another)",
            err=True,
        )


def _context_names(ctx: click.Context, incomplete: str) -> list[str]:
    try:
        return [n for n in sorted(_config(ctx).contexts) if n.startswith(incomplete)]
    except Exception:
        return []
