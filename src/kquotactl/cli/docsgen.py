"""Generated documentation: man pages, the CLI reference and the completion scripts, from the click tree; the
manifest JSON Schema's key lists, from the key registry (:mod:`kquotactl.manifests.schema`).

One source of truth: every page is built from the same click definitions ``--help`` prints, so a new
command or option shows up everywhere by running ``make docs``; ``make docs-check`` (and the tests) fail
when the checked-in files drift. Rendering is pure (strings in, strings out); only :func:`write` and
:func:`check` touch files.

``python -m kquotactl.cli.docsgen [--check] [--out DIR]``
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click

from kquotactl import __version__

#: the Grafana dashboard ``make docs`` writes (observe/dashboard.py builds it), relative to the checkout
DASHBOARD_FILE = "docs/examples/grafana-dashboard.json"

PROG = "kquotactl"
WIDTH = 100  # help is rendered at a fixed width, so the output never depends on the terminal
MAN_SECTION = "1"


@dataclass(frozen=True)
class Page:
    """One command (the group itself has ``path == ()``)."""

    path: tuple[str, ...]
    command: click.Command
    ctx: click.Context

    @property
    def name(self) -> str:
        return " ".join((PROG, *self.path))

    @property
    def man_name(self) -> str:
        return "-".join((PROG, *self.path))


def pages(cli: click.Command | None = None) -> list[Page]:
    """Every visible command, depth first, sorted by name (deterministic)."""
    if cli is None:
        from kquotactl.cli.app import cli as root

        cli = root

    out: list[Page] = []

    def walk(cmd: click.Command, path: tuple[str, ...], parent: click.Context | None) -> None:
        settings = {**cmd.context_settings, "terminal_width": WIDTH, "max_content_width": WIDTH}
        ctx = cmd.context_class(cmd, info_name=path[-1] if path else PROG, parent=parent, **settings)
        out.append(Page(path, cmd, ctx))
        if isinstance(cmd, click.Group):
            for name in sorted(cmd.list_commands(ctx)):
                sub = cmd.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    walk(sub, (*path, name), ctx)

    walk(cli, (), None)
    return out


# -- the docstring: description and examples -----------------------------------------------------


def split_help(text: str | None) -> tuple[list[tuple[bool, str]], list[str]]:
    """A command's help -> (paragraphs as (verbatim, text), example lines).

    The ``\\b`` + ``Examples:`` block (the convention every command follows) becomes the EXAMPLES section.
    """
    text = click.unstyle(text or "")
    text = re.sub(r"\n[ \t]+\n", "\n\n", _dedent(text)).strip("\n")
    paragraphs: list[tuple[bool, str]] = []
    examples: list[str] = []
    for block in re.split(r"\n{2,}", text):
        lines = block.split("\n")
        verbatim = lines[0].strip() == "\b"
        if verbatim:
            lines = lines[1:]
        if lines and lines[0].strip().rstrip(":").lower() == "examples":
            examples += [ln.strip() for ln in lines[1:] if ln.strip()]
            continue
        if verbatim:
            paragraphs.append((True, "\n".join(lines)))
        else:
            paragraphs.append((False, " ".join(ln.strip() for ln in lines)))
    return paragraphs, examples


def _dedent(text: str) -> str:
    import inspect

    return inspect.cleandoc(text)


# -- roff ----------------------------------------------------------------------------------------


def roff_escape(text: str) -> str:
    """Text for a roff line: backslashes and hyphens escaped, no line may start a request."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    text = text.replace("'", "\\(aq").replace("`", "\\(ga")
    return text


def _line(text: str) -> str:
    text = roff_escape(text)
    return "\\&" + text if text[:1] in (".", "'") else text


def _opt_term(record: str) -> str:
    """``--add-config K=V,...`` -> bold option names, italic metavar."""
    parts = []
    for piece in record.split(", "):
        name, _, meta = piece.partition(" ")
        parts.append(f"\\fB{roff_escape(name)}\\fR" + (f" \\fI{roff_escape(meta)}\\fR" if meta else ""))
    return ", ".join(parts)


def env_vars() -> list[tuple[str, str]]:
    from kquotactl.connection import cluster as c
    from kquotactl.connection import contexts as x

    return [
        (c.ENV_ZOOKEEPER, "ZooKeeper connect string, when no cluster option is given."),
        (c.ENV_BOOTSTRAP, "Bootstrap servers, when no cluster option is given."),
        (c.ENV_COMMAND_CONFIG, "Admin client properties file, when --command-config is not given."),
        (c.ENV_ZK_AUTH, "ZooKeeper authentication (SCHEME:USER:PASSWORD), kept off the command line."),
        (c.ENV_CONTEXT, "The context to use, when --context is not given."),
        (x.ENV_CONFIG, "The config file, when --config is not given."),
        ("XDG_CONFIG_HOME", "Base directory of the config file (default ~/.config)."),
        ("KAFKA_OPTS", "Its -Djava.security.auth.login.config=FILE is the JAAS file for ZooKeeper SASL."),
        ("NO_COLOR", "When set and not empty, output has no colour (colour is only ever used on a terminal)."),
        ("KQUOTACTL_COMPLETE_TIMEOUT", "Seconds a completion may wait for the live cluster (default 1)."),
    ]


