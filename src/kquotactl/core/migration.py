"""Where a ZooKeeper-mode cluster stands in a ZooKeeper -> KRaft migration (KIP-866), from the two znodes Kafka
writes for it. Pure: the znodes' bytes in, a :class:`MigrationState` out.

What Kafka 3.9 writes (``core/src/main/scala/kafka/zk/ZkData.scala``, ``KafkaZkClient.scala``):

- ``/migration`` (``MigrationZNode``): created by the KRaft controller when it becomes the active controller in
  migration mode, before any ZooKeeper broker has joined (``KRaftMigrationDriver.KRaftLeaderEvent`` ->
  ``getOrCreateMigrationState``), as ``{"version":0,"kraft_controller_id":..,"kraft_controller_epoch":..,
  "kraft_metadata_offset":..,"kraft_metadata_epoch":..}``; the offset is -1 until the metadata has been copied
  (``MigrateMetadataEvent``), then the KRaft log offset the migration reached. Removed only by an operator rolling
  the migration back (``docs/ops.html``: ``rmr /migration``).
- ``/controller`` (``ControllerZNode``): ``{"version":2,"brokerid":N,"timestamp":"..","kraftControllerEpoch":E}``.
  A ZooKeeper broker elected controller writes it ephemeral with E = -1; a KRaft controller claiming the
  cluster (``tryRegisterKRaftControllerAsActiveController``) writes it *persistent* with its KRaft epoch (> 0),
  so it stays after the migration is finalized. Kafka itself refuses its own ZooKeeper config writes when
  ``kraftControllerEpoch > 0`` (``KafkaZkClient.setOrCreateEntityConfigs``): that is the test used here.
- ``/controller_epoch``: the ZooKeeper controller epoch, incremented by every claim (text, e.g. ``2``).
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass
from typing import Any

from kquotactl.core.errors import UsageError


class Phase(enum.Enum):
    """How far the migration is, as ZooKeeper shows it."""

    NONE = "none"  # no /migration and no KRaft controller: a ZooKeeper cluster
    PREPARING = "preparing"  # /migration, but a ZooKeeper broker (or nobody) is controller: the quorum waits
    COPYING = "copying"  # a KRaft controller holds /controller, the metadata is being copied (offset -1)
    MIGRATED = "migrated"  # a KRaft controller holds /controller and the copy is done: dual-write or finalized


@dataclass(frozen=True)
class MigrationState:
    """The migration as read from ZooKeeper; the ids and epochs are None where the znode does not say."""

    phase: Phase
    kraft_controller_id: int | None = None
    kraft_controller_epoch: int | None = None
    metadata_offset: int | None = None
    zk_controller_epoch: int | None = None

    @property
    def writes_lost(self) -> bool:
        """Whether a quota written straight to ZooKeeper may never reach the KRaft metadata log: once a KRaft
        controller quorum in migration mode exists, it copies ZooKeeper once and then only writes to it."""
        return self.phase is not Phase.NONE

    def summary(self) -> str:
        """The state in words, for messages (no flags)."""
        who = f"KRaft controller {self.kraft_controller_id}" if self.kraft_controller_id is not None else ""
        epoch = f", epoch {self.kraft_controller_epoch}" if self.kraft_controller_epoch is not None else ""
        if self.phase is Phase.MIGRATED:
            return f"the cluster is migrating (or migrated) to KRaft: {who} holds /controller{epoch}"
        if self.phase is Phase.COPYING:
            return f"the cluster is migrating to KRaft: {who} is copying its metadata{epoch}"
        if self.phase is Phase.PREPARING:
            return "the cluster is migrating to KRaft: a KRaft controller in migration mode registered /migration"
        return "the cluster is not migrating to KRaft"


def _json_object(data: bytes | None) -> dict[str, Any] | None:
    """A znode's JSON object, or None when absent, empty or not a JSON object (never raises: a state decided on
    a malformed znode is decided from the other one)."""
    if not data:
        return None
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _int(doc: dict[str, Any] | None, key: str, minimum: int | None = None) -> int | None:
    """An integer field; None when missing, not an integer, or below ``minimum`` (Kafka writes -1 for "none")."""
    value = None if doc is None else doc.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    return None if minimum is not None and value < minimum else value


def decode_migration(
    controller: bytes | None, migration: bytes | None, controller_epoch: bytes | None = None
) -> MigrationState:
    """The state from ``/controller``, ``/migration`` and ``/controller_epoch`` (None: the znode is absent).

    A /migration znode that cannot be read as JSON still counts as present (only a KRaft controller writes it)."""
    ctl, mig = _json_object(controller), _json_object(migration)
    zk_epoch = None
    if controller_epoch is not None:
        text = controller_epoch.decode("utf-8", "replace").strip()
        zk_epoch = int(text) if text.isdigit() else None
    kraft_epoch = _int(ctl, "kraftControllerEpoch")
    offset = _int(mig, "kraft_metadata_offset")
    if kraft_epoch is not None and kraft_epoch > 0:
        phase = Phase.COPYING if migration is not None and offset is not None and offset < 0 else Phase.MIGRATED
        return MigrationState(phase, _int(ctl, "brokerid", 0), kraft_epoch, offset, zk_epoch)
    if migration is not None:
        return MigrationState(
            Phase.PREPARING,
            _int(mig, "kraft_controller_id", 0),
            _int(mig, "kraft_controller_epoch", 0),
            offset,
            zk_epoch,
        )
    return MigrationState(Phase.NONE, zk_controller_epoch=zk_epoch)


class ZooKeeperWriteLost(UsageError):
    """A write to ZooKeeper refused because the cluster is migrating (or migrated) to KRaft: it would never reach
    the KRaft metadata log. ``where``: the ZooKeeper connect string; ``state``: what ZooKeeper shows. The CLI names
    the option to write through instead (``kquotactl.cli.errorwords``)."""

    def __init__(self, where: str, state: MigrationState) -> None:
        super().__init__(
            f"ZooKeeper {where}: {state.summary()}; a write to ZooKeeper would be lost (it never reaches the KRaft "
            "metadata log); nothing written. Write through the brokers' or controllers' admin API instead"
        )
        self.where, self.state = where, state
