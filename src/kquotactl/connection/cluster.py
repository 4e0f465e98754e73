"""What names a cluster and how to reach it (:class:`ConnectionOptions`), and the quick reachability probe the backends
share: no backend is imported here, so backends import it without importing :mod:`kquotactl.backends.factory`'s factory.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace

from kquotactl.core.errors import UsageError
from kquotactl.core.wording import not_utf8, shown_name

ENV_ZOOKEEPER = "KQUOTACTL_ZOOKEEPER"
ENV_BOOTSTRAP = "KQUOTACTL_BOOTSTRAP_SERVER"
ENV_COMMAND_CONFIG = "KQUOTACTL_COMMAND_CONFIG"
ENV_ZK_AUTH = "KQUOTACTL_ZK_AUTH"
ENV_CONTEXT = "KQUOTACTL_CONTEXT"  # a context chosen by name (kquotactl.connection.contexts)


@dataclass
class ConnectionOptions:
    zookeeper: str | None = None
    bootstrap_server: str | None = None
    bootstrap_controller: str | None = None
    command_config: str | None = None
    connect_timeout: float = 10.0
    timeout: float = 30.0
    zk_auth: list[str] = field(default_factory=list)
    zk_sasl_jaas: str | None = None
    zk_tls_config_file: str | None = None
    zk_acl: str = "open"
    allow_no_brokers: bool = False  # write into a ZooKeeper chroot without /brokers (a cluster not started yet)
    #: where a field's value came from when it was not typed as its flag: ``KQUOTACTL_ZOOKEEPER``, ``context 'prod'``
    sources: dict[str, str] = field(default_factory=dict, compare=False)

    def __repr__(self) -> str:  # zk_auth holds passwords
        return (
            f"ConnectionOptions(zookeeper={self.zookeeper!r}, bootstrap_server={self.bootstrap_server!r}, "
            f"bootstrap_controller={self.bootstrap_controller!r})"
        )

    @classmethod
    def from_params(cls, params: Mapping[str, object]) -> ConnectionOptions:
        """The options named in ``params`` (parsed command-line values keyed by field name; others are ignored), the
        defaults for those absent or None: the one way the CLI and shell completion build them."""
        values: dict[str, object] = {}
        for f in fields(cls):
            v = params.get(f.name)
            if v is not None:
                values[f.name] = list(v) if f.name == "zk_auth" else v  # type: ignore[call-overload]
        return cls(**values)  # type: ignore[arg-type]

    def said(self, attr: str, value: object = None) -> str:
        """How the user gave field ``attr`` (and ``value``, unless None: a password is never repeated), for a message
        about it: ``--zookeeper zk:x``, ``KQUOTACTL_ZOOKEEPER=zk:x``, ``zookeeper zk:x (context 'prod')``."""
        flag = "--" + attr.replace("_", "-")
        source = self.sources.get(attr)
        text = "" if value is None else str(value)
        if source is None:
            return f"{flag} {text}".rstrip()
        if source.startswith("context "):
            return f"{flag[2:]} {text}".rstrip() + f" ({source})"
        return f"{source}={text}" if text else source

    def check_addresses(self) -> None:
        """A cluster address with a port that is no port is refused before any connection, naming where it came
        from (a flag, an environment variable or a context)."""
        for attr in ("zookeeper", "bootstrap_server", "bootstrap_controller"):
            value = getattr(self, attr)
            if not value:
                continue
            where = not_utf8(value)
            if where:
                raise UsageError(f"{self.said(attr, shown_name(value))}: {where} is not UTF-8")
            hosts = (value.split("/", 1)[0] if attr == "zookeeper" else value).split(",")
            for host in hosts:
                problem = _address_problem(host.strip(), needs_port=attr != "zookeeper", named=len(hosts) > 1)
                if problem:
                    raise UsageError(f"{self.said(attr, repr(value))}: {problem}")

    @property
    def target(self) -> str:
        return self.zookeeper or self.bootstrap_server or self.bootstrap_controller or "?"

    @property
    def has_cluster(self) -> bool:
        return bool(self.zookeeper or self.bootstrap_server or self.bootstrap_controller)

    def with_env(self, env: Mapping[str, str] | None = None) -> ConnectionOptions:
        """Fill what flags left empty from the environment (flags win)."""
        env = os.environ if env is None else env
        filled: dict[str, object] = {}
        sources = dict(self.sources)
        if not (self.zookeeper or self.bootstrap_server or self.bootstrap_controller):
            if env.get(ENV_ZOOKEEPER):
                filled["zookeeper"], sources["zookeeper"] = env[ENV_ZOOKEEPER], ENV_ZOOKEEPER
            elif env.get(ENV_BOOTSTRAP):
                filled["bootstrap_server"], sources["bootstrap_server"] = env[ENV_BOOTSTRAP], ENV_BOOTSTRAP
        if not self.command_config and env.get(ENV_COMMAND_CONFIG):
            filled["command_config"], sources["command_config"] = env[ENV_COMMAND_CONFIG], ENV_COMMAND_CONFIG
        if not self.zk_auth and env.get(ENV_ZK_AUTH):
            filled["zk_auth"], sources["zk_auth"] = [env[ENV_ZK_AUTH]], ENV_ZK_AUTH
        if not self.zk_sasl_jaas and (self.zookeeper or filled.get("zookeeper")) and env.get("KAFKA_OPTS"):
            m = re.search(r"-Djava\.security\.auth\.login\.config=(\S+)", env["KAFKA_OPTS"])
            if m:
                filled["zk_sasl_jaas"], sources["zk_sasl_jaas"] = m.group(1), "KAFKA_OPTS"
        return replace(self, **filled, sources=sources) if filled else self  # type: ignore[arg-type]

    def check(self) -> ConnectionOptions:
        self.check_addresses()
        given = [
            n
            for n, v in (
                ("--zookeeper", self.zookeeper),
                ("--bootstrap-server", self.bootstrap_server),
                ("--bootstrap-controller", self.bootstrap_controller),
            )
            if v
        ]
        if not given:
            raise UsageError(
                "no cluster given: pass --zookeeper HOST:PORT[/chroot] or --bootstrap-server HOST:PORT "
                f"(or set {ENV_ZOOKEEPER} / {ENV_BOOTSTRAP}, or pick a context: --context NAME, "
                "KQUOTACTL_CONTEXT, or `kquotactl config use-context NAME`)"
            )
        if len(given) > 1:
            raise UsageError(
                f"Only one of --bootstrap-server, --bootstrap-controller or --zookeeper can be specified "
                f"(got {', '.join(given)})"
            )
        if self.zk_tls_config_file and not self.zookeeper:
            raise UsageError("Only the --zookeeper option can be used with the --zk-tls-config-file option.")
        if (self.zk_auth or self.zk_sasl_jaas or self.zk_acl != "open" or self.allow_no_brokers) and not self.zookeeper:
            raise UsageError("--zk-auth, --zk-sasl-jaas, --zk-acl and --allow-no-brokers apply to --zookeeper only")
        if self.command_config and self.zookeeper:
            raise UsageError("--command-config applies to --bootstrap-server/--bootstrap-controller only")
        return self


def _address_problem(host: str, needs_port: bool, named: bool) -> str | None:
    """What is wrong with one ``HOST:PORT`` of a cluster address (``named``: say which, of several), or None (IPv6
    literals in brackets)."""
    if host.startswith("["):
        name, _, rest = host[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else None
        if rest and not rest.startswith(":"):
            return f"{host!r} is not HOST:PORT (an IPv6 address goes in brackets: [::1]:9092)"
    elif host.count(":") > 1:
        return None  # a bare IPv6 literal: the client decides
    else:
        name, colon, port_text = host.partition(":")
        port = port_text if colon else None
    if not name:
        return f"{host!r} has no host name (expected HOST:PORT)"
    if port is None:
        return f"{host!r} has no port (expected HOST:PORT)" if needs_port else None
    if not port.isdigit() or not 1 <= int(port) <= 65535:
        return f"the port {port!r}{f' of {host!r}' if named else ''} is not a number from 1 to 65535"
    return None


def typed_cluster(
    opts: ConnectionOptions, context_name: str | None, env: Mapping[str, str] | None = None
) -> ConnectionOptions | None:
    """The flags filled from the environment, when they name a cluster and no context was chosen (``--context``,
    ``KQUOTACTL_CONTEXT``): then no context is involved and no config file is read. None otherwise: the contexts
    decide (:func:`kquotactl.connection.contexts.resolve`)."""
    env = os.environ if env is None else env
    if context_name or env.get(ENV_CONTEXT):
        return None
    merged = opts.with_env(env)
    return merged if merged.has_cluster else None


def unreachable(hosts: list[tuple[str, int]], timeout: float) -> str | None:
    """Why none of ``hosts`` can be reached, when that is certain at once; None when one accepts a connection
    or might still (no answer yet: the caller's own connect time-out decides).

    kazoo and Kafka clients retry a refused connection until their time-out and then report only "timed out";
    a plain TCP connect first tells "connection refused" and "unknown host" apart in milliseconds.
    """
    import socket

    causes: list[str] = []
    for host, port in hosts:
        where = f"{host}:{port}"
        try:
            addrs = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as e:
            causes.append(f"{where}: unknown host ({getattr(e, 'strerror', None) or e})")
            continue
        refused = []
        for family, kind, proto, _, addr in addrs:
            sock = socket.socket(family, kind, proto)
            sock.settimeout(min(timeout, 3.0))
            try:
                sock.connect(addr)
                return None
            except ConnectionRefusedError:
                refused.append("connection refused")
            except OSError as e:
                if isinstance(e, TimeoutError):
                    return None  # a firewall that drops packets, or a slow network: let the client wait
                refused.append(e.strerror or str(e))
            finally:
                sock.close()
        causes.append(f"{where}: {', '.join(dict.fromkeys(refused))}")
    if len(hosts) == 1:  # the caller names the address already
        return causes[0].split(": ", 1)[1]
    return "; ".join(causes)
