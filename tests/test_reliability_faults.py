"""Faults against a private, real ZooKeeper: killed mid-apply, session expiry, lost answers, hung servers.

Every test starts its own server (``own_zk``) so it can SIGKILL, SIGSTOP and restart it. Kill points are
random (the seed is printed; ``KQUOTACTL_FAULT_SEED`` replays one, ``KQUOTACTL_FAULT_ROUNDS`` runs more).
The invariants checked after every fault:

- no entity is half-written: an entity's znode changed if and only if a notification names it;
- no change is written twice (exactly one notification per changed entity) and none is lost;
- what the error reports as applied / not applied / unknown matches what ZooKeeper holds;
- a re-run converges; nothing is written outside /config/{users,clients,ips} and /config/changes.
"""

from __future__ import annotations

import os
import random
import socket
import threading
import time

import pytest

from conftest import run_subprocess
from fixtures_reliability import (
    COUNTS,
    admin_client,
    check_layout,
    entity_configs,
    fault_rounds,
    notification_counts,
    walk,
)
from kquotactl.backends.zookeeper.backend import ZooKeeperBackend
from kquotactl.backends.zookeeper.session import ZkSettings
from kquotactl.core.changes import EntityChange, Outcome
from kquotactl.core.entities import Entity
from kquotactl.core.errors import BackendUnavailable, PartialFailure

pytestmark = [pytest.mark.reliability, pytest.mark.zookeeper]

N_ENTITIES = int(os.environ.get("KQUOTACTL_FAULT_ENTITIES") or 10_000)  # the restart test's apply size
N_FOR_GOOD = min(N_ENTITIES, 5_000)  # the killed-for-good test reads everything back twice and re-runs
ROOT = "/r"


def _seed() -> int:
    seed = int(os.environ.get("KQUOTACTL_FAULT_SEED") or random.randrange(1 << 30))
    print(f"fault seed {seed} (replay with KQUOTACTL_FAULT_SEED={seed})")
    return seed


def _changes(n: int, value: int = 1000) -> list[EntityChange]:
    return [EntityChange(Entity(user=f"u{i}"), {"producer_byte_rate": value + i}) for i in range(n)]


def _backend(server, op_timeout: float = 15.0) -> ZooKeeperBackend:
    return ZooKeeperBackend(ZkSettings(connect=server.connect + ROOT, connect_timeout=10, op_timeout=op_timeout))


def _prepare(server) -> None:
    zk = admin_client(server.connect)
    zk.ensure_path(ROOT + "/brokers/ids")  # as a registered broker leaves it: kquotactl writes there
    zk.stop()
    zk.close()


def _read_back(server) -> tuple[dict[str, dict[str, str]], dict[str, int], list[str]]:
    zk = admin_client(server.connect)
    try:
        tree = walk(zk, ROOT)
    finally:
        zk.stop()
        zk.close()
    return entity_configs(tree), notification_counts(tree), check_layout(tree)


def _assert_exact(server, n: int, value: int = 1000) -> None:
    """Every entity holds its value and was notified exactly once; nothing stray."""
    configs, notes, stray = _read_back(server)
    assert stray == []
    want = {f"users/u{i}": {"producer_byte_rate": str(value + i)} for i in range(n)}
    lost = sum(1 for p, c in want.items() if configs.get(p) != c)
    COUNTS.checked_updates += n
    COUNTS.lost_updates += lost
    assert lost == 0
    assert configs == want
    assert set(notes) == set(want)
    dup = {p: c for p, c in notes.items() if c != 1}
    assert dup == {}, f"{len(dup)} entities notified more than once"


