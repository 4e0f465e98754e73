"""Sub-commands beyond alter/describe, one module each (manifests, explain, impact, config, completion...).

Each module defines click commands and a ``register(group)`` function, and imports only click at module
level (everything heavy is imported inside the command body), so registering them costs little at
start-up. Modules are discovered: adding a command is adding a file here (names starting with ``_``
are helpers, not commands).
"""

from __future__ import annotations

import importlib
import pkgutil

import click


def module_names() -> list[str]:
    """The command modules in this package, sorted (deterministic help order)."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def register_all(group: click.Group) -> None:
    for name in module_names():
        importlib.import_module(f"{__name__}.{name}").register(group)
