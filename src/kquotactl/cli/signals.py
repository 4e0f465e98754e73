"""SIGTERM taken as Ctrl-C while a command runs, and how the interrupt that stopped it is named."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

#: the signals received so far that stop a command (SIGTERM), for :func:`stopped_by`
_RECEIVED: list[str] = []


@contextlib.contextmanager
def terminate_like_ctrl_c() -> Iterator[None]:
    """While the command runs, SIGTERM (what CI runners send on cancel) raises
    :class:`~kquotactl.core.errors.Terminated`, a ``KeyboardInterrupt``: a write in progress stops as after Ctrl-C,
    says what was applied, and exits 143. The previous handler is back afterwards (a caller's own process)."""
    import signal

    from kquotactl.core.errors import Terminated

    def handler(signum: int, frame: object) -> None:
        _RECEIVED.append("SIGTERM")
        raise Terminated()

    _RECEIVED.clear()
    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread (kquotactl called from a library's thread): left as it is
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def terminated() -> bool:
    """Whether SIGTERM stopped this command (its interrupt then exits 143, not 130)."""
    return bool(_RECEIVED)


def stopped_by() -> str:
    """How the interrupt is named to people: ``terminated (SIGTERM)`` or ``interrupted (Ctrl-C)``."""
    return "terminated (SIGTERM)" if terminated() else "interrupted (Ctrl-C)"
