"""What the commands do, callable from Python without click: one module per job.

- :mod:`~kquotactl.services.quotas`: describe, alter one entity, and the one loader of a quota set (manifests or a
  live backend) that explain, impact, top and verify share;
- :mod:`~kquotactl.services.plans`: plan a manifest, read a saved plan, apply a plan (chunked, exact partial report),
  resume it from its log;
- :mod:`~kquotactl.services.staged`: the staged apply, its between-stage check, log and resume;
- :mod:`~kquotactl.services.applying`: ``apply`` in two phases: what to apply, refused before it is shown
  (``prepare``), then written, plain or staged, logged and verified (``PendingApply.commit``);
- :mod:`~kquotactl.services.impact`: ``impact run``'s quota sets and replay, the report as data;
- :mod:`~kquotactl.services.verify`: every broker reports the values; a driven producer's first throttle;
- :mod:`~kquotactl.services.explain`: explain one connection or many, and replays; the embedded example quota set;
- :mod:`~kquotactl.services.top`: the brokers' quota sensors joined with a quota set's limits;
- :mod:`~kquotactl.services.connection_rate`: broker-level connection-creation limits, read and changed;
- :mod:`~kquotactl.services.principals`: the brokers' principal rules, given or read from a broker.

Services take typed arguments (a :class:`~kquotactl.backends.base.QuotaBackend`, a manifest, entities, changes) and
return dataclasses; they never print and never name a command-line flag. The click commands in :mod:`kquotactl.cli`
parse their options, call a service and render what it returns; errors are raised as
:class:`~kquotactl.core.errors.QuotaError` (with data) and worded by the CLI (:mod:`kquotactl.cli.errorwords`).
Nothing is imported here: ``describe`` loads only :mod:`~kquotactl.services.quotas`.

For example::

    from kquotactl.backends.factory import open_backend
    from kquotactl.connection.cluster import ConnectionOptions
    from kquotactl.manifests.loader import load_manifests
    from kquotactl.services.plans import apply, plan

    backend = open_backend(ConnectionOptions(zookeeper="zk:2181/kafka"))
    result = apply(backend, plan(backend, load_manifests(["quotas.yaml"])).plan)
    result.partial is None, result.counts["applied"]
"""
