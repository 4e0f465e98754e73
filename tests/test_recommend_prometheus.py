"""``recommend --from-prometheus`` streamed: a range read in many slices gives the report one slice gives, bit for
bit (the rates, the distributions, the limits and the replay), and the rates spilled to disk under a tiny memory
budget give the report they give held in memory, on a real Prometheus serving random synthetic sensors (written
as OpenMetrics, turned into blocks by ``promtool tsdb create-blocks-from openmetrics``); seed printed. The spill's
temporary directory is gone after success, an error and an interrupt; a disk without room is one line."""

from __future__ import annotations

import json
import os
import random
import subprocess
import time
from typing import Any, ClassVar

import pytest

from kquotactl.core.errors import QuotaError, Terminated
from kquotactl.core.recommend import Distribution, Level, Policy
from kquotactl.impact import spill
from kquotactl.impact.recommend import windowed_sample_rates
from kquotactl.impact.replay import Window
from kquotactl.observe import prometheus
from kquotactl.render.recommend import recommendation_json
from kquotactl.services.impact import Replay
from kquotactl.services.recommend import recommend_from_traffic
from kquotactl.testing.observe import PrometheusServer

pytestmark = pytest.mark.prometheus

SEED = int(os.environ.get("KQUOTACTL_FUZZ_SEED", random.randrange(2**32)))
SECONDS = 900


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Eight quota-ids on two brokers, a reading a second: steady, bursty, idle stretches; user and client-id
    sensors."""
    rng = random.Random(SEED)
    work = tmp_path_factory.mktemp("synthetic-sensors")
    end = int(time.time()) - 120
    start = end - SECONDS
    lines = ["# TYPE kafka_quota_byte_rate gauge"]
    for i in range(8):
        broker = f"b{1 + i % 2}:7071"
        labels = f'client_id="c{i % 3}",instance="{broker}",quota_type="Produce",user="u{i % 4}"'
        base, burst = rng.uniform(1e3, 1e6), rng.choice([1, 1, 5])
        for s in range(start, end):
            if rng.random() < 0.1:
                continue  # idle: no reading
            value = base * (burst if s % 120 < 15 else 1) * rng.uniform(0.9, 1.1)
            lines.append(f"kafka_quota_byte_rate{{{labels}}} {value!r} {s}")
    lines.append("# EOF")
    text = work / "sensors.om"
    text.write_text("\n".join(lines) + "\n")
    data = work / "data"
    subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", str(text), str(data)], check=True,
                   capture_output=True)  # fmt: skip
    with PrometheusServer(tsdb=data) as prom:
        yield prom, start, end


def _recommend(url: str, start: int, end: int, step: float, level: str) -> dict[str, Any]:
    policy = Policy(percentile=50.0, headroom=0.0, level=Level(level))  # tight: the replay throttles
    source = Replay(Window(), (), url, (start + 1.0, float(end), step), engine="local")
    found = recommend_from_traffic(source, policy)
    doc = {**recommendation_json(found.recommendation, found.distributions), "replayed": found.replayed}
    return json.loads(json.dumps({**doc, "rows": found.rows}))


@pytest.mark.parametrize(("step", "level"), [(1.0, "user-client"), (1.0, "user"), (2.0, "client-id")])
def test_many_slices_give_the_report_of_one(synthetic, monkeypatch, step: float, level: str) -> None:
    prom, start, end = synthetic
    whole = _recommend(prom.url, start, end, step, level)
    monkeypatch.setattr(prometheus, "POINTS_PER_QUERY", 1)  # 60 points a series a query: 15 slices
    sliced = _recommend(prom.url, start, end, step, level)
    assert whole["limits"] and whole["replayed"]["summary"]["throttled_quota_ids"] > 0, f"seed {SEED}"
    assert sliced == whole, f"seed {SEED} (KQUOTACTL_FUZZ_SEED={SEED})"


class _Counted(spill.RateSpill):
    """The spill, its instances kept: how many flushes a run made, and where its files were."""

    made: ClassVar[list[spill.RateSpill]] = []

    def __init__(self, budget: int | None = None) -> None:
        super().__init__(budget)
        _Counted.made.append(self)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch, tmp_path) -> Any:
    """Spills counted, in a TMPDIR of the test's own (tempfile caches TMPDIR: its cached value is set)."""
    import tempfile

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.setattr(spill, "RateSpill", _Counted)
    _Counted.made.clear()
    return tmp


