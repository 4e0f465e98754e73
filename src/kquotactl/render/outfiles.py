"""Output files and directories named on the command line: checked before any work starts, opened with one-line
errors. The one home of "can kquotactl write there?" for ``export --out``, ``plan --out``, ``apply --log``,
``impact run --out`` and ``impact generate``.

A missing parent directory is an error, never created silently: ``--out /tmp/reprot/x.yaml`` with a typo must not
leave the result somewhere nobody looks.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import IO

from kquotactl.core.errors import UsageError


def check_file(path: str, option: str) -> None:
    """``path`` can be created or overwritten as a file: its directory exists and is writable, and it is not a
    directory itself. Raises :class:`UsageError` naming ``option`` and the cause."""
    if path == "":
        raise UsageError(f"{option} is empty (an unset variable?): name a file")
    if os.path.isdir(path):
        raise UsageError(f"{option} {path}: is a directory (name a file)")
    _check_parent(path, option)
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise UsageError(f"{option} {path}: permission denied")


def check_dir(path: str, option: str) -> None:
    """``path`` is a writable directory, or can be created as one in an existing, writable parent."""
    if path == "":
        raise UsageError(f"{option} is empty (an unset variable?): name a directory")
    if os.path.exists(path):
        if not os.path.isdir(path):
            raise UsageError(f"{option} {path}: not a directory")
        if not os.access(path, os.W_OK | os.X_OK):
            raise UsageError(f"{option} {path}: permission denied")
        return
    _check_parent(path, option)


def _check_parent(path: str, option: str) -> None:
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        what = "not a directory" if os.path.exists(parent) else "no such directory (it is not created)"
        raise UsageError(f"{option} {path}: {parent}: {what}")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: {parent}: permission denied")


def open_file(path: str, option: str, mode: str = "w") -> IO[str]:
    """Open an output file (after :func:`check_file`), with the OS's reason as a one-line error."""
    check_file(path, option)
    try:
        return open(path, mode, encoding="utf-8")
    except OSError as e:
        raise UsageError(f"{option} {path}: {e.strerror or e}") from None


@contextmanager
def replaced_file(path: str, option: str) -> Iterator[IO[str]]:
    """Write ``path`` whole or not at all: into a temporary file beside it, renamed over it only when the block
    succeeds (an error or Ctrl-C midway leaves any previous file as it was)."""
    import tempfile

    check_file(path, option)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp")
    except OSError as e:
        raise UsageError(f"{option} {path}: {e.strerror or e}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            yield f
        if os.path.exists(path):
            os.chmod(tmp, os.stat(path).st_mode & 0o777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
