"""Named cluster contexts (like kubectl's): ``~/.config/kquotactl/config.yaml``.

A context names one cluster and how to reach it (ZooKeeper or bootstrap servers, command-config, ZooKeeper
TLS/auth). Precedence, field by field: flags > environment > context > an error that says what to pass.
A context chosen explicitly (``--context`` / ``KQUOTACTL_CONTEXT``) fills whatever flags and environment
left empty; the file's ``current-context`` only applies when no cluster was given at all, so credentials
of the usual cluster never leak onto a ``--zookeeper`` typed by hand.

Parsing, resolution and edits are pure (:func:`parse_config`, :func:`apply_context`, :func:`set_context_doc`,
:func:`delete_context_doc`); reading and rewriting the file are the only I/O, kept in :func:`load_config`,
:func:`read_doc`, :func:`write_current_context` and :func:`write_atomically`. Reading never fails on a bad
context: each problem is kept with its context (or the file) and raised, as one line naming the file, the
context and the problem, only when that context is used.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kquotactl.connection.cluster import ENV_CONTEXT, ConnectionOptions, typed_cluster
from kquotactl.core.errors import UsageError
from kquotactl.core.wording import decoded, yaml_problem

ENV_CONFIG = "KQUOTACTL_CONFIG"

# context key -> ConnectionOptions field
FIELDS: dict[str, str] = {
    "zookeeper": "zookeeper",
    "bootstrap-server": "bootstrap_server",
    "bootstrap-controller": "bootstrap_controller",
    "command-config": "command_config",
    "zk-auth": "zk_auth",
    "zk-sasl-jaas": "zk_sasl_jaas",
    "zk-tls-config-file": "zk_tls_config_file",
    "zk-acl": "zk_acl",
    "connect-timeout": "connect_timeout",
    "timeout": "timeout",
}
CLUSTER_KEYS = ("zookeeper", "bootstrap-server", "bootstrap-controller")
PATH_KEYS = ("command-config", "zk-sasl-jaas", "zk-tls-config-file")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@:/-]{0,127}$")


@dataclass(frozen=True)
class Context:
    name: str
    settings: dict[str, Any]
    problem: str | None = None  # why this context cannot be used; the other contexts still work

    @property
    def cluster(self) -> str:
        """``zookeeper zk:2181/kafka`` or ``bootstrap-server b:9092``: what the context points at."""
        for k in CLUSTER_KEYS:
            if self.settings.get(k):
                return f"{k} {self.settings[k]}"
        return "-"

    @property
    def auth(self) -> str:
        """How it authenticates, with secrets redacted (never print a password)."""
        parts = [redact_auth(a) for a in self.settings.get("zk-auth", [])]
        for k in ("zk-sasl-jaas", "zk-tls-config-file", "command-config"):
            if self.settings.get(k):
                parts.append(f"{k} {self.settings[k]}")
        if self.settings.get("zk-acl") == "secure":
            parts.append("zk-acl secure")
        return ", ".join(parts) or "-"


@dataclass(frozen=True)
class ContextsFile:
    """The parsed file. Problems are kept, not raised: a broken context (or file) is reported, in one line
    naming the file, the context and the problem, only when something uses it (:meth:`get`,
    :meth:`current_context`), so one typo never breaks commands that do not need it."""

    path: Path
    contexts: dict[str, Context] = field(default_factory=dict)
    current: str | None = None
    exists: bool = False
    problem: str | None = None  # the whole file is unusable (bad YAML, unknown top-level key, ...): full line
    source: str = ""  # how the file was named: "--config", KQUOTACTL_CONFIG, or "" (the default path)

    def check(self) -> None:
        """Raise the file-level problem, if any."""
        if self.problem:
            raise UsageError(self.problem)

    def get(self, name: str) -> Context:
        self.check()
        if name in self.contexts:
            ctx = self.contexts[name]
            if ctx.problem:
                raise UsageError(context_problem(self.path, name, ctx.problem))
            return ctx
        close = difflib.get_close_matches(name, list(self.contexts), n=1)
        hint = f" — did you mean {close[0]}?" if close else ""
        known = ", ".join(sorted(self.contexts)) or "none defined"
        if not self.exists:  # say so: a path from KQUOTACTL_CONFIG with a typo reads as an empty file
            raise UsageError(
                f"context {name!r} not found: the config file {self.path} does not exist{self.from_where} "
                f"(`kquotactl config set-context {name} --bootstrap-server HOST:PORT` creates it)"
            )
        raise UsageError(
            f"context {name!r} not found in {self.path}{hint} (contexts: {known}; "
            "`kquotactl config get-contexts` lists them)"
        )

    @property
    def from_where(self) -> str:
        """`` (from KQUOTACTL_CONFIG)`` when the environment named the file."""
        return f" (from {ENV_CONFIG})" if self.source == ENV_CONFIG else ""

    def current_context(self) -> Context | None:
        """The file's ``current-context`` (None when it names none); a dangling name is an error."""
        self.check()
        if self.current is None:
            return None
        if self.current not in self.contexts:
            raise UsageError(
                f"{self.path}: current-context {self.current!r} is not one of the contexts "
                f"({', '.join(sorted(self.contexts)) or 'none defined'}); "
                "fix it with `kquotactl config use-context NAME`"
            )
        return self.get(self.current)


