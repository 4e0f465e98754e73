"""Small helpers shared by the benchmark scripts."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

KQUOTACTL = str(Path(sys.executable).with_name("kquotactl"))


def time_command(cmd: Sequence[str], runs: int = 15, warmup: int = 2, env: dict | None = None) -> float:
    """Median wall time (seconds) of a subprocess.

    Byte-code caching is left on (the warm-up runs write the ``.pyc`` files) even if this shell sets
    ``PYTHONDONTWRITEBYTECODE``: an installed package has its byte code, and compiling every module on each
    start would add ~60 ms to every figure.
    """
    if env is None:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    samples = []
    for i in range(warmup + runs):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
        if i >= warmup:
            samples.append(time.perf_counter() - t)
    return statistics.median(samples)


def time_call(fn: Callable[[], object], runs: int = 5, warmup: int = 1) -> float:
    samples = []
    for i in range(warmup + runs):
        t = time.perf_counter()
        fn()
        if i >= warmup:
            samples.append(time.perf_counter() - t)
    return statistics.median(samples)


def row(label: str, seconds: float, base: float | None = None) -> str:
    ratio = f"  ({seconds / base:.2f}x)" if base else ""
    return f"  {label:<58} {seconds * 1000:9.1f} ms{ratio}"


def tsdb_from_openmetrics(text: Path, data: Path) -> Path:
    """TSDB blocks of an OpenMetrics file (``promtool tsdb create-blocks-from openmetrics``), for a real
    Prometheus to serve (``PrometheusServer(tsdb=...)``); the text file is removed."""
    subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(text), str(data)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    text.unlink()
    return data


def measured(cmd: Sequence[str], env: dict[str, str] | None = None) -> tuple[float, float, str]:
    """Wall seconds, peak resident MiB and standard output of ``cmd`` in a fresh process (reaped with ``wait4``,
    which gives that one child's peak)."""
    import tempfile

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        began = time.perf_counter()
        proc = subprocess.Popen(list(cmd), stdout=out, stderr=err, env=env or dict(os.environ))
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.perf_counter() - began
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode:
            raise SystemExit(f"{' '.join(cmd[:4])} failed: {err.read().decode()[-2000:]}")
        return seconds, usage.ru_maxrss / 1024, out.read().decode()
