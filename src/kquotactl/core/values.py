"""What brokers make of stored quotas that kquotactl itself would never write (pure).

Other tools write quota znodes too: kafka-configs (``--zookeeper``) stores an ip entity's name as typed, the
admin API path of a ZooKeeper-mode broker stores it sanitized, people edit znodes by hand. Brokers read them
their own way (see :mod:`kquotactl.core.inet` and :func:`kquotactl.core.keys.parse_stored`):

- a value the broker's parser refuses is never applied (``unparsable-value``). Sources: ZooKeeper-mode
  ``ConfigHandler`` (2.8, 3.9) parses while it applies the entity, keys in the order producer, consumer,
  request, controller-mutation; the exception stops that entity's update and, during start-up
  (``ZkConfigManager.startup`` / ``DynamicConfigManager.startup``), makes ``KafkaServer.startup`` fail;
- two stored names for one address (``ip-duplicate``): brokers key ip overrides by ``InetAddress``, in one map
  (``ConnectionQuotas.connectionRatePerIp``). Every ``updateIpConnectionRateQuota`` puts or removes that address's
  entry, so the broker holds the value of whichever spelling it applied last: at start-up the order in which
  ZooKeeper lists ``/config/ips`` (unspecified), then the spelling changed last. Removing the key from either
  spelling removes the override until the next restart, although the other spelling still stores it;
- an ip name that is not an address literal (``ip-not-address``): a host name (or a sanitized spelling such as
  ``%3A%3A1``) goes to the broker's resolver; a malformed literal never names an address, and a ZooKeeper-mode
  broker fails ``Unable to resolve address`` (at start-up: it does not start).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kquotactl.core.changes import EntityChange, QuotaRecord, check_one_change_per_entity
from kquotactl.core.entities import DEFAULT, Entity
from kquotactl.core.inet import IpKind, address_key, read_ip_name
from kquotactl.core.keys import KEYS, format_value, not_applied_reason

DUPLICATE_RULE = (
    "a broker keeps the value of whichever spelling it applied last (at start-up in the order ZooKeeper lists "
    "/config/ips, which is unspecified; then the one changed last), and removing the key from either spelling "
    "removes the override until the broker restarts"
)


@dataclass(frozen=True)
class StoredFinding:
    entity: Entity
    keys: tuple[str, ...]
    code: str  # unparsable-value | ip-duplicate | ip-not-address
    message: str

    def __str__(self) -> str:
        return self.message

    def to_json(self) -> dict[str, Any]:
        return {"entity": self.entity.to_json(), "keys": list(self.keys), "code": self.code, "message": self.message}


def stored_findings(records: Iterable[QuotaRecord]) -> list[StoredFinding]:
    """Stored quotas that a broker reads differently from what they seem to say, in record order."""
    out: list[StoredFinding] = []
    by_address: dict[str, list[QuotaRecord]] = {}
    for r in records:
        e = r.entity
        for k, text in r.unparsed.items():
            out.append(
                StoredFinding(
                    e,
                    (k,),
                    "unparsable-value",
                    _unparsed_words(e, k, text),
                )
            )
        if e.ip is None or e.ip is DEFAULT:
            continue
        name = str(e.ip)
        parsed = read_ip_name(name)
        if parsed.key is not None:
            by_address.setdefault(parsed.key, []).append(r)
        if parsed.kind is not IpKind.ADDRESS:
            extra = "" if parsed.kind is not IpKind.INVALID else "; a ZooKeeper-mode broker fails to start"
            out.append(StoredFinding(e, tuple(r.config), "ip-not-address", f"{e.path}: {parsed.meaning(name)}{extra}"))
    for key, rs in by_address.items():
        if len(rs) < 2:
            continue
        shown = ", ".join(f"{r.entity.path} ({_values(r)})" for r in rs)
        out.append(
            StoredFinding(
                rs[0].entity,
                tuple(sorted({k for r in rs for k in r.config})),
                "ip-duplicate",
                f"{len(rs)} stored names are the address {key}: {shown}; {DUPLICATE_RULE}",
            )
        )
    return out


def route_ip_changes(changes: Sequence[EntityChange], stored_ips: Iterable[str]) -> list[EntityChange]:
    """Send each ip change to the stored entities that name its address, whatever their spelling.

    Brokers key ip quotas by address, so a stored ``ips/2001:DB8:0::1`` (kafka-configs stores names as typed) *is*
    the entity ``2001:db8::1``: writing a second one would leave two values for one address. When several stored
    names are the address, the change goes to each of them (so the broker's choice between them stops mattering),
    except to the stored names another change in the batch addresses exactly (a plan's per-spelling changes).
    A change with no stored match is kept as it is (new entities are written in canonical form).
    """
    by_address: dict[str, list[str]] = {}
    for name in stored_ips:
        by_address.setdefault(address_key(name), []).append(name)
    stored = {n for names in by_address.values() for n in names}
    wanted = [ch for ch in changes if ch.entity.ip is not None and ch.entity.ip is not DEFAULT]
    exact = {ch.entity.ip for ch in wanted if ch.entity.ip in stored}
    out: list[EntityChange] = []
    for ch in changes:
        if ch.entity.ip is None or ch.entity.ip is DEFAULT:
            out.append(ch)
            continue
        names = by_address.get(address_key(str(ch.entity.ip)), [])
        targets = [ch.entity.ip] if ch.entity.ip in names or not names else []
        targets += sorted(n for n in names if n != ch.entity.ip and n not in exact)
        out.extend(ch if t == ch.entity.ip else replace(ch, entity=Entity(ip=t)) for t in targets)
    check_one_change_per_entity(out)
    return out


def _unparsed_words(e: Entity, k: str, text: str) -> str:
    reason = not_applied_reason(KEYS[k], text)
    if reason.startswith("not a limit"):
        return f"{e.path}: {k} is stored as {text!r}: {reason}"
    return (
        f"{e.path}: {k} is stored as {text!r}, which brokers cannot parse ({KEYS[k].type.value}): "
        "not applied, and a ZooKeeper-mode broker fails to start while it is stored"
    )


def _values(r: QuotaRecord) -> str:
    return ", ".join(f"{k}={format_value(KEYS[k], v)}" for k, v in r.config.items()) or "no quota"