def context_problem(path: Path, name: str, problem: str) -> str:
    """The one line that reports a broken context."""
    return f"{path}: context {name!r}: {problem}"


def redact_auth(auth: str) -> str:
    """``digest:admin:secret`` -> ``digest:admin:***``; anything malformed (a password typed without its
    scheme or user) is redacted whole."""
    scheme, _, rest = auth.partition(":")
    user, sep, _password = rest.partition(":")
    if scheme not in ("digest", "sasl") or not sep:
        return "***"
    return f"{scheme}:{user}:***"


def default_path(env: Mapping[str, str] | None = None) -> Path:
    """``$KQUOTACTL_CONFIG``, else ``$XDG_CONFIG_HOME/kquotactl/config.yaml`` (XDG default ``~/.config``)."""
    env = os.environ if env is None else env
    if env.get(ENV_CONFIG):
        return Path(env[ENV_CONFIG]).expanduser()
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base).expanduser() / "kquotactl" / "config.yaml"


def parse_config(data: Any, path: Path) -> ContextsFile:
    """Validate the YAML document. Nothing is raised: problems are recorded on the :class:`ContextsFile` (whole
    file) or on each :class:`Context`, and reported when used."""
    if data is None:
        return ContextsFile(path=path, exists=True)
    if not isinstance(data, dict):
        return ContextsFile(
            path=path, exists=True, problem=f"{path}: expected a mapping with 'contexts:' and 'current-context:'"
        )
    problem = None
    unknown = sorted(str(k) for k in set(data) - {"contexts", "current-context"})
    if unknown:
        # not ignored: `current_context: prod` silently ignored would pick another cluster
        problem = f"{path}: unknown top-level key {unknown[0]!r} (expected contexts, current-context)"
    raw = data.get("contexts") or {}
    contexts: dict[str, Context] = {}
    if isinstance(raw, list):  # kubectl style: [{name: prod, ...}]
        for i, entry in enumerate(raw):
            if not isinstance(entry, dict) or "name" not in entry:
                label = f"contexts[{i}]"
                contexts[label] = Context(label, {}, "each entry of 'contexts:' needs a 'name:'")
                continue
            name = str(entry["name"])
            body = {k: v for k, v in entry.items() if k != "name"}
            contexts[name] = (
                Context(name, {}, "defined more than once in 'contexts:'")
                if name in contexts
                else _parse_context(name, body)
            )
    elif isinstance(raw, dict):
        contexts = {str(name): _parse_context(str(name), body) for name, body in raw.items()}
    else:
        problem = problem or f"{path}: 'contexts:' must map context names to settings"
    current = data.get("current-context")
    return ContextsFile(
        path=path,
        contexts=contexts,
        current=None if current is None else str(current),
        exists=True,
        problem=problem,
    )


