"""The terminal a command talks to: its width (without shutil), a standard output whose reader may go away, and the
``[y/N]`` prompt.
"""

from __future__ import annotations

import io
import os
import sys
from typing import Any

import click

from kquotactl.cli.signals import stopped_by


def terminal_columns() -> int:
    """``shutil.get_terminal_size().columns`` (``COLUMNS``, else the width of the terminal stdout is, else 80)
    without importing shutil and the compression modules it loads: ~5 ms of every ``--help``."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _ClosableStdout(io.FileIO):
    """Standard output whose reader may go away (``plan | head -1``): the first write to a closed pipe points the
    descriptor at /dev/null and the command carries on, so its exit code is still the one its result decides."""

    closed_by_reader = False

    def write(self, data: Any) -> int:
        try:
            return super().write(data) or 0
        except BrokenPipeError:
            _ClosableStdout.closed_by_reader = True
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.fileno())
            os.close(devnull)
            return len(data)


def guard_stdout() -> None:
    """Make a closed standard output only stop the output (see :class:`_ClosableStdout`). Only the real stdout
    (not a test runner's capture) is replaced, keeping its encoding, error handler and line buffering."""
    out = sys.stdout
    if out is None:  # started with stdout closed (`>&-`): the output goes nowhere, the result still decides
        sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - stdout for the rest of the run
        _ClosableStdout.closed_by_reader = True
        return
    if not isinstance(out, io.TextIOWrapper) or out is not sys.__stdout__:  # a capture, or already guarded
        return
    try:
        fd = out.fileno()
    except (AttributeError, ValueError, OSError):
        return
    out.flush()
    raw = _ClosableStdout(fd, "w", closefd=False)
    sys.stdout = io.TextIOWrapper(
        io.BufferedWriter(raw), encoding=out.encoding, errors=out.errors, line_buffering=out.line_buffering
    )


def stdout_closed() -> bool:
    """Whether the reader of standard output went away: a command that would go on only to print (``top --watch``)
    stops."""
    return _ClosableStdout.closed_by_reader


def confirm(question: str) -> bool:
    """Ask on stderr, ``[y/N]``. Ctrl-C (or SIGTERM) at the prompt is an error saying nothing was written (exit 130,
    143), not click's "Aborted!" with exit 1; end of input (Ctrl-D) is a refusal that says so (exit 2, as
    declining). Read with ``readline``, not ``input()``, which drops a Ctrl-C that lands as the prompt appears."""
    from kquotactl.core.errors import EXIT_INTERRUPTED, EXIT_PENDING, QuotaError

    while True:
        try:
            click.echo(f"{question} [y/N]: ", nl=False, err=True)
            answer = sys.stdin.readline()
        except KeyboardInterrupt:
            click.echo("", err=True)  # end the prompt's line
            error = QuotaError(f"{stopped_by()} at the prompt: not applied, nothing was written")
            error.exit_code = EXIT_INTERRUPTED  # main() makes it 143 after SIGTERM
            raise error from None
        if not answer:
            click.echo("", err=True)
            error = QuotaError("no answer at the prompt (end of input): not applied, nothing was written")
            error.exit_code = EXIT_PENDING
            raise error from None
        word = answer.strip().lower()
        if word in ("y", "yes"):
            return True
        if word in ("", "n", "no"):
            return False
        click.echo("Error: answer y or n", err=True)
