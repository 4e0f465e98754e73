"""Shared helpers for the impact tests: write traffic, run an engine, index reports by quota-id."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kquotactl.core.precedence import QuotaIndex
from kquotactl.impact import local, readers, replay


def write_traffic(rows: list[dict[str, Any]], path: Path) -> str:
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = list(dict.fromkeys(k for r in rows for k in r))  # from_pylist alone takes the first row's keys
    # a row without a usage column used none of it (an empty cell would be refused: impact.validation)
    absent = {k: 0 if k in replay.USAGE_COLUMNS else None for k in names}
    pq.write_table(pa.Table.from_pylist([{k: r.get(k, absent[k]) for k in names} for r in rows]), path)
    return str(path)


def run_engine(engine: str, path: str, quotas: dict, window: replay.Window | None = None, spark: Any = None) -> dict:
    window = window or replay.Window()
    index = QuotaIndex(quotas)
    if engine == "local":
        result = local.run(readers.engine_columns(readers.read_table(path), window), index, window)
    else:
        from kquotactl.impact import spark as sp

        result, *_ = sp.run(sp.read_traffic(spark, path, window), replay.quota_table(index), window)
    return replay.report(result, index, window)


def by_qid(report: dict) -> dict[tuple[str, str], dict]:
    return {(r["key"], ",".join(f"{k}={v}" for k, v in r["quota_id"].items())): r for r in report["quota_ids"]}
