"""The click pieces the top-level command (:mod:`kquotactl.cli.app`) and the sub-command modules
(:mod:`kquotactl.cli.commands`) share: the application state, the once-only option parser, shared option groups.

It imports neither of them (commands import this, ``cli`` imports this and the commands): only click and the
connection options at module level, so ``kquotactl --help`` stays fast.
"""

from __future__ import annotations

import contextlib
import gc
import io
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import click

from kquotactl.cli.helpwrap import HelpFormatter
from kquotactl.config.cluster import ConnectionOptions, typed_cluster

if TYPE_CHECKING:  # the backends load lazily: `kquotactl --help` imports none of them
    from kquotactl.backends.base import QuotaBackend
    from kquotactl.core.precedence import QuotaIndex
    from kquotactl.core.principals import BrokerPrincipals

CI_REPORTS = ("markdown", "junit", "sarif")  # kquotactl.render.ci


@dataclass
class AppState:
    """What the group options decided, shared with every command."""

    conn: ConnectionOptions = field(default_factory=ConnectionOptions)
    output: str | None = None
    color: bool = False
    verbose: bool = False
    kafka_compat: bool = False  # invoked in kafka-configs' flat form (--alter/--describe)
    context_name: str | None = None  # --context (else KQUOTACTL_CONTEXT, else the file's current-context)
    config_path: str | None = None  # --config (else KQUOTACTL_CONFIG, else XDG)
    explicit: frozenset[str] = frozenset()  # connection fields typed on the command line (a context never overrides)
    _backend: QuotaBackend | None = None

    def connection(self) -> ConnectionOptions:
        """The cluster to use: flags > environment > context (see kquotactl.config.contexts)."""
        typed_only = typed_cluster(self.conn, self.context_name)
        if typed_only is not None:  # no context involved: the contexts module (and pathlib) is not even loaded
            return typed_only
        from kquotactl.config.contexts import resolve

        return resolve(self.conn, self.context_name, self.config_path, typed=self.explicit)

    def backend(self, ctx: click.Context) -> QuotaBackend:
        if self._backend is None:
            from kquotactl.backends.factory import open_backend

            self._backend = open_backend(self.connection())
            ctx.call_on_close(self._backend.close)
        return self._backend

    def output_format(self) -> str:
        if self.output:
            return self.output
        if self.kafka_compat:
            return "kafka"
        return "table" if sys.stdout.isatty() else "json"

    def warn(self, message: str) -> None:
        click.echo(f"kquotactl: warning: {message}", err=True)


pass_state = click.make_pass_decorator(AppState, ensure=True)


# -- one value per option -----------------------------------------------------------------------


class _OnceParser:
    """Wraps click's parser: an option that takes one value may be given once (click keeps the last silently,
    so ``--user alice --user bob`` would change bob). Repeatable options say so (``multiple``); flags repeated
    mean the same thing and stay accepted."""

    def __init__(self, parser: Any) -> None:
        self._parser = parser

    def __getattr__(self, name: str) -> Any:
        return getattr(self._parser, name)

    def parse_args(self, args: list[str]) -> Any:
        opts, rest, order = self._parser.parse_args(args=args)
        ctx = getattr(self._parser, "ctx", None)
        if ctx is not None and ctx.resilient_parsing:  # shell completion: offer what it can, refuse nothing
            return opts, rest, order
        seen: set[int] = set()
        for p in order:
            if isinstance(p, click.Option) and not (p.multiple or p.is_flag or p.count):
                if id(p) in seen:
                    names = "/".join(p.opts + p.secondary_opts)
                    raise click.UsageError(f"{names} given more than once: give it once (no guessing which one)")
                seen.add(id(p))
        for p in dict.fromkeys(order):
            refuse_empty(p, opts.get(p.name or ""))
        return opts, rest, order


def is_own_option(value: str, *more: click.Command) -> bool:
    """Whether ``value`` is an option of the running command, of the kquotactl group or of ``more`` commands
    (``--client-defaults``, ``-o``...): the word an option that lacks its value takes instead."""
    if not value.startswith("-"):
        return False
    commands = list(more)
    ctx = click.get_current_context(silent=True)
    while ctx is not None:
        commands.append(ctx.command)
        ctx = ctx.parent
    return any(
        isinstance(param, click.Option) and value in (*param.opts, *param.secondary_opts)
        for command in commands
        for param in command.params
    )


