"""Real observation parts for ``kquotactl top``'s tests: the Prometheus JMX exporter agent for brokers, and a
Prometheus server (Debian's ``prometheus`` package, ``/usr/bin/prometheus``) scraping them on 127.0.0.1.

The agent jar comes from Maven Central like the brokers' jars (``maven/jmx-exporter.xml``); Prometheus runs with a
temporary configuration and TSDB directory, a 1 s scrape interval, and is stopped (its directory removed) on close.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path

from kquotactl.testing.oracle import JavaOracle, compile_driver
from kquotactl.testing.servers import fetch_jars, free_port, stop_process_group

PROMETHEUS = os.environ.get("KQUOTACTL_PROMETHEUS", "/usr/bin/prometheus")


def exporter_rules() -> Path:
    """The rules file kquotactl ships (package data), the one docs/observe.md tells operators to deploy."""
    return Path(str(files("kquotactl.observe").joinpath("jmx-exporter-kafka-quotas.yaml")))


def jmx_agent_opts(port: int, rules: Path | None = None) -> list[str]:
    """JVM arguments that make a broker serve its quota sensors on ``http://127.0.0.1:PORT/metrics``."""
    jar = next(fetch_jars("jmx-exporter").glob("jmx_prometheus_javaagent-*.jar"))
    return [f"-javaagent:{jar}=127.0.0.1:{port}:{rules or exporter_rules()}"]


class ExporterOracle(JavaOracle):
    """Kafka's metric naming (``JmxNamingOracle``: the broker's quota tags through Kafka's ``JmxReporter``) in a
    JVM with the real exporter agent and the shipped rules attached, serving ``http://127.0.0.1:PORT/metrics`` as a
    broker would (``url``)."""

    def __init__(self, version: str, rules: Path | None = None) -> None:
        self.version = version
        self.driver = "JmxNamingOracle"
        self.port = free_port()
        classes, cp = compile_driver(version, self.driver)
        java = shutil.which("java") or "java"
        cmd = [java, *jmx_agent_opts(self.port, rules), "-Xmx256m", "-cp", f"{classes}{os.pathsep}{cp}", self.driver]
        self._proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, encoding="utf-8"
        )
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"127.0.0.1:{self.port}"


@dataclass
class PrometheusServer:
    """``/usr/bin/prometheus`` scraping ``targets`` (host:port) every ``interval`` s (1) as job ``job``, on a free
    127.0.0.1 port, evaluating ``rule_files`` (recording and alerting rules) every second."""

    targets: list[str] = field(default_factory=list)
    port: int = 0
    interval: float = 1.0  # scrape interval and timeout, seconds: longer for an exporter serving all of a broker
    workdir: Path | None = None
    _proc: subprocess.Popen[bytes] | None = None
    job: str = "kafka"
    rule_files: list[Path] = field(default_factory=list)
    #: a TSDB already written (``promtool tsdb create-blocks-from``): served as it is, never expired, queries of
    #: any size allowed (benches of weeks of synthetic series)
    tsdb: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> PrometheusServer:
        self.workdir = Path(tempfile.mkdtemp(prefix="kquotactl-prometheus-"))
        self.port = self.port or free_port()
        targets = ", ".join(f'"{t}"' for t in self.targets)
        rules = "".join(f'  - "{p}"\n' for p in self.rule_files)
        (self.workdir / "prometheus.yml").write_text(
            f"global:\n  scrape_interval: {self.interval:g}s\n  scrape_timeout: {self.interval:g}s\n"
            "  evaluation_interval: 1s\n"
            + (f"rule_files:\n{rules}" if rules else "")
            + f"scrape_configs:\n  - job_name: {self.job}\n    static_configs:\n      - targets: [{targets}]\n"
        )
        cmd = [
            PROMETHEUS,
            f"--config.file={self.workdir / 'prometheus.yml'}",
            f"--storage.tsdb.path={self.tsdb or self.workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--log.level=warn",
        ]
        if self.tsdb is not None:
            cmd += ["--storage.tsdb.retention.time=100y", "--query.max-samples=1000000000"]
        out = open(self.workdir / "prometheus.log", "ab")  # noqa: SIM115 - handed to the child process
        self._proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"prometheus exited with {self._proc.returncode}:\n{self.log_tail()}")
            with contextlib.suppress(OSError), urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as r:
                if r.status == 200:
                    return self
            time.sleep(0.2)
        raise RuntimeError(f"prometheus not ready in {timeout:g}s:\n{self.log_tail()}")

    def log_tail(self, n: int = 30) -> str:
        p = (self.workdir or Path(".")) / "prometheus.log"
        return "\n".join(p.read_text(errors="replace").splitlines()[-n:]) if p.exists() else ""

    def close(self) -> None:
        if self._proc is not None:
            stop_process_group(self._proc)
        self._proc = None
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)
            self.workdir = None

    def __enter__(self) -> PrometheusServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
