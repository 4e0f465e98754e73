"""``kquotactl validate``: check manifests offline (structure, keys, values, entities, lint); nothing is contacted.

Only click is imported at module level; the manifest modules load inside the command.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

import click

from kquotactl.cli.groups import OnceCommand
from kquotactl.cli.manifestargs import (
    dump,
    echo_err,
    files_option,
    given_rules,
    load,
    output_format,
    summary,
    write_ci,
)
from kquotactl.cli.options import CI_REPORTS, principal_rule_options
from kquotactl.cli.state import AppState, pass_state
from kquotactl.core.errors import QuotaError

#: how the summary line counts each kind of entity (:meth:`kquotactl.core.manifest.Manifest.kinds`)
KIND_WORDS = {
    "users": ("user", "users"),
    "pairs": ("pair", "pairs"),
    "clients": ("client", "clients"),
    "ips": ("ip", "ips"),
}


@click.command(cls=OnceCommand)
@files_option()
@click.option("--strict", is_flag=True, help="Treat lint warnings as errors (exit 1).")
@principal_rule_options
@click.option(
    "--super-users",
    metavar="User:A;User:B",
    help="The brokers' super.users: lint warns about default quotas that would throttle them.",
)
@pass_state
def validate(state: AppState, files: Sequence[str], strict: bool, super_users: str | None, **rule_kw: Any) -> None:
    """Check manifests offline: structure, every key and value, entities, and lint.

    Errors are printed as FILE:LINE: MESSAGE, the line being that of the offending value or key. Lint
    warnings name quotas that can never apply (for example a client-id quota hidden by a <default> user
    quota, with the entry that hides it) and keys stock brokers do not enforce. Nothing is contacted.

    -o json/yaml prints one object, valid or not: valid, entities, kinds (users, pairs, clients, ips),
    prune, errors and warnings. Every error and warning is an object with source (FILE:LINE, or null)
    and message; warnings add entity, keys and code.

    \b
    Examples:
      kquotactl validate -f quotas.yaml
      kquotactl validate -f quotas/ -f team-b.yaml --strict
      kquotactl validate -f quotas.yaml -o json
    """
    from kquotactl.core.lint import lint
    from kquotactl.core.manifest import ManifestError
    from kquotactl.core.wording import counted

    fmt = output_format(state)
    try:
        manifest = load(files, rule_kw, super_users)
    except ManifestError as e:
        problems = counted(len(e.problems), "problem")
        if fmt in CI_REPORTS:
            from kquotactl.render.ci import invalid_report

            write_ci(invalid_report("validate", e.problems, problems), fmt)
        elif fmt in ("json", "yaml"):
            from kquotactl.render.ci import validate_document

            dump(validate_document(None, e.problems, [], strict), fmt, sys.stdout)
        else:
            for p in e.problems:
                echo_err(p)
        raise QuotaError(f"{problems} in the manifest; nothing was written") from None
    warnings = lint(manifest, given_rules(rule_kw, super_users))
    counts = ", ".join(counted(v, *KIND_WORDS[k]) for k, v in manifest.kinds().items() if v)
    line = (
        f"valid: {counted(len(manifest), 'entity')} ({counts or 'none'}) in {counted(len(manifest.files), 'file')}, "
        f"{counted(len(warnings), 'warning')}"
    )
    if fmt in CI_REPORTS:
        from kquotactl.render.ci import validate_report

        write_ci(validate_report(manifest, warnings, strict, line), fmt)
    elif fmt in ("json", "yaml"):
        from kquotactl.render.ci import validate_document

        dump(validate_document(manifest, [], warnings, strict), fmt, sys.stdout)
    else:
        for w in warnings:
            echo_err(str(w))
    summary(line, fmt)
    if strict and warnings:
        raise QuotaError(f"{counted(len(warnings), 'lint warning')} and --strict")
