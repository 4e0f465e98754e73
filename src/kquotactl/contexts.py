"""Named cluster contexts (like kubectl's): ``~/.config/kquotactl/config.yaml``.

A context names one cluster and how to reach it (ZooKeeper or bootstrap servers, command-config, ZooKeeper
TLS/auth). Precedence, field by field: flags > environment > context > an error that says what to pass.
A context chosen explicitly (``--context`` / ``KQUOTACTL_CONTEXT``) fills whatever flags and environment
left empty; the file's ``current-context`` only applies when no cluster was given at all, so credentials
of the usual cluster never leak onto a ``--zookeeper`` typed by hand.

Parsing and resolution are pure (:func:`parse_config`, :func:`apply_context`); reading and rewriting the
file are the only I/O, kept in :func:`load_config` and :func:`write_current_context`.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kquotactl.connection import ConnectionOptions
from kquotactl.errors import UsageError

ENV_CONTEXT = "KQUOTACTL_CONTEXT"
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
class Config:
    path: Path
    contexts: dict[str, Context] = field(default_factory=dict)
    current: str | None = None
    exists: bool = False

    def get(self, name: str) -> Context:
        if name in self.contexts:
            return self.contexts[name]
        close = difflib.get_close_matches(name, list(self.contexts), n=1)
        hint = f" — did you mean {close[0]}?" if close else ""
        known = ", ".join(sorted(self.contexts)) or "none defined"
        raise UsageError(
            f"context {name!r} not found in {self.path}{hint} (contexts: {known}; "
            "`kquotactl config get-contexts` lists them)"
        )


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


def parse_config(data: Any, path: Path) -> Config:
    """Validate the YAML document; every problem names the file, the context and the key."""
    if data is None:
        return Config(path=path, exists=True)
    if not isinstance(data, dict):
        raise UsageError(f"{path}: expected a mapping with 'contexts:' and 'current-context:'")
    unknown = sorted(set(data) - {"contexts", "current-context"})
    if unknown:
        raise UsageError(f"{path}: unknown top-level key {unknown[0]!r} (expected contexts, current-context)")
    raw = data.get("contexts") or {}
    if isinstance(raw, list):  # kubectl style: [{name: prod, ...}]
        items: dict[str, Any] = {}
        for entry in raw:
            if not isinstance(entry, dict) or "name" not in entry:
                raise UsageError(f"{path}: each entry of 'contexts:' needs a 'name:'")
            items[str(entry["name"])] = {k: v for k, v in entry.items() if k != "name"}
        raw = items
    if not isinstance(raw, dict):
        raise UsageError(f"{path}: 'contexts:' must map context names to settings")
    contexts = {str(name): _parse_context(str(name), body, path) for name, body in raw.items()}
    current = data.get("current-context")
    if current is not None and str(current) not in contexts:
        raise UsageError(
            f"{path}: current-context {current!r} is not one of the contexts "
            f"({', '.join(sorted(contexts)) or 'none defined'}); fix it with `kquotactl config use-context NAME`"
        )
    return Config(path=path, contexts=contexts, current=None if current is None else str(current), exists=True)


def _parse_context(name: str, body: Any, path: Path) -> Context:
    where = f"{path}: context {name!r}"
    if not _NAME_RE.match(name):
        raise UsageError(f"{where}: names are letters, digits and . _ @ : / - (up to 128)")
    if not isinstance(body, dict):
        raise UsageError(f"{where}: expected a mapping of settings (zookeeper:, bootstrap-server:, ...)")
    settings: dict[str, Any] = {}
    for key, value in body.items():
        key = str(key)
        norm = key.replace("_", "-")
        if norm not in FIELDS:
            close = difflib.get_close_matches(norm, list(FIELDS), n=1)
            hint = f" — did you mean {close[0]}?" if close else f" (valid: {', '.join(FIELDS)})"
            raise UsageError(f"{where}: unknown setting {key!r}{hint}")
        if norm == "zk-auth":
            value = [value] if isinstance(value, str) else value
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise UsageError(f"{where}: zk-auth must be SCHEME:USER:PASSWORD or a list of them")
            settings[norm] = list(value)
        elif norm in ("connect-timeout", "timeout"):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.1 <= value <= 3600:
                raise UsageError(f"{where}: {norm} must be a number of seconds between 0.1 and 3600")
            settings[norm] = float(value)
        elif norm == "zk-acl":
            if value not in ("open", "secure"):
                raise UsageError(f"{where}: zk-acl must be 'open' or 'secure'")
            settings[norm] = value
        else:
            if not isinstance(value, str) or not value:
                raise UsageError(f"{where}: {norm} must be a non-empty string")
            settings[norm] = str(Path(value).expanduser()) if norm in PATH_KEYS else value
    given = [k for k in CLUSTER_KEYS if settings.get(k)]
    if len(given) != 1:
        raise UsageError(f"{where}: set exactly one of zookeeper, bootstrap-server, bootstrap-controller")
    return Context(name=name, settings=settings)


def load_config(path: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None) -> Config:
    """Read the config file; a missing default file is an empty config, a missing ``--config`` is an error."""
    explicit = path is not None
    p = Path(path).expanduser() if path is not None else default_path(env)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        if explicit:
            raise UsageError(f"config file {p} does not exist (check --config)") from None
        return Config(path=p)
    except OSError as e:
        raise UsageError(f"cannot read config file {p}: {e.strerror}") from None
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" line {mark.line + 1}" if mark is not None else ""
        raise UsageError(f"{p}:{at} is not valid YAML ({getattr(e, 'problem', None) or e})") from None
    return parse_config(data, p)


def _has_cluster(opts: ConnectionOptions) -> bool:
    return bool(opts.zookeeper or opts.bootstrap_server or opts.bootstrap_controller)


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
    has_cluster = _has_cluster(opts)
    for key, attr in FIELDS.items():
        if key not in ctx.settings or attr in explicit:
            continue
        if key in CLUSTER_KEYS and has_cluster:
            continue
        current = getattr(opts, attr)
        if current == getattr(defaults, attr) or current in (None, [], ""):
            changes[attr] = ctx.settings[key]
    return replace(opts, **changes) if changes else opts


def select_context(
    config: Config, explicit: str | None, env: Mapping[str, str] | None = None
) -> tuple[Context | None, str]:
    """Which context applies: ``--context`` > ``KQUOTACTL_CONTEXT`` > the file's current-context.

    Returns the context (or None) and how it was chosen (``flag``, ``env``, ``file``, ``none``).
    """
    env = os.environ if env is None else env
    if explicit:
        return config.get(explicit), "flag"
    if env.get(ENV_CONTEXT):
        return config.get(env[ENV_CONTEXT]), "env"
    if config.current:
        return config.get(config.current), "file"
    return None, "none"


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
    merged = opts.with_env(env)
    explicit = context_name or env.get(ENV_CONTEXT)
    if not explicit and _has_cluster(merged):
        return merged  # a cluster typed by hand (or in the environment): no context involved
    config = load_config(config_path, env)
    ctx, how = select_context(config, context_name, env)
    if ctx is None:
        return merged
    import logging

    logging.getLogger("kquotactl.contexts").debug("using context %s (%s) from %s", ctx.name, how, config.path)
    return apply_context(merged, ctx, explicit=typed).with_env(env)


def set_current(text: str, name: str) -> str:
    """Rewrite (or add) the ``current-context:`` line, keeping every other line and comment as it was."""
    line = f"current-context: {name}"
    pat = re.compile(r"^current-context:.*$", re.M)
    if pat.search(text):
        return pat.sub(line, text, count=1)
    return f"{line}\n{text}" if text else f"{line}\ncontexts: {{}}\n"


def write_current_context(config: Config, name: str) -> None:
    """Atomically point ``current-context`` at ``name`` (the file keeps its comments and its mode)."""
    config.get(name)
    text = config.path.read_text(encoding="utf-8") if config.path.exists() else ""
    new = set_current(text, name)
    tmp = config.path.with_name(config.path.name + ".tmp")
    mode = config.path.stat().st_mode & 0o777 if config.path.exists() else 0o600
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(new)
    os.replace(tmp, config.path)
