"""`kquotactl top --prometheus` with 100,000 active quota-ids: the brokers' sensors from a real Prometheus holding
synthetic series (a usage and a throttle series each, spread over 3 brokers, a reading every 15 s for 10 minutes,
written as TSDB blocks by ``promtool``), joined with a 100,000-entity manifest (``-f``). Each side in a fresh
process, its wall time and peak memory measured:

- the floor: the same instant query fetched with ``requests`` and JSON-decoded, nothing else;
- ``kquotactl top --prometheus URL -f quotas.yaml --all -o json``: the read, the schemes, the join with the limits
  (the precedence resolution once a quota-id), the rows;
- the exporter's sensor read (``observe.prometheus.from_prometheus``, what ``kquotactl exporter --prometheus`` does
  each ``--sensor-interval``), alone.

Size: BENCH_TOP_IDS (default 100000).
"""

from __future__ import annotations

import json
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
from kquotactl.testing.observe import PrometheusServer  # noqa: E402

IDS = int(os.environ.get("BENCH_TOP_IDS", "100000"))
ENV = {**os.environ, "PYTHONPATH": str(HERE.parent / "src")}

FLOOR = """
import sys, requests
from kquotactl.observe.prometheus import SELECTOR
body = requests.get(sys.argv[1] + "/api/v1/query", params={"query": SELECTOR}, timeout=600).json()
print(len(body["data"]["result"]))
"""
SENSORS = """
import sys
from kquotactl.observe.prometheus import from_prometheus
print(len(from_prometheus(sys.argv[1])))
"""


def synthetic(directory: Path) -> Path:
    """Every quota-id a (user, client-id) pair on one of 3 brokers, its usage and throttle time every 15 s over
    the last 10 minutes; one in ten throttled."""
    end = int(time.time()) - 30
    text = directory / "sensors.om"
    with text.open("w") as f:
        for metric in ("byte_rate", "throttle_time"):
            f.write(f"# TYPE kafka_quota_{metric} gauge\n")
            for i in range(IDS):
                labels = f'client_id="c{i}",instance="b{i % 3}:7071",quota_type="Produce",user="u{i}"'
                value = (1000 + i) * (1.5 if i % 10 == 0 else 0.5) if metric == "byte_rate" else 0.0
                if metric == "throttle_time" and i % 10 == 0:
                    value = 250.0
                f.writelines(f"kafka_quota_{metric}{{{labels}}} {value} {t}\n" for t in range(end - 600, end, 15))
        f.write("# EOF\n")
    return tsdb_from_openmetrics(text, directory / "data")


def manifest(path: Path) -> Path:
    quotas = [{"entity": {"user": f"u{i}", "client-id": f"c{i}"}, "config": {"producer_byte_rate": 1000 + i}}
              for i in range(IDS)]  # fmt: skip
    path.write_text(json.dumps({"quotas": quotas}))
    return path


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="kquotactl-bench-top-"))
    try:
        began = time.perf_counter()
        data = synthetic(work)
        quotas = manifest(work / "quotas.json")
        print(
            f"{IDS:,} quota-ids (usage and throttle series: {2 * IDS:,}) in Prometheus in "
            f"{time.perf_counter() - began:.1f} s"
        )
        with PrometheusServer(tsdb=data) as prom:
            floor = measured([sys.executable, "-c", FLOOR, prom.url], ENV)
            sensors = measured([sys.executable, "-c", SENSORS, prom.url], ENV)
            top = measured([sys.executable, "-m", "kquotactl", "top", "--prometheus", prom.url, "-f", str(quotas),
                            "--all", "-o", "json"], ENV)  # fmt: skip
        assert int(floor[2]) == 2 * IDS, floor[2]
        rows = json.loads(top[2])
        assert len(rows) == IDS and sum(1 for r in rows if r.get("throttled")) == IDS // 10, len(rows)
        print(f"{'':34}{'wall':>9}{'peak memory':>14}{'ratio':>14}")
        for label, (sec, mib, _) in (
            ("floor (query, decode)", floor),
            ("exporter's sensor read", sensors),
            ("kquotactl top --all -o json", top),
        ):
            print(f"{label:34}{sec:>8.2f}s{mib:>10.0f} MiB{sec / floor[0]:>7.2f}x {mib / floor[1]:>5.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
