"""``kquotactl export``: the live quotas as a manifest (lossless, deterministic; applying it is a no-op).

Only click is imported at module level; the backend and export modules load inside the command.
"""

from __future__ import annotations

import sys

import click

from kquotactl.cli.groups import OnceCommand
from kquotactl.cli.manifestargs import live_records
from kquotactl.cli.state import AppState, pass_state
from kquotactl.core.errors import UsageError


@click.command(cls=OnceCommand)
@click.option("--out", "out_path", metavar="FILE", type=click.Path(dir_okay=False), help="Write to FILE.")
@click.option(
    "--units",
    is_flag=True,
    help="Write byte rates with the largest exact IEC unit (5242880 -> 5MiB); still lossless.",
)
@pass_state
@click.pass_context
def export(ctx: click.Context, state: AppState, out_path: str | None, units: bool) -> None:
    """Print the live quotas as a manifest (YAML by default, -o json).

    Lossless and deterministic: defaults, (user, client-id) pairs, ips and real (unsanitized) names, in
    describe order, integers for LONG/INT keys. Applying an export is a no-op; exporting from one backend
    and applying to another migrates quotas (for example from a ZooKeeper cluster to a KRaft cluster).

    \b
    Examples:
      kquotactl --zookeeper zk:2181/kafka export > quotas.yaml
      kquotactl --zookeeper old-zk:2181/kafka export | kquotactl --bootstrap-server kraft:9092 apply -f - --yes
      kquotactl --zookeeper zk:2181/kafka export -o json --out quotas.json
      kquotactl --zookeeper zk:2181/kafka export --units
    """
    from kquotactl.manifests.export import dump_manifest_yaml, export_document
    from kquotactl.render.outfiles import check_file, replaced_file
    from kquotactl.render.records import dump_json

    fmt = state.output or "yaml"
    if fmt not in ("yaml", "json"):
        raise UsageError(f"export writes yaml or json, not {fmt}")
    if out_path is not None:
        check_file(out_path, "--out")  # before the cluster is read
    _, records = live_records(state, ctx, ())
    doc = export_document(records, units=units)
    dump = dump_json if fmt == "json" else dump_manifest_yaml
    if out_path is None:
        dump(doc, sys.stdout)
    else:
        with replaced_file(out_path, "--out") as out:
            dump(doc, out)
    from kquotactl.core.wording import counted

    click.echo(f"exported {counted(len(records), 'entity')}", err=True)