def exit_codes() -> list[tuple[str, str]]:
    from kquotactl.core.errors import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, EXIT_PENDING, EXIT_TERMINATED

    return [
        (
            str(EXIT_OK),
            "Success. Every status is the command's result, in a pipeline too: a reader that stops early "
            "(| head) only cuts the output short.",
        ),
        (
            str(EXIT_ERROR),
            "Error: bad input, connection, authentication or conflict (a partial apply says what was applied).",
        ),
        (str(EXIT_PENDING), "Changes pending: plan, apply --dry-run, or an apply whose confirmation was declined."),
        (
            str(EXIT_INTERRUPTED),
            "Interrupted (Ctrl-C); an interrupted apply says what was applied, not applied and unknown, summary first.",
        ),
        (str(EXIT_TERMINATED), "Terminated (SIGTERM, as CI runners stop a job): as Ctrl-C."),
    ]


FILES = [
    ("~/.config/kquotactl/config.yaml", "Named contexts (see kquotactl-config(1)); $XDG_CONFIG_HOME is honoured."),
    (
        "~/.local/share/bash-completion/completions/kquotactl",
        "Shell completion, where kquotactl completion bash > FILE installs it (zsh, fish: kquotactl-completion(1)).",
    ),
]


def man_page(page: Page, all_pages: list[Page]) -> str:
    cmd, ctx = page.command, page.ctx
    paragraphs, examples = split_help(cmd.help)
    short = cmd.get_short_help_str(limit=200).rstrip(".")
    out = [
        f'.TH "{page.man_name.upper()}" "{MAN_SECTION}" "" "{PROG} {__version__}" "{PROG} manual"',
        ".SH NAME",
        f"{roff_escape(page.man_name)} \\- {roff_escape(short)}",
        ".SH SYNOPSIS",
        f".B {roff_escape(page.name)}",
        roff_escape(" ".join(cmd.collect_usage_pieces(ctx))),
        ".SH DESCRIPTION",
    ]
    for verbatim, text in paragraphs:
        if verbatim:
            out += [".PP", ".nf", *[_line(ln) for ln in text.split("\n")], ".fi"]
        else:
            out += [".PP", _line(text)]
    records = [p.get_help_record(ctx) for p in cmd.get_params(ctx) if isinstance(p, click.Option)]
    options = [r for r in records if r]
    if options:
        out.append(".SH OPTIONS")
        for term, help_ in options:
            out += [".TP", _opt_term(term), _line(help_ or "")]
        if page.path:
            out += [".PP", f"Global options (cluster, output, context) are described in \\fB{PROG}\\fR(1)."]
    children = [p for p in all_pages if len(p.path) == len(page.path) + 1 and p.path[:-1] == page.path]
    if children:
        out.append(".SH COMMANDS")
        for child in children:
            out += [
                ".TP",
                f"\\fB{roff_escape(child.path[-1])}\\fR",
                _line(child.command.get_short_help_str(limit=200))
                + f" See \\fB\\%{roff_escape(child.man_name)}\\fR({MAN_SECTION}).",
            ]
    if examples:
        out += [".SH EXAMPLES", ".nf", ".RS 4"]
        out += [_line(e) for e in examples]
        out += [".RE", ".fi"]
    out.append(".SH EXIT STATUS")
    for code, text in exit_codes():
        out += [".TP", f"\\fB{code}\\fR", _line(text)]
    out.append(".SH ENVIRONMENT")
    for name, text in env_vars():
        out += [".TP", f"\\fB{roff_escape(name)}\\fR", _line(text)]
    out.append(".SH FILES")
    for name, text in FILES:
        out += [".TP", f"\\fI{roff_escape(name)}\\fR", _line(text)]
    related = sorted({p.man_name for p in all_pages} - {page.man_name})
    out += [".SH SEE ALSO", ".ad l", ",\n".join(f"\\fB\\%{roff_escape(n)}\\fR({MAN_SECTION})" for n in related)]
    return "\n".join(out) + "\n"


# -- markdown ------------------------------------------------------------------------------------


def help_text(page: Page) -> str:
    return page.command.get_help(page.ctx).rstrip() + "\n"


