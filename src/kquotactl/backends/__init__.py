"""Backends: where quotas live, behind one typed interface (:class:`kquotactl.backends.base.QuotaBackend`).

- :mod:`kquotactl.backends.zookeeper`: ZooKeeper-mode clusters (kazoo), byte-compatible with brokers.
- :mod:`kquotactl.backends.kafka`: the broker admin API (KIP-546), for KRaft and ZooKeeper-mode brokers.
- :mod:`kquotactl.backends.manifest`: offline manifests, read only, for simulation without a cluster.

:func:`kquotactl.backends.factory.open_backend` imports the one a command needs, lazily.
"""