@pytest.mark.parametrize(("step", "level"), [(1.0, "user-client"), (1.0, "user"), (2.0, "client-id")])
def test_rates_spilled_under_a_tiny_budget_give_the_report_held_in_memory(
    synthetic, monkeypatch, counted, step: float, level: str
) -> None:
    prom, start, end = synthetic
    monkeypatch.setattr(prometheus, "POINTS_PER_QUERY", 1)  # 15 slices
    monkeypatch.setattr(spill, "BUDGET", 2**62)
    held = _recommend(prom.url, start, end, step, level)
    assert [s.flushes for s in _Counted.made] == [0], f"seed {SEED}"
    monkeypatch.setattr(spill, "BUDGET", 2048)  # a few slices' rates of a few quota-ids: flushed again and again
    spilled = _recommend(prom.url, start, end, step, level)
    assert _Counted.made[-1].flushes >= 10, f"seed {SEED}"
    assert spilled == held, f"seed {SEED} (KQUOTACTL_FUZZ_SEED={SEED})"
    assert not list(counted.iterdir())  # the spill's directory removed


def test_spilled_distributions_are_distribution_of_every_rate(synthetic, monkeypatch, counted) -> None:
    """Against the definition: the core's ``Distribution.of`` of every slice's rates, held in one list."""
    prom, start, end = synthetic
    monkeypatch.setattr(prometheus, "POINTS_PER_QUERY", 1)
    monkeypatch.setattr(spill, "BUDGET", 2048)
    policy = Policy(percentile=97.5, level=Level.USER_CLIENT)
    window = Window(windowed=True)
    rates: dict[Any, list[float]] = {}
    for table in prometheus.traffic_slices(prom.url, start + 1.0, float(end), 1.0, window.size_s):
        for gk, per_broker in windowed_sample_rates(table, policy.level, window)[0].items():
            for broker, values in per_broker.items():
                rates.setdefault((gk, broker), []).extend(values.tolist())
    source = Replay(Window(), (), prom.url, (start + 1.0, float(end), 1.0), engine="local")
    found = recommend_from_traffic(source, policy)
    got = {(gk, b): d for gk, per_broker in found.distributions.items() for b, d in per_broker.items()}
    assert _Counted.made[-1].flushes >= 10
    assert set(got) == set(rates) and len(got) >= 8, f"seed {SEED}"
    for k, values in rates.items():
        assert repr(got[k]) == repr(Distribution.of(values, extra=[97.5])), f"seed {SEED}: {k}"


@pytest.mark.parametrize("fault", [Terminated, QuotaError])
def test_the_spill_is_removed_after_an_error_mid_stream(synthetic, monkeypatch, counted, fault) -> None:
    """SIGTERM (the CLI raises :class:`Terminated`) or a failed read after some slices were spilled."""
    prom, start, end = synthetic
    monkeypatch.setattr(prometheus, "POINTS_PER_QUERY", 1)
    monkeypatch.setattr(spill, "BUDGET", 2048)
    slices = prometheus.traffic_slices
    seen: list[list[str]] = []

    def failing(*args: Any, **kwargs: Any) -> Any:
        for i, table in enumerate(slices(*args, **kwargs)):
            if i == 8:
                seen.append([p.name for p in counted.iterdir() for p in p.iterdir()])
                raise fault() if fault is Terminated else fault("the range read failed")
            yield table

    monkeypatch.setattr(prometheus, "traffic_slices", failing)
    with pytest.raises(fault):
        _recommend(prom.url, start, end, 1.0, "user-client")
    assert len(seen) == 1 and len(seen[0]) >= 8, seen  # files were there when it stopped
    assert not list(counted.iterdir())