class _Killer:
    """Kills the server at a random point of an alter: in the read phase, or just after batch k committed
    (a few ms later, so the kill lands inside the next read or commit)."""

    def __init__(self, server, rng: random.Random, batches: int, phase: str | None = None) -> None:
        self.server = server
        self.rng = rng
        self.phase = phase or rng.choice(["read", "commit", "commit"])
        self.after_batch = rng.randrange(batches - 2)  # at least two batches left to hit
        self.delay = rng.uniform(0.0, 0.03) if self.phase == "commit" else rng.uniform(0.1, 1.5)
        self.committed = 0
        self.batches = batches
        self.fired = threading.Event()
        self._timer: threading.Timer | None = None

    def _kill(self) -> None:
        if not self.fired.is_set():
            self.fired.set()
            self.server.kill()
            COUNTS.faults += 1

    def start(self) -> None:
        if self.phase == "read":
            self._timer = threading.Timer(self.delay, self._kill)
            self._timer.start()

    def progress(self, n: int) -> None:
        self.committed += 1
        if self.phase == "commit" and self.committed == self.after_batch + 1 and self._timer is None:
            self._timer = threading.Timer(self.delay, self._kill)
            self._timer.start()
        elif self.committed > self.after_batch + 1 if self.phase == "commit" else self.committed >= self.batches - 2:
            self._kill()  # the timer was too slow (fast commits): kill now, while batches are left

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def __str__(self) -> str:
        where = f"after batch {self.after_batch}" if self.phase == "commit" else "in the read phase"
        return f"kill {where} +{self.delay * 1000:.0f}ms"


def _run_alter_with_killer(server, backend, changes, killer: _Killer, restart_after: float | None):
    """Run the alter in a thread while the killer fires; optionally restart the server after a pause."""
    out: dict[str, object] = {}

    def run() -> None:
        t0 = time.monotonic()
        try:
            out["results"] = backend.alter(changes, progress=killer.progress)
        except Exception as e:  # the test inspects it
            out["error"] = e
        out["elapsed"] = time.monotonic() - t0

    th = threading.Thread(target=run)
    killer.start()
    th.start()
    if restart_after is not None and killer.fired.wait(timeout=120):
        time.sleep(restart_after)
        server.start()
    th.join(timeout=180)
    killer.cancel()
    assert not th.is_alive(), "alter hung after the server was killed"
    return out


