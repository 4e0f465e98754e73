"""Each quota-id's sample rates kept on disk, not in memory, while months of Prometheus readings stream past.

Exact percentiles need every sample's rate (8 bytes a sample with traffic): 30 days at 1 s for 1,000 quota-ids
is about 20 GiB of them. :class:`RateSpill` holds them in a buffer of :data:`BUDGET` bytes; when it is full, each
(quota-id, key, broker)'s rates are appended to that group's own file in a temporary directory (``TMPDIR``'s).
At the end each group's file is read back alone and its distribution computed
(:func:`~kquotactl.impact.recommend.array_distribution`): memory is the buffer, the largest group's samples and a
few hundred bytes a group, whatever the range's length. The directory is removed when the spill is closed: on
success, on an error, on Ctrl-C and on SIGTERM (the CLI raises it as an exception).
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Hashable, Iterator
from typing import Any

from kquotactl.core.errors import QuotaError
from kquotactl.core.recommend import Distribution

#: the bytes of rates held in memory before they are written out (a test lowers it)
BUDGET = 64 * 2**20
#: the bytes a spill leaves free on its disk (a test raises it to fill the disk without filling it)
RESERVE = 64 * 2**20
#: what a buffered array costs besides its values (the numpy object): counted against the budget
_ARRAY_OVERHEAD = 112
#: a sample's rate on disk: a little-endian float64
DTYPE = "<f8"


class SpillNoRoom(QuotaError):
    """The temporary directory's disk has no room for the samples' rates: ``directory`` (the parent the spill
    was made in, ``TMPDIR``'s), ``needed`` and ``free`` bytes."""

    def __init__(self, directory: str, needed: int, free: int) -> None:
        super().__init__(
            f"{directory}: no room for the samples' rates: {_mib(needed)} more needed, {_mib(free)} free "
            f"(set TMPDIR to a directory with room)"
        )
        self.directory, self.needed, self.free = directory, needed, free


def _mib(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB ({n:,} bytes)"


class RateSpill:
    """Rates appended per group (any hashable: ``((group, key), broker)``), spilled to one file a group when the
    buffer passes :data:`BUDGET`; a context manager whose exit removes the files. ``done``: the fraction of the
    input read so far, set by the caller, for the room a full disk would need."""

    def __init__(self, budget: int | None = None) -> None:
        self.budget = BUDGET if budget is None else budget
        self._buffer: dict[Hashable, list[Any]] = {}
        self._buffered = 0
        self._files: dict[Hashable, str] = {}
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self.written = 0  # bytes on disk
        self.flushes = 0
        self.done = 0.0

    def __enter__(self) -> RateSpill:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """The files removed (and the buffer dropped)."""
        self._buffer.clear()
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    @property
    def directory(self) -> str | None:
        """Where the files are, once one was written."""
        return None if self._dir is None else self._dir.name

    def add(self, group: Hashable, rates: Any) -> None:
        """``rates`` (a float64 array, owned: kept as it is) appended to ``group``'s."""
        if not len(rates):
            return
        self._buffer.setdefault(group, []).append(rates)
        self._buffered += rates.nbytes + _ARRAY_OVERHEAD
        if self._buffered > self.budget:
            self.flush()

    def flush(self) -> None:
        """Every buffered rate appended to its group's file; the buffer emptied."""
        import numpy as np

        if not self._buffer:
            return
        if self._dir is None:
            self._dir = tempfile.TemporaryDirectory(prefix="kquotactl-rates-")
        needed = sum(a.nbytes for arrays in self._buffer.values() for a in arrays)
        self._check_room(needed)
        try:
            for group, arrays in self._buffer.items():
                path = self._files.get(group)
                if path is None:
                    path = self._files[group] = os.path.join(self._dir.name, f"{len(self._files)}.f64")
                with open(path, "ab") as f:  # not ndarray.tofile: it may lose a full disk's error
                    f.write(np.concatenate(arrays).astype(DTYPE, copy=False).data)
        except OSError as e:
            if e.errno in (errno.ENOSPC, errno.EDQUOT):
                raise self._no_room(needed) from None
            raise
        self.written += needed
        self.flushes += 1
        self._buffer.clear()
        self._buffered = 0

    def _check_room(self, needed: int) -> None:
        """Refused before writing when the disk has not the room this write takes, :data:`RESERVE` left free."""
        assert self._dir is not None
        free = shutil.disk_usage(self._dir.name).free
        if free - RESERVE < needed:
            raise self._no_room(needed)

    def _no_room(self, needed: int) -> SpillNoRoom:
        """The error, with the bytes the whole input would still take at the rate read so far."""
        assert self._dir is not None
        total = (self.written + needed) / self.done if self.done > 0 else self.written + needed
        more = max(needed, int(total) - self.written)
        free = shutil.disk_usage(self._dir.name).free
        return SpillNoRoom(os.path.dirname(self._dir.name), more + max(RESERVE, 0), free)

    def distributions(self, extra: list[float]) -> Iterator[tuple[Any, Distribution]]:
        """Each group's :class:`~kquotactl.core.recommend.Distribution` (``extra``: percentiles besides the reported
        ones), one group at a time: its file read back and its buffered rates, then both let go."""
        import numpy as np

        from kquotactl.impact.recommend import array_distribution

        for group in list(dict.fromkeys([*self._files, *self._buffer])):
            parts = []
            if (path := self._files.pop(group, None)) is not None:
                parts.append(np.fromfile(path, dtype=DTYPE))
                os.unlink(path)
            parts.extend(self._buffer.pop(group, []))
            rates = parts[0] if len(parts) == 1 else np.concatenate(parts)
            del parts
            yield group, array_distribution(rates, extra)
