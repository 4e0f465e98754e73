"""`kquotactl recommend --input-format kafka-request-log`: a recommendation from generated broker request logs on
the Spark engine (local[*]) and the local engine, against a DuckDB baseline doing the same aggregation in SQL.

The log is ``bench/impact_requestlog.py``'s (Kafka 4.1 lines, one in 100,000 cut short), written once to
``bench/out/impact/requests-<rows>.log``. The baseline parses it in DuckDB SQL (``impact_requestlog.duckdb_parse``)
and computes, per (user, client-id) and key, the rate of every sample over the quota window (a RANGE window sum) and
its percentiles with ``quantile_cont``: the same grouping, windows and percentiles, with the window-sum rate in
place of Kafka's ``Rate`` replay (as ``bench/impact.py``'s baseline). Spark and local must give identical
recommendations (a digest is compared). Each engine runs in its own process, the end-to-end time measured.

Environment: BENCH_RC_ROWS (default "1000000"; the issue's figure is 10000000), BENCH_RC_ENGINES (default
"duckdb,spark,local"; local is slow past a few million lines).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import impact_requestlog as rl  # noqa: E402 - the request log and its DuckDB parser

OUT = rl.OUT
PERCENTILE = 99.0


def duckdb_recommend(path: str) -> int:
    """The baseline: parse, then per (user, client-id, key) the per-sample window rates and their percentiles."""
    import duckdb

    from kquotactl.core.keys import KEYS
    from kquotactl.core.recommend import REPORTED
    from kquotactl.impact.replay import CLIENT_MODEL_KEYS, USAGE, Window

    parquet = str(OUT / f"duckdb-{Path(path).stem}.parquet")
    rl.duckdb_parse(path, parquet)
    w = Window()
    con = duckdb.connect()
    con.execute("SET threads = 2")
    qs = ", ".join(f"quantile_cont(rate, {q / 100})" for q in sorted({*REPORTED, PERCENTILE}))
    parts = " UNION ALL ".join(
        f"""SELECT "user", client_id, '{k}' AS key, CAST(floor(ts / {w.size_s}) AS BIGINT) AS sample,
                   {USAGE[k].column} / {USAGE[k].divisor} AS u
            FROM read_parquet('{parquet}') WHERE {USAGE[k].column} > 0"""
        for k in CLIENT_MODEL_KEYS
        if not KEYS[k].draft  # the keys a recommendation covers by default (services.recommend._keys)
    )
    rows = con.execute(
        f"""WITH s AS (SELECT "user", client_id, key, sample, sum(u) AS u FROM ({parts}) GROUP BY ALL),
        r AS (SELECT *, sum(u) OVER (PARTITION BY "user", client_id, key ORDER BY sample
                                     RANGE BETWEEN {w.num - 1} PRECEDING AND CURRENT ROW) / {w.num * w.size_s} AS rate
              FROM s)
        SELECT "user", client_id, key, count(*), max(rate), {qs} FROM r GROUP BY ALL"""
    ).fetchall()
    con.close()
    return len(rows)


def child(engine: str, path: str) -> None:
    from kquotactl.core.recommend import Policy
    from kquotactl.impact.replay import Window
    from kquotactl.render.recommend import recommendation_json
    from kquotactl.services.impact import Replay
    from kquotactl.services.recommend import recommend_from_traffic

    t0 = time.perf_counter()
    out: dict = {}
    if engine == "duckdb":
        out["quota_ids"] = duckdb_recommend(path)
    else:
        source = Replay(
            Window(), [path], None, None, "kafka-request-log", False, engine, "local[*]", {"spark.driver.memory": "3g"}
        )
        found = recommend_from_traffic(source, Policy(percentile=PERCENTILE, tail_share=0.001))
        doc = recommendation_json(found.recommendation, found.distributions)
        out["quota_ids"] = len(doc["distributions"])
        out["limits"] = len(doc["limits"])
        # the replay of the recommendation too: Spark leaves the quota-ids the distributions settle out of it
        both = {"recommendation": doc, "replayed": found.replayed}
        out["digest"] = hashlib.sha256(json.dumps(both, sort_keys=True).encode()).hexdigest()[:16]
        summary = found.replayed["summary"]
        out["replayed"] = (summary["throttled_quota_ids"], summary["quota_ids"])
    out["total_s"] = time.perf_counter() - t0
    print("RESULT " + json.dumps(out), flush=True)


def measure(engine: str, path: Path) -> dict:
    return rl.measure(engine, path, __file__, "rc")


def main() -> None:
    sizes = [int(x) for x in os.environ.get("BENCH_RC_ROWS", "1000000").split(",")]
    engines = os.environ.get("BENCH_RC_ENGINES", "duckdb,spark,local").split(",")
    print(f"recommend from request logs on {os.cpu_count()} cores (load {os.getloadavg()[0]:.1f})")
    for n in sizes:
        path = rl.data(n)
        results = {engine: measure(engine, path) for engine in engines}
        floor = results.get("duckdb", {}).get("wall_s")
        for engine, r in results.items():
            ratio = f"  {r['wall_s'] / floor:4.2f}x DuckDB" if floor else ""
            print(
                f"  {n:>11,} lines  {engine:<7} {r['wall_s']:7.1f}s end to end{ratio}  {r['quota_ids']:,} quota-ids",
                flush=True,
            )
            if "replayed" in r:
                throttled, replayed = r["replayed"]
                print(f"{'':22}replay: {throttled:,} of {replayed:,} quota-ids throttled", flush=True)
        digests = {e: r["digest"] for e, r in results.items() if "digest" in r}
        if len(digests) > 1:
            same = len(set(digests.values())) == 1
            print(
                f"  identical recommendations and replays across {', '.join(digests)}:"
                f" {'yes' if same else 'NO ' + str(digests)}"
            )
            if not same:
                sys.exit(1)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
    else:
        main()
