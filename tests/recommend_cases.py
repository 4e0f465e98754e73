"""Random traffic for the ``recommend`` engine tests: the local engine, a local Spark session and a standalone
cluster all read the same tables and request logs (the seed, ``KQUOTACTL_FUZZ_SEED``, is the caller's)."""

from __future__ import annotations

import csv
import random
from pathlib import Path

T0 = 1_700_000_000


def random_traffic(path: Path, rng: random.Random) -> Path:
    """Steady, bursty and sparse clients over three brokers, with connections from a few ips."""
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "ts",
                "user",
                "client_id",
                "ip",
                "broker",
                "produce_bytes",
                "fetch_bytes",
                "requests",
                "request_time_ms",
                "connections",
            ]
        )
        for s in range(180):
            for u in range(8):
                if u >= 5 and rng.random() < 0.7:
                    continue  # sparse
                burst = 5 if (u == 4 and s % 30 < 5) else 1
                for _ in range(rng.randint(1, 4)):
                    ts = T0 + s + rng.random()
                    w.writerow(
                        [
                            f"{ts:.3f}",
                            f"u{u}",
                            f"c{u % 3}",
                            f"10.0.0.{u % 4}",
                            f"b{rng.randint(1, 3)}",
                            rng.randint(0, 50_000) * burst,
                            rng.randint(0, 80_000),
                            1,
                            round(rng.uniform(0, 3), 3),
                            int(rng.random() < 0.05),
                        ]
                    )
    return path


def random_request_logs(root: Path, rng: random.Random, brokers: int = 2) -> list[str]:
    """One directory of Kafka request logs per broker: produce and fetch requests of five users."""
    from kquotactl.impact.generate import request_log_line

    logs = []
    for b in range(brokers):
        d = root / f"b{b}"
        d.mkdir()
        lines = [
            request_log_line(
                T0 + s + rng.random(),
                rng.choice([0, 1]),
                f"u{rng.randint(0, 4)}",
                "c",
                "10.0.0.1",
                (rng.randint(1, 40_000),),
                round(rng.uniform(0.1, 2), 3),
                version="4.4",
            )
            for s in range(120)
            for _ in range(rng.randint(1, 5))
        ]
        (d / "kafka-request.log").write_text("\n".join(lines) + "\n")
        logs.append(str(d))
    return logs
