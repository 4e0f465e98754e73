"""A broker fenced by the controllers but still running (the newest release the harness runs): one controller alone,
two brokers, the second broker's link to the controller through a TCP proxy the test cuts.

Cut off, broker 3 keeps answering clients from its last metadata image, where it is still alive and unfenced
(Metadata and DescribeCluster through it list it so); the controller fences it once its heartbeats stop
(``session_ms``), and broker 2 sees that. A write through broker 3 is forwarded to the controller over the cut link
and times out. Measured on Kafka 4.4, and the ground for what kquotactl does (docs/reliability.md): ``verify``
names broker 3 fenced and never counts it, through either broker; a read through broker 3 warns that it is fenced,
an ``apply`` through it is refused, nothing written; once the link is back broker 3 catches up and ``verify``
converges on both.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from fixtures_reliability import COUNTS
from kquotactl.backends.kafka import client
from kquotactl.backends.kafka.quotas import AdminBackend
from kquotactl.core.changes import EntityChange
from kquotactl.core.entities import Entity
from kquotactl.core.keys import PRODUCE_KEY
from kquotactl.testing.kafka import KRaftSplitCluster
from kquotactl.testing.proxy import TcpProxy

pytestmark = [pytest.mark.reliability, pytest.mark.kafka]

T = 3  # --connect-timeout and --timeout of the commands run while broker 3 is cut off, s
FENCED = "fenced: shut down, restarting or cut off from the controllers (not asked: its metadata may be old)"


@pytest.fixture(scope="module")
def split() -> Iterator[KRaftSplitCluster]:
    cluster = KRaftSplitCluster()
    cluster.start()
    yield cluster
    cluster.close()


def kq(bootstrap: str, *args: str, timeout: float = T) -> tuple[int, str, list[str]]:
    """The console entry point in its own process: exit code, standard output, standard error's lines."""
    cmd = [sys.executable, "-m", "kquotactl", "--bootstrap-server", bootstrap, "--connect-timeout", str(T),
           "--timeout", str(timeout), *args]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout, r.stderr.strip().splitlines()


def seen_by(bootstrap: str, client_id: str, broker: int) -> float | None:
    with AdminBackend.connect(bootstrap, connect_timeout=5, timeout=10) as b:
        found = b.describe(broker=broker)
    return next((float(r.config[PRODUCE_KEY]) for r in found if r.entity.client_id == client_id), None)


def fenced_seen_by(bootstrap: str) -> list[int]:
    with AdminBackend.connect(bootstrap, connect_timeout=5, timeout=10) as b:
        return b.fenced_broker_ids()


def wait_until(what: str, cond, timeout: float = 60) -> float:
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        with contextlib.suppress(Exception):  # a broker restarting its link answers errors for a moment
            if cond():
                return time.monotonic() - t0
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {timeout} s")