@pytest.mark.parametrize("round_", range(fault_rounds(1)))
def test_killed_and_restarted_mid_apply_rides_it_out_exactly_once(own_zk, round_) -> None:
    """ZooKeeper SIGKILLed at a random point of a 10,000-entity apply, back after 0.5-3 s: the apply
    waits for the reconnect, settles the transaction whose answer was lost, and finishes; every entity
    written and notified exactly once."""
    rng = random.Random(_seed())
    _prepare(own_zk)
    changes = _changes(N_ENTITIES)
    killer = _Killer(own_zk, rng, batches=N_ENTITIES // 500)
    restart_after = rng.uniform(0.5, 3.0)
    print(killer, f"restart after {restart_after:.1f}s")
    with _backend(own_zk, op_timeout=20) as b:
        out = _run_alter_with_killer(own_zk, b, changes, killer, restart_after)
    assert killer.fired.is_set()
    assert "error" not in out, out.get("error")
    results = out["results"]
    assert [r.outcome for r in results] == [Outcome.APPLIED] * N_ENTITIES  # type: ignore[union-attr]
    _assert_exact(own_zk, N_ENTITIES)


@pytest.mark.parametrize("round_", range(fault_rounds(1)))
def test_killed_for_good_mid_apply_reports_exactly_what_was_applied_and_rerun_converges(own_zk, round_) -> None:
    """ZooKeeper SIGKILLed and not back within the deadline: the apply fails within it, naming the
    applied, not-applied and unknown (one in-flight transaction) entities, and ZooKeeper agrees with it;
    after a restart a re-run converges with exactly one notification per entity."""
    n = N_FOR_GOOD
    rng = random.Random(_seed())
    _prepare(own_zk)
    changes = _changes(n)
    killer = _Killer(own_zk, rng, batches=n // 500, phase="commit")
    print(killer)
    op_timeout = 2.0
    with _backend(own_zk, op_timeout=op_timeout) as b:
        out = _run_alter_with_killer(own_zk, b, changes, killer, restart_after=None)
        assert killer.fired.is_set()
        err = out.get("error")
        assert isinstance(err, BackendUnavailable | PartialFailure), err
        assert "\n" not in str(err)
        # one bounded wait for the reconnect (plus one for a request in flight), not a hang
        assert out["elapsed"] < (killer.after_batch + 1) * 5 + 3 * op_timeout + 10
    own_zk.start()
    configs, notes, stray = _read_back(own_zk)
    assert stray == []
    written = {p for p in configs}
    assert written == set(notes), "an entity znode changed without its notification, or the reverse"
    assert all(c == 1 for c in notes.values())
    label_to_path = {f"user=u{i}": f"users/u{i}" for i in range(n)}
    if isinstance(err, PartialFailure):
        applied = {label_to_path[x] for x in err.applied}
        missing = {label_to_path[x] for x in err.not_applied}
        unknown = {label_to_path[x] for x in err.unknown}
        assert len(applied) + len(missing) + len(unknown) == n
        assert applied <= written
        assert not (missing & written)
        assert unknown <= written or not (unknown & written), "a transaction landed partly"
        assert str(len(applied)) in str(err) and "re-run" in str(err)
    # re-run converges: the rest applied, the written ones unchanged, one notification each in total
    with _backend(own_zk) as b:
        results = b.alter(changes)
    assert {r.outcome for r in results} <= {Outcome.APPLIED, Outcome.UNCHANGED}
    assert sum(r.outcome is Outcome.UNCHANGED for r in results) == len(written)
    _assert_exact(own_zk, n)


# -- a single alter: lost answers and session expiry ---------------------------------------------------


def _drop_connection(backend: ZooKeeperBackend) -> None:
    """Cut the client's TCP connection (as a network blip does); kazoo reconnects, same session."""
    sock = backend._client._connection._socket
    sock.shutdown(socket.SHUT_RDWR)


def _expire_session(backend: ZooKeeperBackend, connect: str) -> None:
    """Expire the backend's session for real: another client takes the session over and closes it."""
    from kazoo.client import KazooClient

    session_id, password = backend._client.client_id
    thief = KazooClient(connect, client_id=(session_id, password))
    thief.start(timeout=10)
    thief.stop()
    thief.close()


@pytest.mark.parametrize("landed", [True, False], ids=["commit-landed", "commit-lost"])
def test_lost_commit_answer_is_settled_by_reading_back_never_rewritten(own_zk, landed) -> None:
    """The connection drops right after a commit was sent. If it landed, the alter reports it applied
    without writing it again (one notification; a delete without --if-exists does not fail on its own
    effect); if it did not, the alter retries it once."""
    _prepare(own_zk)
    entity = Entity(user="alice")
    with _backend(own_zk) as b:
        b.alter([EntityChange(entity, {"producer_byte_rate": 1, "consumer_byte_rate": 2})])
        real_commit = b._commit
        calls = []

        def flaky_commit(batch):
            calls.append(len(batch))
            if len(calls) == 1:
                if landed:
                    real_commit(batch)
                _drop_connection(b)
                COUNTS.faults += 1
                from kquotactl.backends.zookeeper.session import ConnectionTrouble

                raise ConnectionTrouble("lost the ZooKeeper connection (commit): ConnectionLoss")
            return real_commit(batch)

        b._commit = flaky_commit  # type: ignore[method-assign]
        [r] = b.alter([EntityChange(entity, {"producer_byte_rate": 5}, frozenset({"consumer_byte_rate"}))])
    assert r.outcome is Outcome.APPLIED, r
    assert calls == ([1] if landed else [1, 1])
    configs, notes, _ = _read_back(own_zk)
    assert configs == {"users/alice": {"producer_byte_rate": "5"}}
    assert notes == {"users/alice": 2}  # the first alter, and this one once


def test_session_expiry_between_read_and_commit_loses_nothing(own_zk) -> None:
    """The session expires after the alter read the entity and before it commits, while another writer
    changes the same entity: the alter reconnects with a new session, its stale compare-and-set fails,
    it re-reads and re-applies only its own key. Both updates survive; each is notified once."""
    _prepare(own_zk)
    entity = Entity(user="bob", client_id="app")
    with _backend(own_zk) as b, _backend(own_zk) as other:
        b.alter([EntityChange(entity, {"producer_byte_rate": 1})])
        real_plan = b._plan_round
        rounds = []

        def plan_then_expire(pending, expected, results):
            plans = real_plan(pending, expected, results)
            rounds.append(len(plans))
            if len(rounds) == 1:
                other.alter([EntityChange(entity, {"consumer_byte_rate": 7})])  # lands first
                _expire_session(b, own_zk.connect)
                COUNTS.faults += 1
            return plans

        b._plan_round = plan_then_expire  # type: ignore[method-assign]
        [r] = b.alter([EntityChange(entity, {"request_percentage": 50.0})])
        assert r.outcome is Outcome.APPLIED
        assert len(rounds) >= 2  # the first commit could not count
    configs, notes, _ = _read_back(own_zk)
    assert configs["users/bob/clients/app"] == {
        "producer_byte_rate": "1",
        "consumer_byte_rate": "7",
        "request_percentage": "50.0",
    }
    assert notes == {"users/bob/clients/app": 3}
    COUNTS.checked_updates += 3


def test_connection_drop_during_a_read_is_ridden_out(own_zk) -> None:
    _prepare(own_zk)
    with _backend(own_zk) as b:
        b.alter(_changes(300))
        real = b._session._get_chunk
        dropped = []

        def drop_then_read(chunk):
            if not dropped:
                dropped.append(1)
                _drop_connection(b)
                COUNTS.faults += 1
            return real(chunk)

        b._session._get_chunk = drop_then_read  # type: ignore[method-assign]
        records = b.describe()
    assert dropped and len(records) == 300


# -- bounded waits: server down or hung -> exit 1, one line, within the deadline ----------------------------


def _one_line_exit_1(r, started: float, bound: float) -> None:
    elapsed = time.monotonic() - started
    assert r.exit_code == 1, (r.stdout, r.stderr)
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("kquotactl: error: "), r.stderr
    assert "Traceback" not in r.stderr
    assert elapsed < bound, f"took {elapsed:.1f}s"


@pytest.mark.parametrize("command", ["describe", "alter"])
def test_server_down_exits_1_with_one_line_within_the_connect_timeout(own_zk, command) -> None:
    own_zk.kill()
    COUNTS.faults += 1
    args = ["describe"] if command == "describe" else ["alter", "--user", "a", "--add-config", "producer_byte_rate=1"]
    t0 = time.monotonic()
    r = run_subprocess("--zookeeper", own_zk.connect, "--connect-timeout", "2", "--timeout", "2", *args)
    _one_line_exit_1(r, t0, bound=2 + 8)
    assert "cannot connect to ZooKeeper" in r.stderr


def test_hung_server_at_connect_exits_1_within_the_connect_timeout(own_zk) -> None:
    own_zk.freeze()
    COUNTS.faults += 1
    t0 = time.monotonic()
    r = run_subprocess("--zookeeper", own_zk.connect, "--connect-timeout", "2", "describe")
    own_zk.thaw()
    _one_line_exit_1(r, t0, bound=2 + 8)


def test_hung_server_mid_read_fails_within_one_op_timeout_though_reads_are_awaited_in_batches(own_zk) -> None:
    """A pipelined read that caught up sleeps until a later answer (session.WAKE_BATCH); when the server freezes,
    that sleep is the op timeout and the oldest request is not awaited a second op timeout."""
    _prepare(own_zk)
    b = _backend(own_zk, op_timeout=2)
    b.alter(_changes(300))
    b.describe()  # the /brokers check is behind us: the next describe starts with pipelined reads
    own_zk.freeze()
    COUNTS.faults += 1
    t0 = time.monotonic()
    try:
        with pytest.raises(BackendUnavailable, match="did not answer") as info:
            b.describe()
        failed_after = time.monotonic() - t0
    finally:
        b.close()
        own_zk.thaw()
    assert "\n" not in str(info.value)
    assert 2 <= failed_after < 2 + 1.5, failed_after


def test_hung_server_mid_command_fails_within_the_op_timeout_and_close_does_not_hang(own_zk) -> None:
    """The server freezes after the connection is up: the request gets no answer, the alter fails after
    the op timeout with one line, and closing the client does not wait for the frozen server."""
    _prepare(own_zk)
    b = _backend(own_zk, op_timeout=2)
    b.alter(_changes(10))
    own_zk.freeze()
    COUNTS.faults += 1
    t0 = time.monotonic()
    with pytest.raises(BackendUnavailable) as info:
        b.alter(_changes(10, value=5000))
    failed_after = time.monotonic() - t0
    b.close()
    closed_after = time.monotonic() - t0
    own_zk.thaw()
    assert "\n" not in str(info.value)
    assert failed_after < 2 * 2 + 3, failed_after
    assert closed_after < failed_after + 3, closed_after