def check_context(name: str, body: Any) -> tuple[dict[str, Any], str | None]:
    """A context's settings (normalised keys, typed values) and its first problem (None: usable)."""
    if not _NAME_RE.match(name):
        return {}, "names are letters, digits and . _ @ : / - (up to 128)"
    if not isinstance(body, dict):
        return {}, "expected a mapping of settings (zookeeper:, bootstrap-server:, ...)"
    settings: dict[str, Any] = {}
    for key, value in body.items():
        key = str(key)
        norm = key.replace("_", "-")
        if norm not in FIELDS:
            close = difflib.get_close_matches(norm, list(FIELDS), n=1)
            hint = f" — did you mean {close[0]}?" if close else f" (valid: {', '.join(FIELDS)})"
            return settings, f"unknown setting {key!r}{hint}"
        if norm == "zk-auth":
            value = [value] if isinstance(value, str) else value
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                return settings, "zk-auth must be SCHEME:USER:PASSWORD or a list of them"
            settings[norm] = list(value)
        elif norm in ("connect-timeout", "timeout"):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.1 <= value <= 3600:
                return settings, f"{norm} must be a number of seconds between 0.1 and 3600"
            settings[norm] = float(value)
        elif norm == "zk-acl":
            if value not in ("open", "secure"):
                return settings, "zk-acl must be 'open' or 'secure'"
            settings[norm] = value
        else:
            if not isinstance(value, str) or not value:
                return settings, f"{norm} must be a non-empty string"
            settings[norm] = str(Path(value).expanduser()) if norm in PATH_KEYS else value
    given = [k for k in CLUSTER_KEYS if settings.get(k)]
    if len(given) != 1:
        return settings, "set exactly one of zookeeper, bootstrap-server, bootstrap-controller"
    return settings, None


def _parse_context(name: str, body: Any) -> Context:
    settings, problem = check_context(name, body)
    return Context(name=name, settings=settings, problem=problem)


