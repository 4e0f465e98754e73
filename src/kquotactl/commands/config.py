"""``kquotactl config get-contexts|use-context|current-context``: named clusters, like kubectl's."""

from __future__ import annotations

import sys
from typing import Any

import click

from kquotactl.cli import OnceGroup


def _config(ctx: click.Context) -> Any:
    from kquotactl.contexts import load_config

    return load_config(ctx.find_root().params.get("config_path"))


@click.group(cls=OnceGroup, name="config")
def config_group() -> None:
    """Named cluster contexts in ~/.config/kquotactl/config.yaml.

    A context names a cluster (zookeeper, bootstrap-server or bootstrap-controller) and how to reach it
    (command-config, zk-auth, zk-sasl-jaas, zk-tls-config-file, zk-acl, timeouts). Precedence: flags,
    then environment variables, then the context (--context, KQUOTACTL_CONTEXT, or current-context).
    Secrets are never printed.

    \b
    Examples:
      kquotactl config get-contexts
      kquotactl config use-context prod
      kquotactl --context staging describe --user alice
    """


@config_group.command("get-contexts")
@click.option("-o", "--output", "fmt", type=click.Choice(["table", "json", "yaml"]), help="Output format.")
@click.pass_context
def get_contexts(ctx: click.Context, fmt: str | None) -> None:
    """List the contexts: name, cluster, authentication (passwords redacted); * marks the current one.

    \b
    Examples:
      kquotactl config get-contexts
      kquotactl config get-contexts -o json
      kquotactl --config ./ci-config.yaml config get-contexts
    """
    from kquotactl.contexts import ENV_CONTEXT

    config = _config(ctx)
    import os

    active = os.environ.get(ENV_CONTEXT) or config.current
    rows = [
        {"name": n, "current": n == active, "cluster": c.cluster, "auth": c.auth}
        for n, c in sorted(config.contexts.items())
    ]
    fmt = fmt or ctx.find_root().params.get("output") or ("table" if sys.stdout.isatty() else "json")
    if fmt == "json":
        from kquotactl.render import dump_json

        dump_json(rows, sys.stdout)
    elif fmt == "yaml":
        from kquotactl.render import dump_yaml

        dump_yaml(rows, sys.stdout)
    else:
        if not rows:
            click.echo(f"no contexts in {config.path}", err=True)
            return
        width = max(len(r["name"]) for r in rows)
        cwidth = max(len(r["cluster"]) for r in rows)
        click.echo(f"CURRENT  {'NAME':<{width}}  {'CLUSTER':<{cwidth}}  AUTH")
        for r in rows:
            mark = "*" if r["current"] else " "
            click.echo(f"{mark:<7}  {r['name']:<{width}}  {r['cluster']:<{cwidth}}  {r['auth']}")


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
    from kquotactl.contexts import write_current_context

    config = _config(ctx)
    if not config.exists:
        from kquotactl.errors import UsageError

        raise UsageError(
            f"no config file at {config.path}: create it with a 'contexts:' mapping (see docs/contexts.md)"
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

    from kquotactl.contexts import ENV_CONTEXT
    from kquotactl.errors import UsageError

    config = _config(ctx)
    root = ctx.find_root().params
    name = root.get("context_name") or os.environ.get(ENV_CONTEXT) or config.current
    if not name:
        raise UsageError(f"no current context in {config.path}: set one with `kquotactl config use-context NAME`")
    config.get(name)
    click.echo(name)


def _context_names(ctx: click.Context, incomplete: str) -> list[str]:
    try:
        return [n for n in sorted(_config(ctx).contexts) if n.startswith(incomplete)]
    except Exception:
        return []


def register(group: click.Group) -> None:
    group.add_command(config_group)