def test_a_disk_without_room_is_one_line_and_nothing_written(synthetic, monkeypatch, counted) -> None:
    from conftest import run_cli

    prom, start, end = synthetic
    monkeypatch.setattr(spill, "BUDGET", 2048)
    monkeypatch.setattr(spill, "RESERVE", 2**62)  # the free-space check: more room kept free than any disk has
    args = ["recommend", "--from-prometheus", prom.url, "--since", f"{end - start - 1}s", "--until", str(end)]
    result = run_cli(*args, "--step", "1s")
    assert result.exit_code == 1 and result.stdout == "", result
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and str(counted) in lines[0] and "TMPDIR" in lines[0], lines
    assert "MiB" in lines[0] and "bytes" in lines[0], lines
    assert not list(counted.iterdir())


def test_a_full_disk_is_one_line_and_nothing_written(synthetic, monkeypatch, tmp_path) -> None:
    """A real ENOSPC: TMPDIR on a 16 KiB tmpfs, the free-space check left out (a disk filled after it)."""
    import tempfile

    small = tmp_path / "small"
    small.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(small)], capture_output=True)
    if mounted.returncode:
        pytest.skip(f"no tmpfs to fill (mount needs root): {mounted.stderr.decode().strip()}")
    try:
        from conftest import run_cli

        prom, start, end = synthetic
        monkeypatch.setattr(tempfile, "tempdir", str(small))
        monkeypatch.setattr(prometheus, "POINTS_PER_QUERY", 1)
        monkeypatch.setattr(spill, "BUDGET", 2048)
        monkeypatch.setattr(spill, "RESERVE", -(2**40))  # the check passes: the write itself finds the disk full
        args = ["recommend", "--from-prometheus", prom.url, "--since", f"{end - start - 1}s", "--until", str(end)]
        result = run_cli(*args, "--step", "1s")
        assert result.exit_code == 1 and result.stdout == "", result
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and f"{small}: no room" in lines[0] and "TMPDIR" in lines[0], lines
        assert not list(small.iterdir())
    finally:
        subprocess.run(["umount", str(small)], check=True)


#: ``kquotactl`` with a tiny spill budget, pausing after 8 slices (``ready`` written, files spilled) until stopped
PAUSED = """
import sys, time
from pathlib import Path
from kquotactl.impact import spill
from kquotactl.observe import prometheus
spill.BUDGET = 2048
prometheus.POINTS_PER_QUERY = 1
slices = prometheus.traffic_slices
def paused(*args, **kwargs):
    for i, table in enumerate(slices(*args, **kwargs)):
        if i == 8:
            Path(sys.argv[1]).write_text("ready")
            time.sleep(120)
        yield table
prometheus.traffic_slices = paused
from kquotactl.cli.app import main
main(sys.argv[2:])
"""


def test_sigterm_mid_stream_removes_the_spill(synthetic, tmp_path) -> None:
    """The real signal to the real CLI: SIGTERM while the rates are spilled ends it (143), the files removed."""
    import signal
    import sys

    prom, start, end = synthetic
    tmp, ready = tmp_path / "tmp", tmp_path / "ready"
    tmp.mkdir()
    args = ["recommend", "--from-prometheus", prom.url, "--since", f"{end - start - 1}s", "--until", str(end)]
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = subprocess.Popen([sys.executable, "-c", PAUSED, str(ready), *args, "--step", "1s"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        spilled = [p.name for d in tmp.iterdir() for p in d.iterdir()]
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert ready.exists() and len(spilled) >= 8, (spilled, err)  # it was mid-stream, with files on disk
    assert proc.returncode == 143 and out == "", (proc.returncode, out, err)
    assert "terminated (SIGTERM)" in err, err
    assert not list(tmp.iterdir())