def test_the_proxy_refuses_and_resets_while_cut_and_carries_again_once_restored() -> None:
    """The fault itself, without Kafka: a cut resets open connections and refuses new ones; restored, it carries."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        proxy = TcpProxy(target=server.getsockname()[1]).start()
        try:
            client = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
            peer, _ = server.accept()
            client.sendall(b"ping")
            assert peer.recv(4) == b"ping"
            proxy.cut()
            assert client.recv(4) == b"" or pytest.fail("still connected")
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
            proxy.restore()
            again = socket.create_connection(("127.0.0.1", proxy.port), timeout=5)
            peer2, _ = server.accept()
            peer2.sendall(b"pong")
            assert again.recv(4) == b"pong"
            for s in (client, peer, again, peer2):
                s.close()
        finally:
            proxy.close()


def test_a_fenced_broker_still_running_is_named_never_counted_and_never_written_through(split, tmp_path) -> None:
    """Broker 3 cut off from the controller until it is fenced. ``verify`` through broker 2 or broker 3 alone names
    it fenced and fails (for a value set after the cut, and for one it still holds from before); ``apply --verify``
    through broker 2 writes and is never verified on broker 3; ``describe``/``plan`` through broker 3 answer its
    old image with a warning naming it; ``apply``/``alter`` through it are refused, nothing written, not even
    once the link is back. Restored: unfenced, caught up, ``verify`` converges on both."""
    a, b = split.brokers[0].bootstrap, split.brokers[1].bootstrap
    assert split.proxy is not None and split.proxy.accepted > 0, "broker 3's controller link must go through the proxy"
    with AdminBackend.connect(a, connect_timeout=5, timeout=10) as admin:
        admin.alter([EntityChange(Entity(client_id=c), {PRODUCE_KEY: 1000}) for c in ("fb", "fp")])
    wait_until("both brokers at 1000", lambda: seen_by(a, "fp", 2) == seen_by(a, "fp", 3) == 1000)

    t_cut = time.monotonic()
    split.cut()
    COUNTS.faults += 1
    try:
        fenced_after = wait_until("broker 3 fenced", lambda: fenced_seen_by(a) == [3], 60)
        with AdminBackend.connect(b, connect_timeout=5, timeout=10) as through_b:
            b_lists = through_b.broker_ids()  # Metadata from broker 3's own, old image
            with pytest.MonkeyPatch.context() as mp:  # DescribeCluster through broker 3 alone: its own view
                mp.setattr(client, "FENCING_OPINIONS", 0)
                b_own = through_b.wire.fencing()
            b_fencing = through_b.wire.fencing()  # DescribeCluster through broker 3, and broker 2's second opinion
        with AdminBackend.connect(a, connect_timeout=5, timeout=10) as admin:
            admin.alter([EntityChange(Entity(client_id="fb"), {PRODUCE_KEY: 2000})])
        time.sleep(1)
        stale = seen_by(b, "fb", 3)  # broker 3 asked directly: its old image
        expect = ["verify", "--client-id", "fb", "--expect", f"{PRODUCE_KEY}=2000"]
        v_a = kq(a, *expect)
        v_b = kq(b, *expect)  # broker 3 alone: the node asked is the fenced one
        v_pre = kq(b, "verify", "--client-id", "fp", "--expect", f"{PRODUCE_KEY}=1000")  # its old value is right
        m = tmp_path / "fb.yaml"
        m.write_text(f"quotas:\n- {{entity: {{client-id: fb}}, config: {{{PRODUCE_KEY}: 3000}}}}\n")
        av = kq(a, "apply", "-f", str(m), "--yes", "--verify")
        d_b = kq(b, "describe", "--client-id", "fb", "-o", "json")
        p_b = kq(b, "plan", "-f", str(m))
        m4 = tmp_path / "fb4.yaml"
        m4.write_text(f"quotas:\n- {{entity: {{client-id: fb}}, config: {{{PRODUCE_KEY}: 4000}}}}\n")
        ap_b = kq(b, "apply", "-f", str(m4), "--yes")
        al_b = kq(b, "alter", "--client-id", "fb-b", "--add-config", f"{PRODUCE_KEY}=5000")
        after_b = seen_by(a, "fb", 2)
    finally:
        t_restore = time.monotonic()
        split.restore()
    caught_up = wait_until(
        "broker 3 unfenced and caught up",
        lambda: fenced_seen_by(a) == [] and seen_by(a, "fb", 3) == 3000,
        60,
    )
    v_after = kq(a, *expect[:-1], f"{PRODUCE_KEY}=3000", timeout=30)
    d_after = kq(b, "describe", "--client-id", "fb", "-o", "json")
    fb_b = seen_by(a, "fb-b", 2)
    print(f"\nbroker 3 fenced {fenced_after:.1f} s after the cut; unfenced and caught up {caught_up:.1f} s after the "
          f"restore (cut for {t_restore - t_cut:.1f} s)\nverify through 2: {v_a}\nverify through 3: {v_b}\n"
          f"verify through 3 of a value set before the cut: {v_pre}\n"
          f"apply --verify through 2: {av}\ndescribe through 3: {d_b}\nplan through 3: {p_b}\n"
          f"apply through 3: {ap_b}\nalter through 3: {al_b}\nverify after: {v_after}\nfb-b after: {fb_b}")  # fmt: skip

    # what Kafka does: broker 3's own Metadata and DescribeCluster list it alive and unfenced; asked directly, it
    # answers its old value; broker 2, asked too, sees it fenced
    assert b_lists == [2, 3] and stale == 1000 and (b_own.asked, b_own.fenced) == (3, []), b_own
    assert (b_fencing.asked, b_fencing.fenced, b_fencing.address) == (3, [3], b), b_fencing
    # verify, through broker 2 or through broker 3 alone: broker 3 named fenced, never counted
    for (code, out, lines), name in ((v_a, "fb"), (v_b, "fb"), (v_pre, "fp")):
        assert code == 1 and out == "", (code, out, lines)
        assert len(lines) == 1, lines
        assert lines[0].startswith(f"kquotactl: error: client-id={name}: could not ask every broker within "), lines
        assert lines[0].endswith(f"s (broker 3: {FENCED})"), lines
    # apply --verify through broker 2: written, never verified on broker 3
    code, out, lines = av
    assert code == 1 and f"broker 3: {FENCED}" in lines[-1], (code, out, lines)
    assert "client-id=fb" in lines[-1] and "could not ask every broker" in lines[-1], lines
    # reads through broker 3: its old image, with a warning naming it fenced
    warning = (
        f"kquotactl: warning: broker 3 ({b}), the broker asked, is fenced: cut off from the controllers or "
        "restarting: it answers from an old metadata image, so these quotas may be stale (ask another broker)"
    )
    code, out, lines = d_b
    assert code == 0 and lines == [warning], (code, lines)
    assert json.loads(out) == [{"entity": {"client-id": "fb"}, "config": {PRODUCE_KEY: 1000}}], out
    code, out, lines = p_b
    assert warning in lines, lines
    # writes through broker 3: apply refused, nothing written; alter forwarded over the cut link, outcome unknown
    refused = [
        f"kquotactl: error: broker 3 ({b}), the broker asked, is fenced: cut off from the controllers or "
        "restarting: its quotas may be old and a write through it cannot reach the controllers; give another "
        "broker's address"
    ]
    for code, out, lines in (ap_b, al_b):
        assert code == 1 and out == "" and lines == refused, (code, out, lines)
    assert after_b == 3000 and fb_b is None  # nothing written, then or once the link was back
    # the link back: broker 3 unfenced, caught up; verify converges on both brokers, reads through 3 do not warn
    code, out, lines = v_after
    assert code == 0, lines
    report = json.loads(out)
    assert report["converged"] and report["brokers"] == [
        {"broker": f"broker {n}", "config": {PRODUCE_KEY: 3000}} for n in (2, 3)
    ], report
    code, out, lines = d_after
    assert code == 0 and lines == [] and json.loads(out)[0]["config"] == {PRODUCE_KEY: 3000}, (lines, out)
