"""Follow quota changes in ZooKeeper as brokers do: a watch on ``/config/changes``, reading only the entities the new
change notifications name (:meth:`kquotactl.backends.base.QuotaBackend.watch_changes`).

One thread of its own does every read (kazoo's callbacks only wake it): it lists ``/config/changes`` with a watch,
reads the notifications numbered after the last one it saw and then the entity znodes they name, and reports them.
After a lost connection or a session expiry it cannot tell what it missed (brokers delete notifications after 15
minutes): it reports ``resync`` and the caller reads everything again.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence

from kquotactl.backends.base import WatchCallback, WatchedChange
from kquotactl.backends.zookeeper.codec import CHANGES_PATH, entity_znode, typed_config
from kquotactl.backends.zookeeper.session import ZkSession
from kquotactl.core.changes import QuotaRecord
from kquotactl.core.entities import Entity
from kquotactl.core.errors import BackendUnavailable, QuotaError

log = logging.getLogger("kquotactl.zookeeper")

RETRY_SECONDS = 1.0  # between tries while ZooKeeper cannot be read
PREFIX = "config_change_"


def notified_entity(data: bytes | None) -> Entity | None:
    """The quota entity a change notification names (version 2 ``entity_path``, version 1 ``entity_type`` and
    ``entity_name``); None for a notification of something else (topics, brokers) or one that cannot be read."""
    try:
        doc = json.loads((data or b"").decode("utf-8"))
        path = doc["entity_path"] if doc.get("version") == 2 else f"{doc['entity_type']}/{doc['entity_name']}"
        return Entity.from_path(str(path))
    except (ValueError, KeyError, TypeError, AttributeError, QuotaError):
        return None


def read_entities(session: ZkSession, entities: Sequence[Entity]) -> tuple[list[QuotaRecord], list[Entity]]:
    """The quotas of each entity now (pipelined reads): records of those holding quotas, and those holding none."""
    nodes = session.get_many([entity_znode(e) for e in entities])
    records, removed = [], []
    for e in dict.fromkeys(entities):
        node = nodes.get(entity_znode(e))
        unparsed: dict[str, str] = {}
        config = typed_config(e, node.props, unparsed) if node is not None else {}
        if config or unparsed:
            raw = {k: node.props[k] for k in config} if node is not None else None
            records.append(QuotaRecord(e, config, raw=raw, version=node.version if node else None, unparsed=unparsed))
        else:
            removed.append(e)
    return records, removed


class ChangeWatch:
    """The watch thread; :meth:`stop` ends it."""

    def __init__(self, session: ZkSession, callback: WatchCallback) -> None:
        self.session = session
        self.callback = callback
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._lost: str | None = None  # set by the connection listener (kazoo's thread)
        self._thread = threading.Thread(target=self._run, name="kquotactl-zk-watch", daemon=True)

    def start(self) -> Callable[[], None]:
        self.session.client.add_listener(self._state)
        self._thread.start()
        return self.stop

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()
        client = self.session.client
        if client is not None:
            client.remove_listener(self._state)
        if threading.current_thread() is not self._thread:
            self._thread.join(timeout=5)

    def _state(self, state: str) -> None:
        """kazoo's connection listener: never blocks, only wakes the thread."""
        if state != "CONNECTED":
            self._lost = f"lost the ZooKeeper connection ({state.lower()})"
        self._wake.set()

    def _fired(self, event: object) -> None:
        self._wake.set()

    def _children(self) -> list[str]:
        from kazoo.exceptions import NoNodeError

        s = self.session
        try:
            children: list[str] = s.wait(s.submit(s.client.get_children_async, CHANGES_PATH, self._fired), "watch")
        except NoNodeError:  # no change was ever made: wait for the node
            if s.wait(s.submit(s.client.exists_async, CHANGES_PATH, self._fired), "watch") is None:
                return []
            return self._children()
        return children

    def _run(self) -> None:
        last = -1
        resync = True
        while not self._stopped.is_set():
            self._wake.clear()
            if self.session.client is None:  # the backend was closed: nothing left to watch
                return
            try:
                if self._lost:
                    lost, self._lost, resync = self._lost, None, True
                    self.callback(WatchedChange(error=lost))
                    if not self.session.client.connected:
                        self._wake.wait(RETRY_SECONDS)
                        continue
                self.session.outages = 0
                names = self._children()
                numbered = sorted((int(c[len(PREFIX) :]), c) for c in names if c[len(PREFIX) :].isdigit())
                if resync:
                    last = max((n for n, _ in numbered), default=-1)
                    resync = False
                    self.callback(WatchedChange(resync=True))
                else:
                    new = [c for n, c in numbered if n > last]
                    if new:
                        last = max(n for n, _ in numbered)
                        self._report(new)
            except BackendUnavailable as e:
                resync = True
                self.callback(WatchedChange(error=str(e)))
                self._wake.wait(RETRY_SECONDS)
                continue
            except Exception as e:  # never let the thread die silently: the caller keeps its last values
                log.warning("ZooKeeper change watch: %s", e)
                resync = True
                self.callback(WatchedChange(error=f"ZooKeeper change watch: {e}"))
                self._wake.wait(RETRY_SECONDS)
                continue
            self._wake.wait()

    def _report(self, notifications: list[str]) -> None:
        nodes = self.session.pipelined(
            [f"{CHANGES_PATH}/{c}" for c in notifications], self.session.client.get_async, "read change notifications"
        )
        entities = []
        for _, answer in nodes:
            data = answer[0] if isinstance(answer, tuple) else None
            entity = notified_entity(data)
            if entity is not None:
                entities.append(entity)
        if entities:
            records, removed = read_entities(self.session, entities)
            self.callback(WatchedChange(records=records, removed=removed))
