"""The click command and group classes every kquotactl command uses: single-value options given once, empty words
refused, help at the terminal's width, and the group that imports its sub-commands only when asked for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from kquotactl.cli.helpwrap import HelpFormatter
from kquotactl.cli.terminal import terminal_columns


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
