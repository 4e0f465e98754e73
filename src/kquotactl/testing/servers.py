"""Start and stop real ZooKeeper (and, via :mod:`kquotactl.testing.kafka`, Kafka) processes.

Jars come from Maven Central through ``mvn dependency:copy-dependencies`` with the POMs shipped next to
this module, cached under ``$KQUOTACTL_CACHE`` (default ``~/.cache/kquotactl``). Servers listen on
127.0.0.1 only, on free ports, with data in a temporary directory that is removed on stop.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

MAVEN_DIR = Path(__file__).with_name("maven")


def cache_dir() -> Path:
    root = Path(os.environ.get("KQUOTACTL_CACHE") or Path.home() / ".cache" / "kquotactl")
    root.mkdir(parents=True, exist_ok=True)
    return root


def fetch_jars(name: str) -> Path:
    """Resolve ``maven/<name>.xml``'s runtime dependencies into the cache; return the jar directory."""
    pom = MAVEN_DIR / f"{name}.xml"
    out = cache_dir() / "jars" / name
    stamp = out / ".complete"
    if stamp.exists() and stamp.read_text() == pom.read_text():
        return out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    cmd = [
        "mvn",
        "-q",
        "-B",
        "-f",
        str(pom),
        "dependency:copy-dependencies",
        f"-DoutputDirectory={out}",
        "-DincludeScope=runtime",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"maven could not fetch {name} jars:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    stamp.write_text(pom.read_text())
    return out


def classpath(*dirs: Path) -> str:
    jars: list[str] = []
    for d in dirs:
        jars += sorted(str(p) for p in Path(d).glob("*.jar"))
    return os.pathsep.join(jars)


def free_port() -> int:
    with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def four_letter(port: int, word: str, timeout: float = 2.0) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(word.encode())
        chunks = []
        while True:
            data = s.recv(4096)
            if not data:
                break
            chunks.append(data)
    return b"".join(chunks).decode(errors="replace")


LOGBACK = """<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>{log}</file>
    <encoder><pattern>%d{{ISO8601}} %-5level [%thread] %logger{{1}} - %msg%n</pattern></encoder>
  </appender>
  <root level="{level}"><appender-ref ref="FILE"/></root>
</configuration>
"""


def stop_process_group(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM, timeout: float = 20.0) -> None:
    """Signal a server started with ``start_new_session=True`` (its whole process group), then SIGKILL it if it has
    not exited within ``timeout`` seconds; returns once it is gone."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@dataclass
class ZooKeeperServer:
    """A standalone ZooKeeper on 127.0.0.1 (QuorumPeerMain with a generated zoo.cfg)."""

    port: int = 0
    heap: str = "256m"
    extra_cfg: dict[str, str] = field(default_factory=dict)
    jvm_opts: list[str] = field(default_factory=list)
    log_level: str = "WARN"
    workdir: Path | None = None
    _proc: subprocess.Popen[bytes] | None = None
    _own_workdir: bool = False

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self, timeout: float = 60.0) -> ZooKeeperServer:
        jars = fetch_jars("zookeeper")
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="kquotactl-zk-"))
            self._own_workdir = True
        if not self.port:
            self.port = free_port()
        data = self.workdir / "data"
        data.mkdir(parents=True, exist_ok=True)
        cfg = {
            "tickTime": "2000",
            "dataDir": str(data),
            "clientPort": str(self.port),
            "clientPortAddress": "127.0.0.1",
            "maxClientCnxns": "0",
            "admin.enableServer": "false",
            "4lw.commands.whitelist": "ruok,srvr,stat,mntr,conf,cons",
            "forceSync": "no",
            **self.extra_cfg,
        }
        (self.workdir / "zoo.cfg").write_text("".join(f"{k}={v}\n" for k, v in cfg.items()))
        (self.workdir / "logback.xml").write_text(
            LOGBACK.format(log=self.workdir / "zookeeper.log", level=self.log_level)
        )
        cp = os.pathsep.join([str(self.workdir), classpath(jars)])
        cmd = [
            "java",
            f"-Xmx{self.heap}",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            *self.jvm_opts,
            "-cp",
            cp,
            "org.apache.zookeeper.server.quorum.QuorumPeerMain",
            str(self.workdir / "zoo.cfg"),
        ]
        out = open(self.workdir / "stdout.log", "ab")  # noqa: SIM115 - handed to the child process
        self._proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self._wait_ready(timeout)
        return self

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.poll() is not None:
                raise RuntimeError(f"ZooKeeper exited with {self._proc.returncode}: {self.log_tail()}")
            with contextlib.suppress(OSError):
                if four_letter(self.port, "ruok", 1.0) == "imok" and "Mode: standalone" in four_letter(
                    self.port, "srvr", 1.0
                ):
                    return
            time.sleep(0.05)
        raise RuntimeError(f"ZooKeeper did not become ready on port {self.port} in {timeout}s: {self.log_tail()}")

    def log_tail(self, n: int = 30) -> str:
        parts = []
        for name in ("stdout.log", "zookeeper.log"):
            p = (self.workdir or Path(".")) / name
            if p.exists():
                parts.append("\n".join(p.read_text(errors="replace").splitlines()[-n:]))
        return "\n".join(parts)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Stop the process (SIGKILL to simulate a crash); the data directory is kept for a restart."""
        if self._proc is None:
            return
        stop_process_group(self._proc, sig, timeout=15)
        self._proc = None

    def kill(self) -> None:
        """Crash the server (SIGKILL); the data directory stays for :meth:`start` on the same port."""
        self.thaw()
        self.stop(signal.SIGKILL)

    def freeze(self) -> None:
        """SIGSTOP the server: its sockets stay open but nothing answers (a hung server)."""
        if self.running:
            assert self._proc is not None
            os.killpg(self._proc.pid, signal.SIGSTOP)

    def thaw(self) -> None:
        """SIGCONT a frozen server (harmless otherwise)."""
        if self.running:
            assert self._proc is not None
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._proc.pid, signal.SIGCONT)

    def restart(self, timeout: float = 60.0) -> None:
        self.stop()
        self.start(timeout)

    def close(self) -> None:
        self.thaw()
        self.stop()
        if self._own_workdir and self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def __enter__(self) -> ZooKeeperServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
