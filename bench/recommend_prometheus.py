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

Environment: BENCH_RP_IDS (default 1000), BENCH_RP_HOURS (default 1; the range read, at one point a second).
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
from kquotactl.observe.prometheus import POINTS_PER_QUERY  # noqa: E402
from kquotactl.testing.observe import PrometheusServer  # noqa: E402

IDS = int(os.environ.get("BENCH_RP_IDS", "1000"))
HOURS = float(os.environ.get("BENCH_RP_HOURS", "1"))
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


def run(hours: float) -> tuple[int, tuple[float, float, str], tuple[float, float, str]]:
    """The points, the floor's and kquotactl's (seconds, MiB, output) over ``hours`` of synthetic sensors."""
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
                    "-m",
                    "kquotactl",
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
        return points, floor, ours
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    small, large = run(HOURS / 4), run(HOURS)
    print(f"{'points':>12}  {'floor (read, decode)':>22}  {'kquotactl recommend':>22}  {'ratio':>12}")
    for points, floor, ours in (small, large):
        print(
            f"{points:>12,}  {floor[0]:>8.1f} s {floor[1]:>7.0f} MiB  {ours[0]:>8.1f} s {ours[1]:>7.0f} MiB  "
            f"{ours[0] / floor[0]:>4.2f}x {ours[1] / floor[1]:>5.2f}x"
        )
    added = large[0] - small[0]
    per_point_us = (large[2][0] - small[2][0]) / added * 1e6
    per_point_b = (large[2][1] - small[2][1]) * 2**20 / added
    floor_us = (large[1][0] - small[1][0]) / added * 1e6
    print(f"per added point: {per_point_us:.2f} us (the floor {floor_us:.2f} us), {per_point_b:.1f} B of memory")
    if small[0] < 5 * POINTS_PER_QUERY:  # one query's decoded answer (~250 B a point) is still in the peak
        print(f"(the smaller run has under {5 * POINTS_PER_QUERY:,} points: the memory a point is overstated)")
    print(
        f"projected to 30 d at 1 s for 1,000 quota-ids ({ISSUE_POINTS:,} points): "
        f"{per_point_us * ISSUE_POINTS / 3.6e9:.1f} h (the floor {floor_us * ISSUE_POINTS / 3.6e9:.1f} h), "
        f"{per_point_b * ISSUE_POINTS / 2**30:,.1f} GiB above the fixed {small[2][1]:.0f} MiB"
    )


if __name__ == "__main__":
    main()
