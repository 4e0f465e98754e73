"""kafka-configs' command-line habits made to work with click (one-dash long options, group options anywhere, the
flat ``--alter``/``--describe`` form): shared by :mod:`kquotactl.cli.app` and shell completion, which import this and
pass their click group. Only click is imported.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import click

from kquotactl.core.errors import UsageError
from kquotactl.core.wording import not_utf8, shown_name


def option_table(group: click.Group) -> tuple[dict[str, bool], dict[str, bool]]:
    """Long/short option names -> takes a value, for the group and for its subcommands loaded so far (see
    :func:`load_named_command`)."""

    def table(params: Sequence[click.Parameter]) -> dict[str, bool]:
        out: dict[str, bool] = {}
        for p in params:
            if isinstance(p, click.Option):
                for name in (*p.opts, *p.secondary_opts):
                    out[name] = not p.is_flag and not p.count
        return out

    sub: dict[str, bool] = {}
    for cmd in group.commands.values():
        sub.update(table(cmd.params))
    return table(group.params), sub


def as_long_option(tok: str, known: Mapping[str, bool]) -> str:
    """jopt's one-dash long option (``-add-config``, ``-entity-type=users``) as click's ``--add-config``; any
    other token as given."""
    if tok.startswith("-") and not tok.startswith("--") and len(tok) > 2 and "--" + tok[1:].split("=")[0] in known:
        return "-" + tok
    return tok


def load_named_command(argv: Sequence[str], group: click.Group) -> None:
    """Load the subcommand ``argv`` names, so that its options are in :func:`option_table`: the first word that is
    neither an option nor the value of one of the group's (or its loaded subcommands') options. A subcommand's own
    options only ever follow its name, so none is needed before it is found."""
    glob, sub = option_table(group)
    known = {**glob, **sub}
    names = set(group.list_commands(click.Context(group)))
    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            return
        if tok.startswith("-"):
            tok = as_long_option(tok, known)
            name = tok.split("=", 1)[0] if tok.startswith("--") else tok
            i += 2 if known.get(name) and "=" not in tok else 1
            continue
        if tok in names:
            group.get_command(click.Context(group), tok)
        return


ACTION_COUNT = "Command must include exactly one action: --describe, --alter"  # kafka-configs' words, 2.x to 4.x


def normalize_argv(argv: Sequence[str], group: click.Group) -> tuple[list[str], bool]:
    """Make kafka-configs habits work with click.

    - ``-add-config`` (jopt accepts one dash on long options) becomes ``--add-config``;
    - group options may appear anywhere (they are moved before the command);
    - the flat form ``--alter`` / ``--describe`` becomes the ``alter`` / ``describe`` command.

    Returns the new argv and whether the flat form was used.
    """
    load_named_command(argv, group)
    glob, sub = option_table(group)
    known = {**glob, **sub, "--alter": False, "--describe": False}
    head: list[str] = []
    rest: list[str] = []
    actions: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        tok = args[i]
        if tok == "--":
            rest += args[i:]
            break
        tok = as_long_option(tok, known)
        name = tok.split("=", 1)[0] if tok.startswith("--") else tok
        if name in ("--alter", "--describe") and "=" not in tok:
            actions.append(name[2:])
            i += 1
            continue
        if name in glob and glob[name] and "=" not in tok:
            refuse_missing_value(name, args[i + 1 : i + 2], args[i + 2 :], group)
        target = head if name in glob else rest
        target.append(tok)
        if known.get(name) and "=" not in tok and i + 1 < len(args):
            target.append(args[i + 1])  # jopt/click: a value-taking option consumes the next token
            i += 1
        i += 1
    flat = False
    if not actions and argv and not rest and not asks_help(argv):  # kquotactl --zookeeper zk:2181
        raise UsageError(f"{ACTION_COUNT} (or a command: see 'kquotactl --help')")
    if actions:
        if len(set(actions)) != 1 or any(a in group.commands for a in rest[:1]):
            raise UsageError(ACTION_COUNT)
        rest = [actions[0], *rest]
        flat = True
    elif rest and rest[0].startswith("-") and rest[0] != "--" and not asks_help(argv):
        raise UsageError(ACTION_COUNT)  # kafka-configs' flat form without --alter/--describe (no command either)
    return head + rest, flat


def refuse_missing_value(option: str, value: Sequence[str], after: Sequence[str], group: click.Group) -> None:
    """``--zookeeper "$ZK" describe`` with ZK unset: the option would take the command's name (or the flat form's
    ``--describe``, or nothing) as its value, and the line would fail far from its cause. Said here instead: the
    option has no value. A word that names a command is a value when another command name follows it."""
    if not value:
        raise UsageError(f"{option} has no value (an unset variable?): give it one, or leave {option} out")
    word = value[0]
    if word in ("--alter", "--describe"):
        raise UsageError(
            f"{option} {word!r} is one of kquotactl's options, so {option} has no value (an unset variable?)"
        )
    names = set(group.list_commands(click.Context(group)))
    if word in names and not any(w in names for w in after):
        raise UsageError(
            f"{option} has no value (an unset variable?): {word!r} after it is the command; give {option} a value, "
            f"or leave it out"
        )


def refuse_non_utf8(argv: Sequence[str]) -> None:
    """An argument with a byte that is not UTF-8 (a Latin-1 terminal, a variable filled from such a file) is refused
    here, naming the byte and where, before it reaches a message as ``'caf\\udce9'``. A path that exists is
    any bytes the file system holds, and is let through."""
    for i, word in enumerate(argv):
        where = not_utf8(word)
        if where is None or os.path.lexists(word):
            continue
        before = argv[i - 1] if i and argv[i - 1].startswith("-") and "=" not in argv[i - 1] else None
        what = f"{before} {shown_name(word)}" if before else f"argument {i + 1} ({shown_name(word)})"
        raise UsageError(
            f"{what}: {where} is not UTF-8; kquotactl reads its arguments as UTF-8 (check the terminal's encoding "
            "or the variable that holds the value)"
        )


def asks_help(argv: Sequence[str]) -> bool:
    return any(a in ("-h", "--help", "--version") for a in argv)
