"""Reading an exporter's scrape in each scheme (``observe/schemes.py``): N quota-ids (a usage and a throttle series
each) in kquotactl's names, the JMX exporter example's and Confluent's, and both kquotactl's and Confluent's for
the same sensors (a configuration with both rule sets: the duplicates dropped), parsed and turned into samples as
``scrape`` does (without HTTP), against the floor measured in the same run: ``prometheus_client``'s parser alone
on the same text.

Size: BENCH_QUOTA_IDS (default 50000).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.parser import text_string_to_metric_families

from bench._util import row, time_call
from kquotactl.observe.schemes import Reading, to_samples
from kquotactl.observe.throttled import METRIC_PREFIX, Sample, sample_from_labels

N = int(os.environ.get("BENCH_QUOTA_IDS", "50000"))

#: scheme -> (usage series, throttle series, labels of quota-id i)
SHAPES = {
    "kquotactl": ("kafka_quota_byte_rate", "kafka_quota_throttle_time", ("quota_type", "user", "client_id")),
    "jmx-exporter-example": (
        "kafka_server_quota_byte_rate",
        "kafka_server_quota_throttle_time",
        ("resource", "user", "clientId"),
    ),
    "confluent": ("kafka_server_produce_byte_rate", "kafka_server_produce_throttle_time", ("user", "client_id")),
}


class _Sensors:
    def __init__(self, schemes: tuple[str, ...]) -> None:
        self.schemes = schemes

    def collect(self) -> Iterator[GaugeMetricFamily]:
        for scheme in self.schemes:
            usage, throttle, labels = SHAPES[scheme]
            for name, value in ((usage, 1500.0), (throttle, 3.0)):
                family = GaugeMetricFamily(name, "quota sensor", labels=list(labels))
                for i in range(N):
                    family.add_metric(["Produce", f"u{i}", f"c{i}"][3 - len(labels) :], value)
                yield family


def _exposition(*schemes: str) -> str:
    registry = CollectorRegistry()
    registry.register(_Sensors(schemes))
    return generate_latest(registry).decode()


def main() -> None:
    print(f"scrape schemes: {N} quota-ids x 2 series")
    for schemes in (("kquotactl",), ("jmx-exporter-example",), ("confluent",), ("kquotactl", "confluent")):
        text = _exposition(*schemes)

        def parse(text: str = text) -> object:
            return [s for f in text_string_to_metric_families(text) for s in f.samples]

        def read(text: str = text) -> list[Sample]:
            families = text_string_to_metric_families(text)
            return to_samples(Reading(s.name, s.labels, float(s.value), "b1:7071") for f in families for s in f.samples)

        def before(text: str = text) -> list[Sample | None]:  # scrape before the schemes: kquotactl's names only
            families = text_string_to_metric_families(text)
            return [
                sample_from_labels(s.name, s.labels, float(s.value), "b1:7071")
                for f in families
                if f.name.startswith(METRIC_PREFIX)
                for s in f.samples
            ]

        count = len(read())
        base = time_call(parse, runs=3)
        print(row(f"floor: parse {' + '.join(schemes)}", base))
        if schemes == ("kquotactl",):
            print(row("parse + sample_from_labels (before the schemes)", time_call(before, runs=3), base))
        print(row(f"parse + to_samples ({count} samples)", time_call(read, runs=3), base))


if __name__ == "__main__":
    main()