def cli_markdown(all_pages: list[Page]) -> str:
    out = [
        "# Command-line reference",
        "",
        "<!-- Generated from the click definitions by `make docs` (python -m kquotactl.cli.docsgen); do not edit. "
        "`make docs-check` and the tests fail when it drifts. -->",
        "",
        "Every command prints the same text with `--help`; man pages with the same content are in `man/`.",
        "",
    ]
    for page in all_pages:
        anchor = page.man_name
        indent = "  " * max(0, len(page.path) - 1)
        out.append(f"{indent}- [`{page.name}`](#{anchor}) — {page.command.get_short_help_str(limit=90)}")
    out.append("")
    for page in all_pages:
        out += [f"## {page.name}", "", "```text", help_text(page).rstrip("\n"), "```", ""]
    return "\n".join(out)


def summary(command: click.Command) -> str:
    """What a command's short help is made from: the first paragraph of its help, its blanks folded (click's
    shortening reads nothing else, so a stand-in with this help lists exactly as the command would)."""
    return " ".join((command.help or "").partition("\n\n")[0].split())


def summaries_module(all_pages: list[Page]) -> str:
    """``kquotactl.cli.commands.summaries``: the lazily loaded commands' summaries, for ``--help`` (see
    :class:`kquotactl.cli.groups.LazyGroup`)."""
    from kquotactl.cli.commands import LOADERS

    lines = [
        '"""Generated by ``make docs`` (:mod:`kquotactl.cli.docsgen`) from each command\'s docstring: what',
        "``kquotactl --help`` lists a command with before it is loaded. Do not edit; ``make docs-check`` fails when",
        'it is out of date."""',
        "",
        "# ruff: noqa: E501",
        "",
        "SUMMARIES: dict[str, str] = {",
    ]
    for page in all_pages:
        if len(page.path) == 1 and page.path[0] in LOADERS:
            lines.append(f"    {json.dumps(page.path[0])}: {json.dumps(summary(page.command), ensure_ascii=False)},")
    return "\n".join([*lines, "}", ""])


# -- the files -------------------------------------------------------------------------------------


def render_all() -> dict[str, str]:
    """Relative path -> content, for everything generated."""
    from importlib import resources

    from kquotactl.cli.completion import SHELLS, source
    from kquotactl.manifests.schema import SCHEMA_FILE, with_registry_keys
    from kquotactl.observe.dashboard import dashboard_json

    all_pages = pages()
    files: dict[str, str] = {f"man/{p.man_name}.{MAN_SECTION}": man_page(p, all_pages) for p in all_pages}
    files["docs/cli.md"] = cli_markdown(all_pages)
    files["src/kquotactl/cli/commands/summaries.py"] = summaries_module(all_pages)
    for shell in SHELLS:
        files[f"completions/{PROG}.{shell}"] = source(shell)
    files[f"src/kquotactl/{SCHEMA_FILE}"] = with_registry_keys(
        resources.files("kquotactl").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    )  # its key lists, from the key registry; the rest as written
    files[DASHBOARD_FILE] = dashboard_json()  # the Grafana dashboard (grafana-foundation-sdk, a dev dependency)
    return files


def write(root: Path) -> list[str]:
    """Write every generated file under ``root``; remove man pages of commands that no longer exist."""
    files = render_all()
    changed = []
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_text(encoding="utf-8") != content:
            path.write_text(content, encoding="utf-8")
            changed.append(rel)
    for stale in sorted((root / "man").glob(f"*.{MAN_SECTION}")):
        if f"man/{stale.name}" not in files:
            stale.unlink()
            changed.append(f"man/{stale.name} (removed)")
    return changed


def check(root: Path) -> list[str]:
    """What differs between ``root`` and a fresh generation (empty: up to date)."""
    files = render_all()
    drift = [rel for rel, content in files.items() if _read(root / rel) != content]
    drift += [f"man/{p.name} (stale)" for p in sorted((root / "man").glob("*.1")) if f"man/{p.name}" not in files]
    return drift


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m kquotactl.cli.docsgen", description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="report drift, write nothing; exit 1 if any")
    ap.add_argument("--out", default=".", help="project root to write into (default: .)")
    args = ap.parse_args(argv)
    root = Path(args.out)
    if args.check:
        drift = check(root)
        for rel in drift:
            print(f"docs-check: out of date: {rel}", file=sys.stderr)
        if drift:
            print("docs-check: run `make docs` and commit the result", file=sys.stderr)
            return 1
        print(f"docs-check: {len(render_all())} generated files up to date")
        return 0
    changed = write(root)
    for rel in changed:
        print(f"docs: wrote {rel}")
    print(f"docs: {len(changed)} file{'' if len(changed) == 1 else 's'} changed")
    return 0


def iter_options(all_pages: list[Page]) -> Iterator[tuple[Page, str]]:
    """Every (command, option string) pair: what the docs test checks is documented."""
    for page in all_pages:
        for param in page.command.get_params(page.ctx):
            if isinstance(param, click.Option) and not param.hidden:
                for opt in (*param.opts, *param.secondary_opts):
                    yield page, opt


if __name__ == "__main__":
    sys.exit(main())
