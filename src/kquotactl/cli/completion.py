"""Shell completion: click's own machinery, plus what only kquotactl knows.

- The scripts send the line exactly as typed; :func:`lex` removes the quoting the way the shell will, so what
  is completed is the real value, whatever was typed (a prefix, an opening quote, backslashes). bash inserts
  replies verbatim, so :func:`bash_reply` answers the exact quoted text for readline's word (whatever
  COMP_WORDBREAKS cut); zsh and fish get plain values and quote them themselves. The line is normalised like a
  real invocation (group options anywhere, the flat ``--alter`` form), and a ``key=`` gets no trailing space
  (nor closing quote) so the value can be typed straight after it.
- ``shell_complete=`` callbacks for options: ``--add-config`` offers the keys valid for the entity type
  already on the line, ``--delete-config`` the keys set on that entity, ``--user``/``--client``/``--ip``/
  ``--entity-name`` the names in the live cluster (short timeout, silent on failure) or in the manifest
  given with ``-f``.

Pure helpers (:func:`lex`, :func:`bash_reply`, :func:`key_candidates`, :func:`manifest_names`...) do no I/O; only
:func:`live_names` / :func:`live_keys` talk to a cluster. Nothing heavy is imported at module level.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click
from click.shell_completion import (
    BashComplete,
    CompletionItem,
    FishComplete,
    ShellComplete,
    ZshComplete,
    _resolve_context,
    _resolve_incomplete,
    add_completion_class,
)

from kquotactl.cli.groups import LazyGroup

if TYPE_CHECKING:  # loaded lazily at run time: nothing heavy at import
    from kquotactl.backends.base import QuotaBackend

T = TypeVar("T")


PROG = "kquotactl"
COMPLETE_VAR = "_KQUOTACTL_COMPLETE"
SHELLS = ("bash", "zsh", "fish")
LIVE_TIMEOUT = 1.0  # seconds a Tab may wait for a live cluster (KQUOTACTL_COMPLETE_TIMEOUT overrides)
MAX_NAMES = 500

# -- pure helpers ---------------------------------------------------------------------------------


def entity_kind(params: dict[str, Any]) -> str | None:
    """``"ip"``, ``"client"`` (users/clients/pairs) or None, from the entity options parsed so far."""
    types = set(params.get("entity_types") or ())
    if params.get("ip") is not None or params.get("ip_defaults") or "ips" in types:
        return "ip"
    if (
        params.get("user") is not None
        or params.get("client") is not None
        or params.get("client_id") is not None
        or params.get("user_defaults")
        or params.get("client_defaults")
        or types & {"users", "clients"}
    ):
        return "client"
    return None


def keys_for(kind: str | None) -> tuple[str, ...]:
    from kquotactl.core.keys import CLIENT_KEYS, IP_KEYS

    if kind == "ip":
        return IP_KEYS
    if kind == "client":
        return CLIENT_KEYS
    return CLIENT_KEYS + IP_KEYS


def split_key_list(incomplete: str) -> tuple[str, str]:
    """``"a=1,b=[x,y],con"`` -> (``"a=1,b=[x,y],"``, ``"con"``): the finished part and the key being typed.

    Commas inside ``[...]`` belong to a value (kafka-configs' grammar), so they do not start a new key.
    """
    depth = 0
    cut = 0
    for i, ch in enumerate(incomplete):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            cut = i + 1
    return incomplete[:cut], incomplete[cut:]


def key_candidates(incomplete: str, keys: Iterable[str], suffix: str = "=") -> list[str]:
    """Complete the last key of a comma-separated list; keys already in the list are not offered again."""
    head, tail = split_key_list(incomplete)
    if "=" in tail:  # typing a value: nothing sensible to offer
        return []
    used = {part.split("=", 1)[0].strip() for part in head.split(",") if part.strip()}
    return [head + k + suffix for k in keys if k.startswith(tail) and k not in used]


def _walk_names(node: Any, out: dict[str, set[str]]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            k = str(key).lower().replace("_", "-")
            field = {"user": "user", "users": "user", "client-id": "client", "client": "client", "ip": "ip"}.get(k)
            if field and isinstance(value, str):
                out[field].add(value)
            elif field and isinstance(value, dict):  # users: {alice: {...}, bob: {...}}
                out[field].update(str(n) for n in value if isinstance(n, str))
                _walk_names(value, out)
            else:
                _walk_names(value, out)
    elif isinstance(node, list):
        for item in node:
            _walk_names(item, out)


def manifest_names(data: Any) -> dict[str, set[str]]:
    """Entity names a manifest mentions, whatever its exact layout: values of ``user``/``client-id``/``ip``
    keys anywhere in the document (and the keys under a ``users:``/``clients:``/``ips:`` mapping)."""
    out: dict[str, set[str]] = {"user": set(), "client": set(), "ip": set()}
    _walk_names(data, out)
    for names in out.values():
        names.discard("<default>")
        names.discard("")
    return out


# -- what the shell typed, and what it must insert -----------------------------------------------

_FISH_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "e": "\x1b", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


def lex(text: str, dialect: str = "posix") -> tuple[list[str], int, str | None]:
    """The words of ``text`` with quoting removed, as the shell will pass them, tolerating an unfinished end.

    Returns the words (the last one is the word under the cursor, ``""`` after a blank), where that last word
    starts in ``text``, and the quote still open at the end (``'``, ``"`` or None). ``dialect`` is ``"posix"``
    (bash, zsh) or ``"fish"`` (``\\'`` inside single quotes, no backquote, ``\\n``-style escapes).
    """
    words: list[str] = []
    cur: list[str] = []
    quote: str | None = None
    in_word = False
    start = len(text)
    dq_escapes = '$"\\\n' if dialect == "fish" else '$"\\`\n'
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if quote == "'":
            if ch == "'":
                quote = None
            elif dialect == "fish" and ch == "\\" and i + 1 < n and text[i + 1] in "'\\":
                i += 1
                cur.append(text[i])
            else:
                cur.append(ch)
        elif quote == '"':
            if ch == '"':
                quote = None
            elif ch == "\\" and i + 1 < n and text[i + 1] in dq_escapes:
                i += 1
                if text[i] != "\n":
                    cur.append(text[i])
            else:
                cur.append(ch)
        elif ch in " \t\n":
            if in_word:
                words.append("".join(cur))
                cur, in_word = [], False
        else:
            if not in_word:
                in_word, start = True, i
            if ch in "'\"":
                quote = ch
            elif ch == "\\":
                if i + 1 < n:
                    i += 1
                    nxt = text[i]
                    if nxt != "\n":
                        cur.append(_FISH_ESCAPES.get(nxt, nxt) if dialect == "fish" else nxt)
            else:
                cur.append(ch)
        i += 1
    if not in_word:
        start = n
    words.append("".join(cur))
    return words, start, quote


_BARE = frozenset("_-.,/=:@%+")


def _bare(ch: str) -> bool:
    """Characters bash takes literally outside quotes, anywhere in a word (``~`` ``#`` ``!`` ``{`` are not)."""
    return ch.isalnum() or ch in _BARE or (ord(ch) > 127 and ch.isprintable() and not ch.isspace())


def bash_quote_rest(rest: str, quote: str | None, close: bool = True) -> str:
    """``rest`` written so that, typed after text that left ``quote`` open, the word gains exactly ``rest``;
    with ``close`` the quote is closed again (a finished value; a ``key=`` waits for its value inside it)."""
    if quote == "'":
        return rest.replace("'", "'\\''") + ("'" if close else "")
    if quote == '"':
        body = "".join("\\" + c if c in '"$`\\' else "\"'!'\"" if c == "!" else c for c in rest)
        return body + ('"' if close else "")
    return "".join(c if _bare(c) else "$'\\n'" if c == "\n" else "\\" + c for c in rest)


def bash_reply(value: str, line: str, word: str, close: bool = True) -> str | None:
    """What bash must put in place of ``word`` (its readline word, ``$2``: after the last COMP_WORDBREAKS
    character, and after an opening quote) so that the word under the cursor of ``line`` becomes exactly
    ``value`` once the shell removes the quoting. None if ``value`` cannot extend what is typed there."""
    _, start, _ = lex(line)
    raw = line[start:]
    kept = raw[: len(raw) - len(word)] if raw.endswith(word) else raw
    (typed,), _, quote = lex(kept) if kept else ([""], 0, None)
    if not value.startswith(typed):
        return None
    return bash_quote_rest(value[len(typed) :], quote, close=close)


# -- the line, as a real invocation would see it -------------------------------------------------


def normalize_completion_args(cli: click.Group, args: list[str]) -> list[str]:
    """Apply the same argv normalisation as ``main`` (group options anywhere, flat form), best effort."""
    from kquotactl.cli.argv import normalize_argv, option_table

    glob, _ = option_table(cli)
    pending: list[str] = []
    if args and glob.get(args[-1]):  # a group option waiting for its value: complete it at the group
        pending = [args[-1]]
        args = args[:-1]
    try:
        out, _flat = normalize_argv(args, cli)
    except Exception:
        return args + pending
    if not pending:
        return out
    if _command_has_option(cli, out, pending[0]):  # ``config get-contexts -o``: the command's own values
        return out + pending
    head: list[str] = []  # the group options normalize_argv moved to the front
    i = 0
    while i < len(out) and out[i].split("=", 1)[0] in glob:
        takes = glob[out[i].split("=", 1)[0]] and "=" not in out[i]
        head += out[i : i + 2] if takes else out[i : i + 1]
        i += 2 if takes else 1
    return head + pending


def _command_has_option(cli: click.Group, args: list[str], name: str) -> bool:
    """Whether the command ``args`` name (not the group) has an option spelt ``name`` of its own."""
    ctx = _resolve_context(cli, {}, PROG, list(args))
    return ctx.command is not cli and any(
        name in (*p.opts, *p.secondary_opts) for p in ctx.command.params if isinstance(p, click.Option)
    )


def split_group_option_value(cli: click.Group, args: list[str], incomplete: str) -> tuple[list[str], str]:
    """``--context=pr`` as ``--context`` and ``pr``, for a group option: then, like ``--context pr``, it is
    completed at the group wherever it stands on the line (after the command too)."""
    from kquotactl.cli.argv import option_table

    opt, eq, value = incomplete.partition("=")
    if eq and opt.startswith("--") and option_table(cli)[0].get(opt):
        return [*args, opt], value
    return args, incomplete


class _Normalising(ShellComplete):
    def complete(self) -> str:
        args, incomplete = self.get_completion_args()
        completions = self.get_completions(args, incomplete)
        # ``--add-config=pro``: click completes the value alone, but the shell replaces the whole word
        opt, eq, _ = incomplete.partition("=")
        if eq and opt.startswith("-"):
            for item in completions:
                if not str(item.value).startswith("-"):
                    item.value = f"{opt}={item.value}"
        lines = (self.format_completion(item) for item in completions)
        return "\n".join(line for line in lines if line is not None)

    def get_completions(self, args: list[str], incomplete: str) -> list[CompletionItem[str]]:
        if isinstance(self.cli, click.Group):
            args, incomplete = split_group_option_value(self.cli, args, incomplete)
            args = normalize_completion_args(self.cli, args)
        try:
            ctx = _resolve_context(self.cli, self.ctx_args, self.prog_name, args)
            obj, incomplete = _resolve_incomplete(ctx, args, incomplete)
            items: list[CompletionItem[str]] = obj.shell_complete(ctx, incomplete)
            if obj is ctx.command and ctx.parent is not None:
                items = with_group_options(ctx, incomplete, items)
            return items
        except Exception:  # a half-typed line must never print a traceback into the prompt
            return []


def with_group_options(
    ctx: click.Context, incomplete: str, items: list[CompletionItem[str]]
) -> list[CompletionItem[str]]:
    """A command's option names, then the group's that it accepts too (the line is normalised like a real run,
    which moves them before the command), then ``--help``. The group's eager options (``--help``,
    ``--version``) end a run before the command does anything, so they are not offered after it; an option
    already given is not offered again (click's own rule, read from the group's context)."""
    root = ctx.find_root()
    eager = {name for p in root.command.params if p.is_eager for name in (*p.opts, *p.secondary_opts)}
    helps = set(ctx.help_option_names)
    seen = {str(item.value) for item in items}
    group = [
        item
        for item in click.Command.shell_complete(root.command, root, incomplete)
        if str(item.value).startswith("-") and item.value not in eager and item.value not in seen
    ]
    own = [item for item in items if item.value not in helps]
    return own + group + [item for item in items if item.value in helps]


# The scripts hand kquotactl the line exactly as typed (quotes, backslashes and all) and insert what it
# answers untouched: all the quoting is done by :func:`lex` / :func:`bash_reply` (bash, which quotes
# nothing itself) or by the shell's own quoting of plain values (zsh's compadd, fish).

_BASH_SCRIPT = """\
%(complete_func)s() {
    local line type value
    local -a lines
    COMPREPLY=()
    mapfile -t lines < <(env %(complete_var)s=bash_complete KQUOTACTL_COMP_LINE="${COMP_LINE:0:COMP_POINT}" \\
        KQUOTACTL_COMP_WORD="$2" "$1" 2>/dev/null)
    for line in "${lines[@]}"; do
        type=${line%%%%,*}
        value=${line#*,}
        case $type in
            dir) COMPREPLY=(); compopt -o dirnames; return 0 ;;
            file) COMPREPLY=(); compopt -o default; return 0 ;;
            nospace) COMPREPLY+=("$value"); compopt -o nospace ;;
            plain) COMPREPLY+=("$value") ;;
        esac
    done
    return 0
}

complete -o nosort -F %(complete_func)s %(prog_name)s
"""

_ZSH_WORDS = '"${(pj:\\n:)words[1,CURRENT]}"'


class KquotactlBash(_Normalising, BashComplete):
    """bash: kquotactl reads the raw line and readline's word (``$2``) and answers the exact text to put in
    place of that word, quoted (bash's completion inserts replies verbatim); ``nospace`` after a ``key=``."""

    source_template = _BASH_SCRIPT
    _line = ""
    _word = ""

    def get_completion_args(self) -> tuple[list[str], str]:
        self._line = os.environ.get("KQUOTACTL_COMP_LINE", "")
        self._word = os.environ.get("KQUOTACTL_COMP_WORD", "")
        words, _, _ = lex(self._line)
        return words[1:-1], words[-1]

    def format_completion(self, item: CompletionItem[Any]) -> str | None:  # type: ignore[override]
        value = str(item.value)
        if item.type != "plain":
            return f"{item.type},{value}"
        open_end = bool(item._info.get("open_end"))
        reply = bash_reply(value, self._line, self._word, close=not open_end)
        if reply is None:
            return None
        return f"{'nospace' if open_end else 'plain'},{reply}"


class KquotactlZsh(_Normalising, ZshComplete):
    """zsh: kquotactl reads the raw words and answers plain values, which ``compadd`` quotes for the context
    (unquoted, or inside the quote the user opened); no space after an offered ``key=``."""

    source_template = (
        ZshComplete.source_template.replace(
            '        elif [[ "$type" == "dir" ]]; then\n',
            '        elif [[ "$type" == "nospace" ]]; then\n'
            '            completions_nospace+=("$key")\n'
            '        elif [[ "$type" == "dir" ]]; then\n',
        )
        .replace(
            "    local -a completions\n",
            "    local -a completions\n    local -a completions_nospace\n",
        )
        .replace(
            '    if [ -n "$completions" ]; then\n',
            '    if [ -n "$completions_nospace" ]; then\n'
            "        compadd -U -S '' -V unsorted -a completions_nospace\n"
            "    fi\n\n"
            '    if [ -n "$completions" ]; then\n',
        )
        .replace('COMP_WORDS="${words[*]}" COMP_CWORD=$((CURRENT-1))', f"KQUOTACTL_COMP_WORDS={_ZSH_WORDS}")
        .replace("    for type key descr in ${response}; do\n", '    for type key descr in "${response[@]}"; do\n')
    )

    def format_completion(self, item: CompletionItem[Any]) -> str:
        if item.type == "plain" and item._info.get("open_end"):
            return f"nospace\n{item.value}\n_"
        return super().format_completion(item)

    def get_completion_args(self) -> tuple[list[str], str]:
        raw = os.environ.get("KQUOTACTL_COMP_WORDS", "").split("\n")
        words = ["".join(lex(w)[0]) for w in raw]
        return words[1:-1], words[-1] if len(words) > 1 else ""


class KquotactlFish(_Normalising, FishComplete):
    """fish: kquotactl reads fish's own tokens and the raw current token, and answers plain values, which fish
    quotes itself (fish adds no space after a completion ending in ``=``)."""

    source_template = (
        FishComplete.source_template.replace(
            "COMP_WORDS=(commandline -cp) COMP_CWORD=(commandline -t)",
            "KQUOTACTL_COMP_WORDS=(commandline -opc | string collect) "
            "KQUOTACTL_COMP_CUR=(commandline -ct | string collect)",
        )
        .replace('(string split "," $completion)', '(string split -m1 "," -- $completion)')
        .replace("echo $metadata[2];", "printf '%%s\\n' $metadata[2];")
    )

    def get_completion_args(self) -> tuple[list[str], str]:
        before = os.environ.get("KQUOTACTL_COMP_WORDS", "").split("\n")
        return before[1:], lex(os.environ.get("KQUOTACTL_COMP_CUR", ""), "fish")[0][-1]


for _cls in (KquotactlBash, KquotactlZsh, KquotactlFish):
    add_completion_class(_cls)


def source(shell: str, prog_name: str = PROG) -> str:
    """The completion script for ``shell``, exactly what ``kquotactl completion SHELL`` prints."""
    classes = {"bash": KquotactlBash, "zsh": KquotactlZsh, "fish": KquotactlFish}
    if shell not in classes:
        from kquotactl.core.errors import UsageError

        raise UsageError(f"unknown shell {shell!r}: choose one of {', '.join(SHELLS)}")
    # The script does not depend on the command tree (each Tab asks kquotactl itself): any command will do here.
    comp = classes[shell](click.Command(prog_name), {}, prog_name, COMPLETE_VAR)
    # Not BashComplete.source(): its bash-version probe spawns a shell and prints to stderr.
    return ShellComplete.source(comp)


# -- live lookups (short timeout, silent on failure) ----------------------------------------------


def _connection(ctx: click.Context) -> Any:
    """The connection the command line names so far: flags > environment > context, with a short timeout."""
    from dataclasses import replace

    from kquotactl.connection.cluster import ConnectionOptions
    from kquotactl.connection.contexts import resolve

    p = ctx.find_root().params
    opts = ConnectionOptions.from_params(p)
    opts = resolve(opts, p.get("context_name"), p.get("config_path"))
    try:
        limit = float(os.environ.get("KQUOTACTL_COMPLETE_TIMEOUT") or LIVE_TIMEOUT)
    except ValueError:
        limit = LIVE_TIMEOUT
    short = max(0.1, min(limit, opts.connect_timeout, opts.timeout))
    return replace(opts, connect_timeout=short, timeout=short)


def _with_backend(ctx: click.Context, fn: Callable[[QuotaBackend], T]) -> T:
    import logging

    from kquotactl.backends.factory import open_backend

    logger = logging.getLogger("kquotactl")
    level = logger.level
    logger.setLevel(logging.CRITICAL)  # nothing may reach the terminal in the middle of a Tab
    try:
        backend = open_backend(_connection(ctx))
        try:
            return fn(backend)
        finally:
            backend.close()
    finally:
        logger.setLevel(level)


def live_names(ctx: click.Context, etype: str) -> list[str]:
    """Names of ``etype`` (``user``/``client``/``ip``) that have quotas in the live cluster."""
    from kquotactl.core.entities import DEFAULT, EntityType
    from kquotactl.core.filters import EntityFilter, FilterComponent, MatchType

    t = {"user": EntityType.USER, "client": EntityType.CLIENT_ID, "ip": EntityType.IP}[etype]
    flt = EntityFilter((FilterComponent(t, MatchType.ANY),), strict=False)

    def names(backend: QuotaBackend) -> list[str]:
        cheap = backend.entity_names(t)  # ZooKeeper: child listings only, a Tab on 1,000 users stays fast
        if cheap is not None:
            return sorted(cheap)
        found = {r.entity.components().get(t) for r in backend.describe(flt)}
        return sorted(str(n) for n in found if n is not None and n is not DEFAULT)

    return _with_backend(ctx, names)


def live_keys(ctx: click.Context, params: dict[str, Any]) -> list[str]:
    """Keys currently set on the entity named on the line."""
    from kquotactl.cli.entityargs import EntityArgs, entity_for_alter
    from kquotactl.core.filters import EntityFilter

    entity = entity_for_alter(EntityArgs.pop_from({k: params.get(k) for k in _ENTITY_PARAMS}))

    def keys(backend: QuotaBackend) -> list[str]:
        return [k for r in backend.describe(EntityFilter.exact(entity)) for k in r.config]

    return _with_backend(ctx, keys)


_ENTITY_PARAMS = (
    "entity_types",
    "entity_names",
    "user",
    "client",
    "ip",
    "user_defaults",
    "client_defaults",
    "ip_defaults",
    "literal_names",
)


def _manifest_file(ctx: click.Context) -> str | None:
    """The file given with ``-f`` on this command (manifests), if any."""
    for param in ctx.command.params:
        if isinstance(param, click.Option) and "-f" in param.opts:
            value = ctx.params.get(param.name or "")
            if isinstance(value, (list, tuple)):
                value = value[0] if value else None
            if isinstance(value, str) and os.path.exists(value):
                return value
    return None


def names_from_manifest(path: str) -> dict[str, set[str]]:
    """Names in a manifest file or directory: through the manifest loader, or (a manifest that does not load
    yet, say half-edited) by walking the YAML for ``user``/``client-id``/``ip`` keys."""
    from kquotactl.core.entities import DEFAULT, EntityType

    try:
        from kquotactl.manifests.loader import load_manifests

        out: dict[str, set[str]] = {"user": set(), "client": set(), "ip": set()}
        fields = {EntityType.USER: "user", EntityType.CLIENT_ID: "client", EntityType.IP: "ip"}
        for entry in load_manifests([path]).entries:
            for etype, name in entry.entity.components().items():
                if name is not DEFAULT:
                    out[fields[etype]].add(str(name))
        return out
    except Exception:
        if not os.path.isfile(path):
            return {"user": set(), "client": set(), "ip": set()}
    import yaml

    with open(path, encoding="utf-8") as f:
        return manifest_names(yaml.safe_load(f))


# -- shell_complete= callbacks --------------------------------------------------------------------


def _safe(fn: Any) -> Any:
    """Completion callbacks never fail: any error means 'nothing to offer'."""

    def wrapper(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem[str]]:
        try:
            return [c if isinstance(c, CompletionItem) else CompletionItem(c) for c in fn(ctx, param, incomplete)]
        except Exception:
            return []

    wrapper.__name__ = fn.__name__
    wrapper.__doc__ = fn.__doc__
    return wrapper


def _open_ended(keys: list[str]) -> list[CompletionItem[str]]:
    """Items the user goes on typing after: a ``key=`` (its value next) or a key in a list; no space, no
    closing quote after them. Names are never open-ended, even one that ends with ``=``."""
    return [CompletionItem(k, open_end=k.endswith("=")) for k in keys]


@_safe
def complete_add_config(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem[str]]:
    """Keys valid for the entity type already on the line, each followed by ``=``."""
    return _open_ended(key_candidates(incomplete, keys_for(entity_kind(ctx.params))))


@_safe
def complete_delete_config(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem[str]]:
    """Keys set on the entity on the line (live); nothing when the cluster cannot be asked."""
    try:
        keys: Sequence[str] = live_keys(ctx, ctx.params)
    except Exception:
        return []
    return _open_ended(key_candidates(incomplete, keys, suffix=""))


def _names(ctx: click.Context, etype: str, incomplete: str) -> list[CompletionItem[str]]:
    """Names of ``etype`` starting with ``incomplete``. The default entity is never offered as a name (its
    spelling is ``--user-defaults``, ``--client-defaults``, ``--ip-defaults`` or ``--entity-default``); a user
    or client-id really named ``<default>`` is offered, said to be that real name, only where the command line
    makes it one (with ``--literal-names`` when the command has that option)."""
    from kquotactl.core.entities import DEFAULT_MARKER

    manifest = _manifest_file(ctx)
    try:
        names = sorted(names_from_manifest(manifest)[etype]) if manifest else live_names(ctx, etype)
    except Exception:
        return []
    literal_ok = ctx.params.get("literal_names") or not any(p.name == "literal_names" for p in ctx.command.params)
    label = {"user": "user", "client": "client-id", "ip": "ip"}[etype]
    out: list[CompletionItem[str]] = []
    for n in names:
        if not n.startswith(incomplete):
            continue
        if n == DEFAULT_MARKER:
            if etype == "ip" or not literal_ok:
                continue
            out.append(CompletionItem(n, help=f"the {label} named <default>, not the default {label}"))
        else:
            out.append(CompletionItem(n))
    return out[:MAX_NAMES]


@_safe
def complete_user(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem[str]]:
    """User principals from the manifest given with ``-f``, or the live cluster."""
    return _names(ctx, "user", incomplete)


@_safe
def complete_client(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem[str]]:
    """Client-ids from the manifest given with ``-f``, or the live cluster."""
    return _names(ctx, "client", incomplete)


@_safe
def complete_ip(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem[str]]:
    """Ips from the manifest given with ``-f``, or the live cluster."""
    return _names(ctx, "ip", incomplete)


@_safe
def complete_entity_name(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem[str]]:
    """Names for the ``--entity-type`` at the same position."""
    types = list(ctx.params.get("entity_types") or ())
    position = len(ctx.params.get("entity_names") or ())
    if position >= len(types):
        return []
    etype = {"users": "user", "clients": "client", "ips": "ip"}[types[position]]
    return _names(ctx, etype, incomplete)


@_safe
def complete_context(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem[str]]:
    """Context names from the config file (``--config`` if already given)."""
    from kquotactl.connection.contexts import load_config

    root = ctx.find_root().params
    config = load_config(root.get("config_path"))
    items = sorted(config.contexts.items())
    return [CompletionItem(name, help=c.cluster) for name, c in items if name.startswith(incomplete)]


# -- commands that did not attach callbacks themselves ------------------------------------------------

BY_OPTION = {
    "--user": complete_user,
    "--client": complete_client,
    "--client-id": complete_client,
    "--ip": complete_ip,
    "--entity-name": complete_entity_name,
    "--add-config": complete_add_config,
    "--delete-config": complete_delete_config,
    "--context": complete_context,
}


def install(cli: click.Command) -> None:
    """Give every option named like ours (``--user``, ``--add-config``...) in every command the same
    completion, unless it brought its own: commands added later complete names and keys for free.
    Only called when completing, so it costs nothing otherwise."""
    if isinstance(cli, LazyGroup):
        cli.load_all()
    stack = [cli]
    while stack:
        cmd = stack.pop()
        for param in cmd.params:
            if not isinstance(param, click.Option) or getattr(param, "_custom_shell_complete", None) is not None:
                continue
            if param.is_flag or isinstance(param.type, click.Choice):
                continue
            for opt in param.opts:
                if opt in BY_OPTION:
                    param._custom_shell_complete = BY_OPTION[opt]
                    break
        if isinstance(cmd, click.Group):
            stack.extend(cmd.commands.values())
