"""kquotactl: manage Apache Kafka client quotas.

The package is a functional core (entity model, key validation, grammar, filters, planning: pure Python,
no I/O) with thin shells around it: backends (ZooKeeper, the broker admin API, offline manifests) and a
click command line.
"""

__version__ = "0.1.0"
