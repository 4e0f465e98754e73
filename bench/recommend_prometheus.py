"""`kquotactl recommend --from-prometheus`: a recommendation from weeks of the brokers' sensors in Prometheus, read
at 1 s steps, against the floor of reading the same range.

Synthetic sensors (kquotactl's exporter rules' names: ``kafka_quota_byte_rate{quota_type="Produce",client_id=...}``,
one series a quota-id, a reading every second) are written as OpenMetrics, turned into TSDB blocks by
``promtool tsdb create-blocks-from openmetrics`` and served by a real Prometheus. Each side runs in its own fresh
process, its wall time and peak memory (``wait4``'s ``ru_maxrss``) measured:

- the floor: the same range queries (the same chunks: about 200,000 points a query, at the same step), fetched
  with ``requests`` and JSON-decoded, nothing else;
- ``kquotactl recommend --from-prometheus`` with ``-o json``: the reads, the conversion, the distributions, the
  policy and the replay.

The ratio to the floor is the cost of what kquotactl adds: it reads the range twice (once for the rates, once to
replay the recommendation), so 2x is the least it can be. Measured at BENCH_RP_HOURS / 4 and BENCH_RP_HOURS, the
difference gives the cost of each added point, projected to the issue's figure (30 days at 1 s for 1,000
quota-ids: 2.6 billion points).

The sample rates are held in a buffer of ``kquotactl.impact.spill.BUDGET`` bytes (64 MiB) and spilled to temporary
files past it. So that both sizes spill, kquotactl runs here with a budget of BENCH_RP_BUDGET MiB (default 4: the
smaller run's rates are ~7 MiB); its memory a point is then ~0, and the projection adds back the shipped budget and
the largest quota-id's rates at 30 days (8 bytes a sample, read back alone). The temporary disk used (the bytes the
spill wrote) is measured too, and projected.

Environment: BENCH_RP_IDS (default 1000), BENCH_RP_HOURS (default 1; the range read, at one point a second),
BENCH_RP_BUDGET (default 4, MiB).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "src"))

from bench._util import measured, tsdb_from_openmetrics  # noqa: E402
from kquotactl.impact.spill import BUDGET  # noqa: E402
from kquotactl.observe.prometheus import POINTS_PER_QUERY  # noqa: E402
from kquotactl.testing.observe import PrometheusServer  # noqa: E402

IDS = int(os.environ.get("BENCH_RP_IDS", "1000"))
HOURS = float(os.environ.get("BENCH_RP_HOURS", "1"))
BUDGET_MIB = float(os.environ.get("BENCH_RP_BUDGET", "4"))
ISSUE_POINTS = 30 * 86_400 * 1_000
ENV = {**os.environ, "PYTHONPATH": str(HERE.parent / "src")}

FLOOR = """
import sys, requests
from kquotactl.observe.prometheus import FIRST_POINTS, MAX_POINTS, POINTS_PER_QUERY, TRAFFIC_SELECTOR
url, start, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
t, chunk, points = start, FIRST_POINTS, 0
while t <= end:
    last = min(end, t + chunk - 1)
    params = {"query": TRAFFIC_SELECTOR, "start": f"{t:.3f}", "end": f"{last:.3f}", "step": "1"}
    result = requests.get(url + "/api/v1/query_range", params=params, timeout=600).json()["data"]["result"]
    points += sum(len(s["values"]) for s in result)
    chunk = max(FIRST_POINTS, min(MAX_POINTS, POINTS_PER_QUERY // max(1, len(result))))
    t = last + 1
print(points)
"""

#: ``kquotactl`` (``python -m kquotactl``'s ``main``) with the spill's budget set, printing the bytes it spilled last
OURS = """
import sys
from kquotactl.impact import spill
spill.BUDGET = int(float(sys.argv[1]) * 2**20)
seen = [(0, 0)]
close = spill.RateSpill.close
def recorded(self):
    seen.append((self.written, self.flushes))
    close(self)
spill.RateSpill.close = recorded
from kquotactl.cli.app import main
try:
    main(sys.argv[2:])
finally:
    print("spilled", *max(seen))
"""


def synthetic_tsdb(directory: Path, start: int, end: int) -> Path:
    """One series a quota-id, a reading a second on ``[start, end)``: steady rates with a ripple, every tenth one
    bursty; as TSDB blocks."""
    text = directory / "sensors.om"
    with text.open("w") as f:
        f.write("# TYPE kafka_quota_byte_rate gauge\n")
        for i in range(IDS):
            name = f'kafka_quota_byte_rate{{client_id="c{i:05d}",instance="b1:7071",quota_type="Produce"}} '
            base = 10_000 * (1 + i % 97)
            burst = 8 if i % 10 == 0 else 1
            f.writelines(
                f"{name}{base * (burst if s % 600 < 30 else 1) + (s * 7919 % 1000)}.0 {s}\n" for s in range(start, end)
            )
        f.write("# EOF\n")
    return tsdb_from_openmetrics(text, directory / "data")


def run(hours: float) -> tuple[int, tuple[float, float, str], tuple[float, float, str], int]:
    """The points, the floor's and kquotactl's (seconds, MiB, output) over ``hours`` of synthetic sensors, and the
    bytes kquotactl spilled to temporary files."""
    end = int(time.time()) - 120
    start = end - int(hours * 3600)
    points = IDS * (end - start)
    work = Path(tempfile.mkdtemp(prefix="kquotactl-bench-rp-"))
    try:
        began = time.perf_counter()
        data = synthetic_tsdb(work, start, end)
        print(
            f"{IDS:,} quota-ids x {end - start:,} s = {points:,} points, in Prometheus in "
            f"{time.perf_counter() - began:.1f} s"
        )
        with PrometheusServer(tsdb=data) as prom:
            floor = measured([sys.executable, "-c", FLOOR, prom.url, str(start + 1), str(end)], ENV)
            ours = measured(
                [
                    sys.executable,
                    "-c",
                    OURS,
                    str(BUDGET_MIB),
                    "recommend",
                    "--from-prometheus",
                    prom.url,
                    "--since",
                    f"{end - start - 1}s",
                    "--until",
                    str(end),
                    "--step",
                    "1s",
                    "--level",
                    "client-id",
                    "-o",
                    "json",
                ],
                ENV,
            )
        assert int(floor[2]) >= points * 0.99, (floor[2], points)
        spilled = ours[2].rsplit("spilled", 1)[1].split()
        return points, floor, ours, int(spilled[0])
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    small, large = run(HOURS / 4), run(HOURS)
    print(f"spill budget {BUDGET_MIB:g} MiB (shipped: {BUDGET / 2**20:g} MiB)")
    print(f"{'points':>12}  {'floor (read, decode)':>22}  {'kquotactl recommend':>22}  {'ratio':>12}  {'spilled':>9}")
    for points, floor, ours, spilled in (small, large):
        print(
            f"{points:>12,}  {floor[0]:>8.1f} s {floor[1]:>7.0f} MiB  {ours[0]:>8.1f} s {ours[1]:>7.0f} MiB  "
            f"{ours[0] / floor[0]:>4.2f}x {ours[1] / floor[1]:>5.2f}x  {spilled / 2**20:>5.1f} MiB"
        )
    added = large[0] - small[0]
    per_point_us = (large[2][0] - small[2][0]) / added * 1e6
    per_point_b = (large[2][1] - small[2][1]) * 2**20 / added
    disk_b = (large[3] - small[3]) / added
    floor_us = (large[1][0] - small[1][0]) / added * 1e6
    print(
        f"per added point: {per_point_us:.2f} us (the floor {floor_us:.2f} us), {per_point_b:.2f} B of memory, "
        f"{disk_b:.2f} B of temporary disk"
    )
    if small[0] < 5 * POINTS_PER_QUERY:  # one query's decoded answer (~250 B a point) is still in the peak
        print(f"(the smaller run has under {5 * POINTS_PER_QUERY:,} points: the memory a point is overstated)")
    if small[3] == 0:
        print("(the smaller run did not spill: lower BENCH_RP_BUDGET, or the memory a point is the buffer's)")
    largest = 8 * ISSUE_POINTS / 1_000  # the largest quota-id's rates, read back alone: 30 d of one series at 1 s
    ram = small[2][1] + (max(0.0, per_point_b) * ISSUE_POINTS + largest) / 2**20 + (BUDGET / 2**20 - BUDGET_MIB)
    print(
        f"projected to 30 d at 1 s for 1,000 quota-ids ({ISSUE_POINTS:,} points): "
        f"{per_point_us * ISSUE_POINTS / 3.6e9:.1f} h (the floor {floor_us * ISSUE_POINTS / 3.6e9:.1f} h); "
        f"memory {ram:,.0f} MiB (the fixed {small[2][1]:.0f} MiB, {BUDGET / 2**20:g} MiB of buffer instead of "
        f"{BUDGET_MIB:g}, {largest / 2**20:.0f} MiB of the largest quota-id's rates, "
        f"{max(0.0, per_point_b) * ISSUE_POINTS / 2**20:,.0f} MiB for the points); "
        f"temporary disk {disk_b * ISSUE_POINTS / 2**30:,.1f} GiB at the slope measured, "
        f"{8 * ISSUE_POINTS / 2**30:,.1f} GiB at 8 B a sample"
    )


if __name__ == "__main__":
    main()
