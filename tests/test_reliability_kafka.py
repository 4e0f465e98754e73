"""Kafka through the admin API: SASL_SSL (SCRAM) with PEM certificates made in the test, and a broker
killed in the middle of a batched apply.

One private KRaft broker for the module (the session broker is shared with other suites and must not be
killed): PLAINTEXT and SASL_PLAINTEXT as the harness sets them up, plus a SASL_SSL listener whose key store
and trust store are PEM files from :mod:`kquotactl.testing.pki`.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import run_cli
from fixtures_reliability import COUNTS
from kquotactl.core.changes import EntityChange, Outcome
from kquotactl.core.entities import Entity
from kquotactl.core.errors import PartialFailure, QuotaError
from kquotactl.testing.kafka import KRaftKafkaServer
from kquotactl.testing.pki import Pki, make_pki
from kquotactl.testing.servers import free_port

pytestmark = [pytest.mark.reliability, pytest.mark.kafka]

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule required;"


@pytest.fixture(scope="module")
def tls_kafka(tmp_path_factory) -> Iterator[tuple[KRaftKafkaServer, Pki, int]]:
    pki = make_pki(tmp_path_factory.mktemp("kafka-pki"))
    p, c, s, t = (free_port() for _ in range(4))
    server = KRaftKafkaServer(
        port=p,
        controller_port=c,
        sasl_port=s,
        extra_props={
            "listeners": f"PLAINTEXT://127.0.0.1:{p},CONTROLLER://127.0.0.1:{c},"
            f"SASL_PLAINTEXT://127.0.0.1:{s},SASL_SSL://127.0.0.1:{t}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{p},SASL_PLAINTEXT://127.0.0.1:{s},SASL_SSL://127.0.0.1:{t}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,"
            "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
            "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": SCRAM,
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": SCRAM,
            # the harness enables PLAIN too (sasl.enabled.mechanisms): every SASL listener needs its login module
            "listener.name.sasl_ssl.plain.sasl.jaas.config": "org.apache.kafka.common.security.plain.PlainLoginModule "
            'required user_admin="admin-secret";',
            "listener.name.sasl_ssl.ssl.keystore.type": "PEM",
            "listener.name.sasl_ssl.ssl.keystore.location": str(pki.server.bundle),
            "listener.name.sasl_ssl.ssl.truststore.type": "PEM",
            "listener.name.sasl_ssl.ssl.truststore.location": str(pki.ca),
        },
    )
    server.start(timeout=240)
    yield server, pki, t
    server.close()


def _command_config(d: Path, pki: Pki, user: str, password: str, mechanism: str = "SCRAM-SHA-512") -> Path:
    f = d / f"admin-{mechanism}-{user}.properties"
    f.write_text(
        "security.protocol=SASL_SSL\n"
        f"sasl.mechanism={mechanism}\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{user}" password="{password}";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={pki.ca}\n"
    )
    return f


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_ssl_scram_with_pem_certificates(tls_kafka, tmp_path, mechanism) -> None:
    server, pki, port = tls_kafka
    cfg = _command_config(tmp_path, pki, server.scram_user, server.scram_password, mechanism)
    bs = ("--bootstrap-server", f"127.0.0.1:{port}", "--command-config", str(cfg))
    user = f"tls-{mechanism.lower()}"
    r = run_cli(*bs, "alter", "--user", user, "--add-config", "producer_byte_rate=1024")
    assert r.exit_code == 0, r.stderr
    deadline = time.monotonic() + 15
    while True:  # KRaft brokers apply the controller's records asynchronously
        r = run_cli(*bs, "describe", "--user", user, "-o", "json")
        if r.exit_code == 0 and json.loads(r.stdout):
            break
        assert time.monotonic() < deadline, r.stderr
        time.sleep(0.2)
    assert json.loads(r.stdout) == [{"entity": {"user": user}, "config": {"producer_byte_rate": 1024}}]


@pytest.mark.parametrize(
    "case", ["wrong-password", "unknown-user", "untrusted-ca", "plaintext-client", "wrong-port-tls"]
)
def test_bad_credentials_or_certificates_fail_with_one_clear_line(tls_kafka, tmp_path, case) -> None:
    server, pki, port = tls_kafka
    user, password, target = server.scram_user, server.scram_password, f"127.0.0.1:{port}"
    if case == "wrong-password":
        password = "not-the-password"
    if case == "unknown-user":
        user = "mallory"
    cfg = _command_config(tmp_path, pki, user, password)
    if case == "untrusted-ca":
        cfg.write_text(cfg.read_text().replace(str(pki.ca), str(pki.stranger.cert)))
    if case == "plaintext-client":
        cfg.write_text("security.protocol=PLAINTEXT\n")
    if case == "wrong-port-tls":
        target = server.bootstrap  # a PLAINTEXT listener spoken to with TLS
    t0 = time.monotonic()
    r = run_cli("--bootstrap-server", target, "--command-config", str(cfg), "--connect-timeout", "5",
                "--timeout", "5", "describe")  # fmt: skip
    elapsed = time.monotonic() - t0
    assert r.exit_code == 1, r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kquotactl: error: "), r.stderr
    assert "not-the-password" not in r.stderr and server.scram_password not in r.stderr
    assert elapsed < 5 + 10
    if case in ("wrong-password", "unknown-user"):
        assert "auth" in lines[0].lower(), lines[0]
    COUNTS.faults += 1


def test_broker_killed_mid_apply_reports_exact_results_and_a_rerun_converges(tls_kafka) -> None:
    """SIGKILL the broker after the first of three AlterClientQuotas requests answered: the applied
    entities are named, the in-flight request's entities are all-or-none (a controller applies one request
    atomically), the rest were not sent; after a restart a re-run converges."""
    from kquotactl.backends.kafka.quotas import MAX_ENTRIES_PER_REQUEST, AdminBackend

    server, _, _ = tls_kafka
    n = 3 * MAX_ENTRIES_PER_REQUEST
    changes = [EntityChange(Entity(client_id=f"kill-{i:05d}"), {"request_percentage": 10.0 + i}) for i in range(n)]
    calls = []

    def kill_after_first(done: int) -> None:
        calls.append(done)
        if len(calls) == 1:
            assert server._proc is not None
            os.killpg(server._proc.pid, signal.SIGKILL)
            server._proc.wait()
            COUNTS.faults += 1

    t0 = time.monotonic()
    with AdminBackend.connect(server.bootstrap, connect_timeout=5, timeout=5) as b, pytest.raises(QuotaError) as info:
        b.alter(changes, progress=kill_after_first)
    assert time.monotonic() - t0 < 60
    err = info.value
    assert "\n" not in str(err)
    assert isinstance(err, PartialFailure), err
    applied = set(err.applied)
    assert len(applied) == MAX_ENTRIES_PER_REQUEST
    unknown, not_applied = set(err.unknown), set(err.not_applied)
    assert len(unknown) == MAX_ENTRIES_PER_REQUEST and len(not_applied) == n - 2 * MAX_ENTRIES_PER_REQUEST
    assert len(applied | unknown | not_applied) == n

    server._proc = None
    server.start(timeout=240)  # same log directory: the committed quotas survive
    deadline = time.monotonic() + 30
    with AdminBackend.connect(server.bootstrap, connect_timeout=10, timeout=30) as b:
        while True:
            live = {r.entity.label() for r in b.describe() if str(r.entity.client_id).startswith("kill-")}
            if applied <= live or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert applied <= live, "an entity reported applied is missing"
        assert not (live & not_applied), "an entity reported not applied is there"
        assert not (live & unknown) or unknown <= live, "the in-flight request landed partly"
        results = b.alter(changes)
        assert {r.outcome for r in results} <= {Outcome.APPLIED, Outcome.UNCHANGED}
        assert sum(r.outcome is Outcome.UNCHANGED for r in results) == len(live)
        deadline = time.monotonic() + 30
        while len([r for r in b.describe() if str(r.entity.client_id).startswith("kill-")]) < n:
            assert time.monotonic() < deadline
            time.sleep(0.5)
        b.alter([EntityChange(c.entity, remove=frozenset(c.set)) for c in changes])
    COUNTS.checked_updates += n


@pytest.mark.parametrize("password", ["good", "bad"])
def test_scram_password_never_in_debug_output(tls_kafka, tmp_path, password) -> None:
    server, pki, port = tls_kafka
    secret = server.scram_password if password == "good" else "Wr0ng-S3cret-Pa55"
    cfg = _command_config(tmp_path, pki, server.scram_user, secret)
    r = run_cli("--debug", "-v", "--bootstrap-server", f"127.0.0.1:{port}", "--command-config", str(cfg),
                "--connect-timeout", "5", "describe", "-o", "json")  # fmt: skip
    assert (r.exit_code == 0) == (password == "good"), r.stderr[-2000:]
    assert secret not in r.stdout + r.stderr


@pytest.mark.parametrize("command", ["describe", "alter"])
def test_frozen_broker_gives_one_line_within_the_timeouts(tls_kafka, command) -> None:
    """A broker that keeps its sockets open but never answers (SIGSTOP): no 30 s bootstrap wait, no hang."""
    server, _, _ = tls_kafka
    assert server._proc is not None
    args = ["describe"] if command == "describe" else ["alter", "--user", "f", "--add-config", "producer_byte_rate=1"]
    os.killpg(server._proc.pid, signal.SIGSTOP)
    COUNTS.faults += 1
    try:
        t0 = time.monotonic()
        r = run_cli("--bootstrap-server", server.bootstrap, "--connect-timeout", "3", "--timeout", "3", *args)
        elapsed = time.monotonic() - t0
    finally:
        os.killpg(server._proc.pid, signal.SIGCONT)
    assert r.exit_code == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kquotactl: error: "), r.stderr
    assert elapsed < 3 + 3 + 5, elapsed
