"""The test harness's own pure parts: ids it hands to Kafka's tools must parse."""

from __future__ import annotations

import uuid

from kquotactl.testing.kafka import new_cluster_id


def test_cluster_id_never_starts_with_a_dash() -> None:
    # 0xF8 as the first byte encodes to a leading '-' in url-safe base64; kafka-storage would read it as an option.
    draws = iter([uuid.UUID(bytes=b"\xf8" + b"\x00" * 15), uuid.UUID(bytes=b"\x10" * 16)])
    cluster_id = new_cluster_id(lambda: next(draws))
    assert cluster_id == "EBAQEBAQEBAQEBAQEBAQEA"


def test_cluster_id_is_22_url_safe_characters() -> None:
    for _ in range(2000):
        cluster_id = new_cluster_id()
        assert len(cluster_id) == 22
        assert not cluster_id.startswith("-")
        assert set(cluster_id) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