def config_target(path: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> Path:
    """The file ``config`` commands read and write: ``--config``, else :func:`default_path`."""
    return Path(path).expanduser() if path is not None else default_path(env)


def load_config(path: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> ContextsFile:
    """Read the config file; a missing default file is an empty config, a missing ``--config`` is an error.
    An unreadable file or bad YAML is recorded on the result (reported when a context is needed)."""
    explicit = path is not None
    p = config_target(path, env)
    source = "--config" if explicit else ENV_CONFIG if (os.environ if env is None else env).get(ENV_CONFIG) else ""
    try:
        data = _read_yaml(p)
    except FileNotFoundError:
        if explicit:
            raise UsageError(f"config file {p} does not exist (check --config)") from None
        return ContextsFile(path=p, source=source)
    except UsageError as e:
        return ContextsFile(path=p, exists=True, problem=e.message, source=source)
    return replace(parse_config(data, p), source=source)


def _read_yaml(p: Path) -> Any:
    """The file's YAML document; FileNotFoundError if absent, UsageError (one line) if unreadable or bad YAML."""
    try:
        text = decoded(p.read_bytes())
    except FileNotFoundError:
        raise
    except OSError as e:
        raise UsageError(f"cannot read config file {p}: {e.strerror or e}") from None
    except ValueError as e:  # not UTF-8: which byte, where
        raise UsageError(f"config file {p}: {e}") from None
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" line {mark.line + 1}" if mark is not None else ""
        what = yaml_problem(getattr(e, "context", None), getattr(e, "problem", None)) or str(e).splitlines()[0]
        raise UsageError(f"{p}:{at} is not valid YAML ({what})") from None


def apply_context(
    opts: ConnectionOptions,
    ctx: Context,
    defaults: ConnectionOptions | None = None,
    explicit: frozenset[str] = frozenset(),
) -> ConnectionOptions:
    """Fill the fields ``opts`` left empty (or at their default) from the context; flags and env win.

    ``explicit`` names the fields typed on the command line even when they equal the default
    (``--connect-timeout 10``): the context never overrides those. If the flags/environment already name a
    cluster, the context's cluster is not used (one cluster only).
    """
    defaults = defaults or ConnectionOptions()
    changes: dict[str, Any] = {}
    has_cluster = opts.has_cluster
    for key, attr in FIELDS.items():
        if key not in ctx.settings or attr in explicit:
            continue
        if key in CLUSTER_KEYS and has_cluster:
            continue
        current = getattr(opts, attr)
        if current == getattr(defaults, attr) or current in (None, [], ""):
            changes[attr] = ctx.settings[key]
    if not changes:
        return opts
    sources = {**opts.sources, **{attr: f"context {ctx.name!r}" for attr in changes}}
    return replace(opts, **changes, sources=sources)


def select_context(
    config: ContextsFile, explicit: str | None, env: Mapping[str, str] | None = None
) -> tuple[Context | None, str]:
    """Which context applies: ``--context`` > ``KQUOTACTL_CONTEXT`` > the file's current-context.

    Returns the context (or None) and how it was chosen (``flag``, ``env``, ``file``, ``none``).
    """
    env = os.environ if env is None else env
    if explicit:
        return config.get(explicit), "flag"
    if env.get(ENV_CONTEXT):
        try:
            return config.get(env[ENV_CONTEXT]), "env"
        except UsageError as e:  # named as the variable it came from
            raise UsageError(f"{ENV_CONTEXT}={env[ENV_CONTEXT]!r}: {e.message}") from None
    ctx = config.current_context()
    return (ctx, "file") if ctx is not None else (None, "none")


def resolve(
    opts: ConnectionOptions,
    context_name: str | None = None,
    config_path: str | None = None,
    env: Mapping[str, str] | None = None,
    typed: frozenset[str] = frozenset(),
) -> ConnectionOptions:
    """flags > environment > context. ``opts`` holds the flags (``typed``: those given on the command line);
    the result may still have no cluster (``ConnectionOptions.check`` then says what to pass)."""
    env = os.environ if env is None else env
    typed_only = typed_cluster(opts, context_name, env)
    if typed_only is not None:
        return typed_only  # a cluster typed by hand (or in the environment): no context involved
    merged = opts.with_env(env)
    config = load_config(config_path, env)
    ctx, how = select_context(config, context_name, env)
    if ctx is None:
        return merged
    import logging

    logging.getLogger("kquotactl.connection.contexts").debug(
        "using context %s (%s) from %s", ctx.name, how, config.path
    )
    return apply_context(merged, ctx, explicit=typed).with_env(env)


def set_current(text: str, name: str) -> str:
    """Rewrite (or add) the ``current-context:`` line, keeping every other line and comment as it was."""
    line = f"current-context: {name}"
    pat = re.compile(r"^current-context:.*$", re.M)
    if pat.search(text):
        return pat.sub(line, text, count=1)
    return f"{line}\n{text}" if text else f"{line}\ncontexts: {{}}\n"


def write_current_context(config: ContextsFile, name: str) -> None:
    """Atomically point ``current-context`` at ``name`` (the file keeps its comments and its mode)."""
    config.get(name)
    text = config.path.read_text(encoding="utf-8") if config.path.exists() else ""
    write_atomically(config.path, set_current(text, name))


# -- set-context / delete-context: edit the document (pure), then write it back whole -----------------
# PyYAML cannot round-trip comments or layout, so these two rewrite the file from its data: comments are lost
# (use-context, which only swaps one line, keeps them). The help and docs say so.


def set_context_doc(
    data: Any, name: str, changes: Mapping[str, Any], unset: tuple[str, ...] = (), path: Path = Path("config.yaml")
) -> tuple[dict[str, Any], bool]:
    """``data`` with context ``name`` created or updated: ``changes`` (context key -> value) set, ``unset`` keys
    removed, every other setting kept. Returns (new document, created). The result is validated like the
    file is read; a problem is a UsageError and nothing is returned. ``data`` is not modified."""
    doc = _editable(data, path)
    entries: Any = doc.get("contexts")  # a mapping or a list, as the YAML has it
    found = _find(entries, name)
    old = entries[found] if found is not None else {}
    body: dict[str, Any] = dict(old) if isinstance(old, dict) else {}
    if isinstance(entries, list):
        body.pop("name", None)
    for key in unset:
        norm = key.replace("_", "-")
        matching = [k for k in body if str(k).replace("_", "-") == norm]
        if not matching:
            have = ", ".join(str(k) for k in body) or "none"
            raise UsageError(context_problem(path, name, f"no setting {key!r} to unset (it has: {have})"))
        for k in matching:
            del body[k]
    for key, value in changes.items():
        if key not in FIELDS:
            raise UsageError(f"unknown context setting {key!r} (valid: {', '.join(FIELDS)})")
        drop = [key] + (list(CLUSTER_KEYS) if key in CLUSTER_KEYS else [])
        for k in [k for k in body if str(k).replace("_", "-") in drop]:
            del body[k]
        body[key] = value
    _, problem = check_context(name, body)
    if problem:
        raise UsageError(context_problem(path, name, problem) + " (nothing written)")
    if entries is None:
        entries = doc["contexts"] = {}
    if isinstance(entries, list):
        if found is None:
            entries.append({"name": name, **body})
        else:
            entries[found] = {"name": name, **body}
    else:
        key = name if found is None else found
        entries[key] = body
    return doc, found is None


def delete_context_doc(data: Any, name: str, path: Path = Path("config.yaml")) -> tuple[dict[str, Any], bool]:
    """``data`` without context ``name``; if it was the current-context, that key is removed too (like nothing
    was ever selected). Returns (new document, was current)."""
    doc = _editable(data, path)
    entries: Any = doc.get("contexts")  # a mapping or a list, as the YAML has it
    found = _find(entries, name)
    if found is None:
        names = _names(entries)
        close = difflib.get_close_matches(name, names, n=1)
        hint = f" — did you mean {close[0]}?" if close else ""
        raise UsageError(
            f"cannot delete context {name!r}: not in {path}{hint} (contexts: {', '.join(names) or 'none'})"
        )
    del entries[found]
    was_current = str(doc.get("current-context")) == name and "current-context" in doc
    if was_current:
        del doc["current-context"]
    return doc, was_current


def _editable(data: Any, path: Path) -> dict[str, Any]:
    import copy

    if data is None:
        return {"contexts": {}}
    if not isinstance(data, dict):
        raise UsageError(f"{path}: expected a mapping with 'contexts:' and 'current-context:' (fix the file first)")
    doc = copy.deepcopy(data)
    if doc.get("contexts") is None:
        doc["contexts"] = {}
    if not isinstance(doc["contexts"], (dict, list)):
        raise UsageError(f"{path}: 'contexts:' must map context names to settings (fix the file first)")
    return doc


def _find(entries: Any, name: str) -> Any:
    """The key (mapping form) or index (list form) of context ``name``, or None."""
    if isinstance(entries, dict):
        return next((k for k in entries if str(k) == name), None)
    if isinstance(entries, list):
        return next(
            (i for i, e in enumerate(entries) if isinstance(e, dict) and "name" in e and str(e["name"]) == name),
            None,
        )
    return None


def _names(entries: Any) -> list[str]:
    if isinstance(entries, dict):
        return sorted(str(k) for k in entries)
    return sorted(str(e["name"]) for e in entries or () if isinstance(e, dict) and "name" in e)


def dump_doc(doc: Mapping[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(dict(doc), sort_keys=False, default_flow_style=False, allow_unicode=True)


def read_doc(path: Path) -> Any:
    """The config file's YAML document for editing (None if the file does not exist yet)."""
    try:
        return _read_yaml(path)
    except FileNotFoundError:
        return None


def write_atomically(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one rename: readers see the old file or the new one, never half of
    one. The file keeps its mode (a new one is ``0600``: it may hold credentials); a symlink is written
    through (its target is replaced, the link stays)."""
    import tempfile

    target = path.resolve() if path.is_symlink() else path
    target.parent.mkdir(parents=True, exist_ok=True)
    mode = target.stat().st_mode & 0o777 if target.exists() else 0o600
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
