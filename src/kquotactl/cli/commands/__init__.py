"""Sub-commands beyond alter/describe, one module each (manifests, explain, impact, config, completion...).

Each module defines click commands and a ``register(group)`` function, and imports only click and
:mod:`kquotactl.cli.kit` at module level (everything heavy is imported inside the command body), so registering
them costs little at start-up. Adding a command is adding a module here and naming it in ``MODULES``
(``tests/test_architecture.py`` checks that every module is named); the imports are plain ones, so the import
graph the architecture test checks is the real one.
"""

from __future__ import annotations

import click

from kquotactl.cli.commands import (
    apply,
    completion,
    config,
    connection_rate,
    explain,
    export,
    impact,
    plan,
    top,
    validate,
    verify,
)

MODULES = (
    apply,
    completion,
    config,
    connection_rate,
    explain,
    export,
    impact,
    plan,
    top,
    validate,
    verify,
)  # help order: sorted by name


def module_names() -> list[str]:
    """The command modules in this package, sorted (deterministic help order)."""
    return sorted(m.__name__.rsplit(".", 1)[1] for m in MODULES)


def register_all(group: click.Group) -> None:
    for module in sorted(MODULES, key=lambda m: m.__name__):
        module.register(group)
