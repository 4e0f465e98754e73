"""Cluster-wide budgets against a real 3-broker KRaft cluster (the ``kraft3`` fixture) and a real ZooKeeper."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.kafka


def test_three_brokers_in_metadata_and_one_stopped_is_dropped(kraft3):
    from kquotactl.backends.kafka.quotas import AdminBackend

    with AdminBackend.connect(kraft3.bootstrap) as b:
        assert b.broker_ids() == [1, 2, 3]
    kraft3.stop_broker(2)
    with AdminBackend.connect(kraft3.bootstrap) as b:
        assert b.broker_ids() == [1, 2]
