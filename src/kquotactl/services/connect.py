"""Open a backend from Python as the command line does: the options given, then the ``KQUOTACTL_*`` environment,
then a named cluster context (``config set-context``), so a script and a shell reach the same cluster."""

from __future__ import annotations

from kquotactl.backends.base import QuotaBackend
from kquotactl.connection.cluster import ConnectionOptions


def connect(
    options: ConnectionOptions | None = None, *, context: str | None = None, config_path: str | None = None
) -> QuotaBackend:
    """A backend for the cluster ``options`` name, or the ``context`` (default: ``KQUOTACTL_CONTEXT``, then the
    contexts file's current context). Use it in a ``with`` block: it closes the connection."""
    from kquotactl.backends.factory import open_backend
    from kquotactl.connection.contexts import resolve

    return open_backend(resolve(options or ConnectionOptions(), context, config_path))
