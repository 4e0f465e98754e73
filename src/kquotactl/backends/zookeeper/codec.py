"""Quota znodes as Kafka brokers read and write them: paths, the entity and notification JSON, typed configs,
names ZooKeeper cannot hold, and the ACLs Kafka gives new nodes. Pure: no connection, no I/O.

Layout (Kafka's ``ConfigEntityZNode`` / ``ConfigEntityChangeNotificationZNode``):

- ``/config/<users|clients|ips>/<name>[/clients/<name>]`` holding ``{"version":1,"config":{k: "v"}}``
  (every value a JSON string, keys in ``java.util.Properties`` order);
- after each changed entity, one persistent sequential ``/config/changes/config_change_NNNNNNNNNN`` holding
  ``{"version":2,"entity_path":"users/<u>/clients/<c>"}``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from kquotactl.core.entities import Entity
from kquotactl.core.errors import QuotaError
from kquotactl.core.javafmt import properties_order
from kquotactl.core.keys import KEYS, Number, UnparsableValue, parse_stored

CONFIG_ROOT = "/config"
CHANGES_PATH = "/config/changes"
NOTIFICATION_PREFIX = "/config/changes/config_change_"
ENTITY_ROOTS = ("/config/users", "/config/clients", "/config/ips")


@dataclass
class Node:
    """An entity znode as read: all stored keys (quota or not), its version and child count."""

    path: str
    props: dict[str, str]
    version: int
    num_children: int


def entity_znode(entity: Entity) -> str:
    """The znode of an entity: ``/config/`` + its sanitized path."""
    return "/config/" + entity.path


# The JSON of both znodes written by hand around the json module's C string encoders (what ``json.dumps`` with
# these separators produces, byte for byte; tests/test_zookeeper_codec.py checks it), as ``json.dumps`` with
# options builds a new encoder per call and walks the dict in Python.
_STR = json.encoder.encode_basestring  # ensure_ascii=False: Kafka's own JSON keeps non-ASCII as is
_STR_ASCII = json.encoder.encode_basestring_ascii
_ENCODE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def encode_entity(props: dict[str, str]) -> bytes:
    """``{"version":1,"config":{...}}``, compact, keys in JDK 9+ ``Properties`` iteration order."""
    ordered = {k: props[k] for k in properties_order(props)}
    if not all(type(v) is str for v in ordered.values()):  # not from decode_entity/format_value: the slow way
        return _ENCODE({"version": 1, "config": ordered}).encode()
    body = ",".join(_STR(k) + ":" + _STR(v) for k, v in ordered.items())
    return ('{"version":1,"config":{' + body + "}}").encode()


def encode_notification(entity_path: str) -> bytes:
    return ('{"version":2,"entity_path":' + _STR_ASCII(entity_path) + "}").encode()


def decode_entity(path: str, data: bytes | None) -> dict[str, str]:
    """Kafka's ``ConfigEntityZNode.decode``: missing/empty data is an empty config."""
    if not data:
        return {}
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise QuotaError(f"znode {path} does not hold Kafka config JSON; refusing to touch it") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict) or not isinstance(doc.get("config", {}), dict):
        raise QuotaError(f"znode {path} does not hold Kafka config JSON; refusing to touch it")
    config = doc.get("config") or {}
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}


def typed_config(entity: Entity, props: dict[str, str], unparsed: dict[str, str] | None = None) -> dict[str, Number]:
    """The quota keys of a stored config, typed as brokers parse them (:func:`kquotactl.core.keys.parse_stored`).

    Values that are no limit go to ``unparsed`` (key -> stored text): a broker cannot parse them, or parses them as
    NaN or an infinity (:func:`kquotactl.core.keys.not_applied_reason`); other keys (SCRAM credentials) are left
    out."""
    out: dict[str, Number] = {}
    kind = entity.kind
    for k, key in KEYS.items():  # in key order
        v = props.get(k)
        if v is None or key.kind is not kind:
            continue
        try:
            value = parse_stored(key, v)
        except UnparsableValue:
            value = None
        if value is None or not math.isfinite(value):  # NaN and Infinity (DOUBLE keys) are no limit either
            if unparsed is not None:
                unparsed[k] = v
            continue
        out[k] = value
    return out


def unstorable_reason(entity: Entity) -> str | None:
    """Names ZooKeeper cannot hold: Kafka's Sanitizer keeps dots, and ZooKeeper forbids "." and ".." segments."""
    for segment in entity.path.split("/"):
        if segment in (".", ".."):
            return (
                f"{entity.label()}: the name {segment!r} cannot be stored in ZooKeeper (Kafka keeps dots unescaped "
                "and ZooKeeper forbids '.' and '..' path segments)"
            )
    return None


def node_acl(path: str, secure: bool) -> list[Any] | None:
    """Kafka's ``ZkData.defaultAcls`` with ``zookeeper.set.acl=true``: creator-all, plus world-read
    except under the sensitive ``/config/users`` tree (SCRAM credentials live there). None: ZooKeeper's default."""
    if not secure:
        return None
    from kazoo.security import CREATOR_ALL_ACL, READ_ACL_UNSAFE

    sensitive = path == "/config/users" or path.startswith("/config/users/")
    return list(CREATOR_ALL_ACL) + ([] if sensitive else list(READ_ACL_UNSAFE))


def notification_acl(acl: list[Any] | None) -> list[Any] | None:
    """Notifications are not sensitive: creator-all plus world-read when ACLs are on."""
    if acl is None:
        return None
    from kazoo.security import CREATOR_ALL_ACL, READ_ACL_UNSAFE

    return list(CREATOR_ALL_ACL) + list(READ_ACL_UNSAFE)
