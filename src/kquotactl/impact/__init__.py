"""Traffic impact replay: which quota-ids a quota set would throttle on recorded traffic, how much, how often.

``model`` is the pure model; ``local`` and ``spark`` are two engines computing it; ``readers``, ``generate``
and ``output`` are the I/O around them. Nothing here is imported by ``kquotactl --help``.
"""
