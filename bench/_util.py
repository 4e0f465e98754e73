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