#: Parameters whose empty value has words of their own (an entity's default: ``--user-defaults``; a principal's).
EMPTY_HAS_OWN_WORDS = frozenset({"user", "client", "client_id", "ip", "entity_names", "principal"})


def refuse_empty(param: click.Parameter, value: Any) -> None:
    """``-f "$DIR"``, ``--log "$LOG"``, ``impact run "$TRAFFIC"`` with the variable unset: an empty word is never a
    target (an empty path would read or write the current directory), refused before anything is read or opened."""
    if param.name in EMPTY_HAS_OWN_WORDS or not (value == "" or (isinstance(value, list | tuple) and "" in value)):
        return
    what = param.opts[0] if isinstance(param, click.Option) else (param.name or "").upper()
    kind = param.type
    if isinstance(kind, click.Path):
        hint = "name a file" if not kind.dir_okay else "name a directory" if not kind.file_okay else "name a path"
        hint += " (. for the current directory)" if kind.dir_okay else ""
    elif param.metavar in ("PATH", "FILE", "MANIFEST", "DIR") or isinstance(param, click.Argument):
        hint = "name a file or directory (. for the current directory)"
    else:
        hint = "give a value or leave the option out" if isinstance(param, click.Option) else "give a value"
    raise click.UsageError(f"{what} is empty (an unset variable?): {hint}")


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cycle collector while a command reads a manifest and the live quotas in bulk: some ten
    objects per entity, kept to the end and in no reference cycle, which the collector would otherwise walk again
    at every collection (0.19 s of the 2.4 s CPU of an in-sync plan of 10,000 entities). It resumes when the block
    ends, so what follows (an apply, a staged apply's hours of waiting) collects as usual."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


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


class AppContext(click.Context):
    formatter_class = HelpFormatter

    def make_formatter(self) -> click.HelpFormatter:
        """click's help formatter at click's width (the terminal's, at most ``max_content_width``, at least 50)."""
        width = self.terminal_width
        if width is None and click.formatting.FORCED_WIDTH is None:  # CliRunner forces a width: click's own path
            width = max(min(terminal_columns(), self.max_content_width or 80) - 2, 50)
        return self.formatter_class(width=width, max_width=self.max_content_width)


class OnceCommand(click.Command):
    """A command whose single-value options are refused when repeated (see :class:`_OnceParser`)."""

    context_class = AppContext

    def make_parser(self, ctx: click.Context) -> Any:
        return _OnceParser(super().make_parser(ctx))


class OnceGroup(click.Group):
    command_class = OnceCommand
    context_class = AppContext

    def make_parser(self, ctx: click.Context) -> Any:
        return _OnceParser(super().make_parser(ctx))


OnceGroup.group_class = OnceGroup


class LazyGroup(OnceGroup):
    """A group whose sub-commands are imported when first asked for (:meth:`get_command`): ``lazy`` maps a name to
    the function that loads the command and the summary ``--help`` lists it with until then (the first paragraph
    of its help, shortened exactly as click shortens a loaded command's)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy: dict[str, tuple[Callable[[], click.Command], str]] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context | None, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            self.add_command(self.lazy[cmd_name][0](), cmd_name)
        return self.commands.get(cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] not in self.commands and args[0] not in self.lazy:
            self.load_all()  # a name no command has: click's "Did you mean" draws on the commands it holds
        return super().resolve_command(ctx, args)

    def load_all(self) -> list[click.Command]:
        """Every sub-command, loaded (completion and the generated docs walk them all)."""
        return [cmd for name in self.list_commands(click.Context(self)) if (cmd := self.get_command(None, name))]

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's listing, with each command not yet loaded standing in as its summary (nothing is imported)."""
        rows: list[tuple[str, click.Command]] = []
        for name in self.list_commands(ctx):
            cmd = self.commands.get(name)
            if cmd is None:
                cmd = click.Command(name, help=self.lazy[name][1])
            if not cmd.hidden:
                rows.append((name, cmd))
        if rows:
            limit = formatter.width - 6 - max(len(name) for name, _ in rows)
            with formatter.section("Commands"):
                formatter.write_dl([(name, cmd.get_short_help_str(limit)) for name, cmd in rows])


# -- option groups ---------------------------------------------------------------------------------


def stacked(options: list[Callable[..., Any]], f: Callable[..., Any]) -> Callable[..., Any]:
    """Apply click option decorators so that they appear in ``--help`` in list order."""
    for o in reversed(options):
        f = o(f)
    return f


def _window_options(flag: str, config: str, what: tuple[str, str]) -> list[Callable[..., Any]]:
    """``--<flag>-num`` and ``--<flag>-size[-seconds]``: a broker's ``<config>.num`` x ``<config>.size.seconds``, with
    Kafka's own lower bounds and defaults."""
    dest = flag.replace("-", "_") + "_size_seconds"
    return [
        click.option(
            f"--{flag}-num",
            type=click.IntRange(min=1),
            default=11,
            show_default=True,
            help=f"The brokers' {config}.num{what[0]}.",
        ),
        click.option(
            f"--{flag}-size-seconds",
            f"--{flag}-size",
            dest,
            type=click.IntRange(min=1),
            default=1,
            show_default=True,
            metavar="SECONDS",
            help=f"The brokers' {config}.size.seconds{what[1]}.",
        ),
    ]


def quota_window_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The brokers' quota window (``quota.window.num`` x ``quota.window.size.seconds``), for the commands that model
    throttling (``explain``, ``impact run``): one spelling, Kafka's own lower bounds."""
    what = (": samples in the rate window", ": the length of one sample")
    return stacked(_window_options("window", "quota.window", what), f)


def controller_window_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The brokers' controller mutation window (``controller.quota.window.num`` x
    ``controller.quota.window.size.seconds``): Kafka sizes the controller_mutation_rate bucket from these, not from
    ``quota.window.*``."""
    what = (" (controller_mutation_rate)",) * 2
    return stacked(_window_options("controller-window", "controller.quota.window", what), f)


def parse_kafka_version(text: str) -> tuple[int, ...]:
    """``--kafka-version X.Y[.Z]``."""
    from kquotactl.core.errors import UsageError

    parts = text.strip().split(".")
    if not 2 <= len(parts) <= 3 or not all(p.isdigit() for p in parts):
        raise UsageError(f"--kafka-version {text!r}: expected X.Y or X.Y.Z, e.g. 2.8 or 3.7.1")
    version = tuple(int(p) for p in parts)
    from kquotactl.core.kafkaversions import NEWEST_KNOWN, newer_than_known

    if newer_than_known(version):
        newest = ".".join(map(str, NEWEST_KNOWN[:2]))
        raise UsageError(
            f"--kafka-version {text!r}: kquotactl knows Kafka's quota behaviour up to {newest}; "
            "leave the option out to simulate the newest it knows"
        )
    return version


def manifest_quotas_option(help: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``-f MANIFEST`` (repeatable, ``-`` = stdin) for the commands that resolve connections against a quota set
    (``explain``, ``top``): the quotas from manifests instead of the cluster; read by :func:`quota_index`."""
    return click.option(
        "-f",
        "--file",
        "files",
        multiple=True,
        metavar="MANIFEST",
        type=click.Path(exists=True, allow_dash=True),
        help=help,
    )


def quota_index(
    ctx: click.Context,
    state: AppState,
    files: Sequence[str],
    statics: Mapping[str, int] | None = None,
    brokers: int | None = None,
    principals: BrokerPrincipals | None = None,
) -> QuotaIndex:
    """The quotas a command resolves connections against (explain, top): manifests given with ``-f`` (offline) or
    the live cluster's whole quota set; what the backend noticed reading it is said once. ``brokers``: what the
    manifests' cluster-wide budgets divide by; ``principals``: the rules their ``principal:`` entries map by."""
    from kquotactl.services.quotas import load_quota_set

    if files and (state.conn.zookeeper or state.conn.bootstrap_server or state.conn.bootstrap_controller):
        from kquotactl.core.errors import UsageError

        raise UsageError("-f reads the quotas from manifests (offline): drop --zookeeper/--bootstrap-server, or -f")
    quota_set = load_quota_set(list(files) if files else state.backend(ctx), statics, brokers, principals=principals)
    for w in quota_set.warnings:
        state.warn(w)
    return quota_set.index


# -- signals and prompts --------------------------------------------------------------------------------


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
