"""`kquotactl top`'s model: 20,000 quota-ids seen by 3 brokers (a usage and a throttle sample each: 120,000
samples) joined with a 20,000-entity quota set, against two floors measured in the same run: grouping and sorting
the samples in plain dicts, and 20,000 bare ``QuotaIndex.resolve`` calls (the resolution top does once a quota-id).

Size: BENCH_QUOTA_IDS (default 20000).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._util import row, time_call
from kquotactl.core.entities import Entity
from kquotactl.core.precedence import QuotaIndex
from kquotactl.observe.throttled import Sample, top_rows

N = int(os.environ.get("BENCH_QUOTA_IDS", "20000"))


def main() -> None:
    index = QuotaIndex(
        {
            (Entity(user=f"u{i}", client_id=f"c{i}") if i % 2 else Entity(client_id=f"c{i}")): {
                "producer_byte_rate": 1000 + i
            }
            for i in range(N)
        }
    )
    samples = []
    for b in ("b1:7071", "b2:7071", "b3:7071"):
        for i in range(N):
            u = f"u{i}" if i % 2 else ""
            samples.append(Sample("byte_rate", b, 1500.0, "Produce", user=u, client_id=f"c{i}"))
            samples.append(Sample("throttle_time", b, float(i % 7), "Produce", user=u, client_id=f"c{i}"))

    def group_and_sort() -> object:
        d: dict = {}
        for s in samples:
            d.setdefault((s.user, s.client_id, s.quota_type), {})[(s.broker, s.metric)] = s.value
        return sorted(d.items(), key=lambda kv: -max(kv[1].values()))

    def resolve_only() -> None:
        for i in range(N):
            index.resolve("producer_byte_rate", f"u{i}" if i % 2 else "", f"c{i}")

    base = time_call(group_and_sort)
    print(f"top model: {N} quota-ids x 3 brokers ({len(samples)} samples)")
    print(row("floor: group + sort the samples in dicts", base))
    print(row(f"floor: {N} QuotaIndex.resolve calls", time_call(resolve_only), base))
    print(row("top_rows (decode labels, resolve, per broker, sort)", time_call(lambda: top_rows(samples, index)), base))


if __name__ == "__main__":
    main()
