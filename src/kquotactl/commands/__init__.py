"""Sub-commands beyond alter/describe, one module each (manifests, explain, impact, config, completion...).

Each module defines click commands and a ``register(group)`` function, and imports only click at module
level (everything heavy is imported inside the command body), so registering them costs nothing at
start-up. Add a module here by appending its name to ``MODULES``.
"""

from __future__ import annotations

import importlib

import click

MODULES: list[str] = []


def register_all(group: click.Group) -> None:
    for name in MODULES:
        importlib.import_module(f"kquotactl.commands.{name}").register(group)
