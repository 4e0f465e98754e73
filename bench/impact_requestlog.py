"""`kquotactl impact --input-format kafka-request-log`: parsing + replay of generated broker request logs on the Spark
engine (local[*]), the local engine, and a DuckDB baseline (the lines parsed in DuckDB SQL, then the replay of
``bench/_impact_duckdb.py``).

The log is generated from the same synthetic traffic as ``bench/impact.py`` (one request per row, Kafka 4.1 lines,
one line in 100,000 cut short), written once to ``bench/out/impact/requests-<rows>.log``. Each engine runs in its
own process; Spark and local must produce identical statistics (a digest is compared; DuckDB runs the window-sum
model impact used before it replayed Kafka's Rate), and all the same malformed counts.

Environment: BENCH_RL_ROWS (default "1000000"), BENCH_RL_ENGINES (default "duckdb,spark,local"),
BENCH_RL_REPEAT (default 1).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

import impact as base  # noqa: E402 - bench/impact.py: digest, tree_rss, the traffic's shape

OUT = base.OUT
MALFORMED_EVERY = 100_000


def data(rows: int) -> Path:
    from kquotactl.impact import generate

    OUT.mkdir(parents=True, exist_ok=True)
    path = OUT / f"requests-{rows}.log"
    if not path.exists():
        t = time.perf_counter()
        table = generate.generate(rows, users=base.USERS, clients=base.CLIENTS)
        tmp = path.with_suffix(".tmp")
        generate.write_lines(generate.request_log(table, "4.1", MALFORMED_EVERY), tmp)
        tmp.rename(path)
        print(f"  generated {rows:,} lines in {time.perf_counter() - t:.1f}s ({path.stat().st_size / 1e6:.0f} MB)")
    return path


def duckdb_parse(path: str, parquet: str) -> int:
    """The request log to a traffic Parquet file in DuckDB SQL (the mapping of kquotactl.impact.requestlog); the
    number of lines skipped."""
    import duckdb

    from kquotactl.impact.requestlog import LINE

    con = duckdb.connect()
    con.execute("SET threads = 2")
    line = LINE.removeprefix("(?s)")  # RE2: '.' already matches all but newlines, and there are none
    con.execute(
        f"""CREATE TEMP TABLE m AS SELECT regexp_extract(line, '{line}', ['d', 'ms', 'j']) AS g
        FROM read_csv('{path}', columns={{'line': 'VARCHAR'}}, header=false, delim=chr(1), quote='', escape='',
                      auto_detect=false, strict_mode=false)"""
    )
    con.execute(
        """CREATE TEMP TABLE p AS SELECT
             epoch(try_strptime(g.d, '%Y-%m-%d %H:%M:%S'))::BIGINT + CAST(g.ms AS INT) / 1000.0 AS ts,
             g.j AS j, CAST(json_extract(g.j, '$.requestHeader.requestApiKey') AS INT) AS api,
             json_extract_string(g.j, '$.principal') AS principal,
             json_extract_string(g.j, '$.connection') AS conn
           FROM m WHERE g.j <> '' AND json_valid(g.j)"""
    )
    skipped = con.execute("SELECT (SELECT count(*) FROM m) - count(*) FROM p WHERE api IS NOT NULL").fetchone()[0]
    con.execute(
        f"""COPY (SELECT ts,
             CASE WHEN starts_with(principal, 'User:') THEN principal[6:] ELSE principal END AS "user",
             coalesce(json_extract_string(j, '$.requestHeader.clientId'), '') AS client_id,
             regexp_extract(split_part(conn, '-', 2), '^(.*):[^:]*$', 1) AS ip,
             CASE WHEN api = 0 THEN s ELSE 0 END AS produce_bytes,
             CASE WHEN api = 1 AND NOT follower THEN s ELSE 0 END AS fetch_bytes,
             1 AS requests,
             CASE WHEN follower THEN 0.0
                  ELSE coalesce(CAST(json_extract(j, '$.localTimeMs') AS DOUBLE), 0.0) END AS request_time_ms,
             CASE WHEN api = 18 THEN 1 ELSE 0 END AS connections
           FROM (SELECT *, coalesce(list_sum(list_transform(
                     regexp_extract_all(j, '"recordsSizeInBytes":([0-9]+)', 1), lambda x: CAST(x AS BIGINT))), 0) AS s,
                   api = 1 AND regexp_matches(j, '"replicaId":[0-9]') AS follower
                 FROM p WHERE api IS NOT NULL AND principal IS NOT NULL AND conn IS NOT NULL AND ts IS NOT NULL))
           TO '{parquet}' (FORMAT parquet)"""
    )
    return skipped


def child(engine: str, path: str) -> None:
    from kquotactl.core.precedence import QuotaIndex
    from kquotactl.impact import generate
    from kquotactl.impact.replay import Window, quota_table

    index = QuotaIndex(generate.quotas(base.USERS, base.CLIENTS))
    window = Window()
    out: dict = {}
    t0 = time.perf_counter()
    if engine == "duckdb":
        import _impact_duckdb

        parquet = str(OUT / f"duckdb-{Path(path).stem}.parquet")
        out["malformed"] = duckdb_parse(path, parquet)
        out["parse_s"] = time.perf_counter() - t0
        stats = _impact_duckdb.run(parquet, index, window)
    elif engine == "local":
        from kquotactl.impact import local, readers

        table, log = readers.read_request_log([path])
        cols = readers.engine_columns(table, window)
        out["parse_s"] = time.perf_counter() - t0
        out["malformed"] = log.malformed
        stats = local.run(cols, index, window).stats
    else:
        from kquotactl.impact import spark

        s = spark.session("local[*]", {"spark.driver.memory": "3g"})
        t1 = time.perf_counter()
        out["session_s"] = t1 - t0
        traffic, log = spark.read_request_log(s, [path], window)
        out["malformed"] = log.malformed
        result, *_ = spark.run(traffic, quota_table(index), window)
        out["first_job_s"] = time.perf_counter() - t1
        stats = result.stats
        s.stop()
    out["total_s"] = time.perf_counter() - t0
    out["quota_ids"] = len(stats)
    out["throttled"] = sum(1 for s in stats if s.seconds_throttled)
    out["digest"] = base.digest(stats)
    print("RESULT " + json.dumps(out), flush=True)


def measure(engine: str, path: Path, script: str = __file__, tag: str = "rl") -> dict:
    """Run ``script --child ENGINE PATH`` in its own process (its stderr in ``bench/out``): its RESULT line, and the
    wall time as ``wall_s``."""
    t = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": f"{HERE.parent / 'src'}:{HERE}"}
    log = OUT / f"{tag}-{engine}-{path.stem}.stderr"
    with open(log, "w") as err:
        p = subprocess.run(
            [sys.executable, script, "--child", engine, str(path)],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=env,
        )
    wall = time.perf_counter() - t
    line = [x for x in p.stdout.splitlines() if x.startswith("RESULT ")]
    if not line:
        raise SystemExit(f"{engine} on {path} failed (exit {p.returncode}); see {log}")
    return {**json.loads(line[0][7:]), "wall_s": wall}


def main() -> None:
    sizes = [int(x) for x in os.environ.get("BENCH_RL_ROWS", "1000000").split(",")]
    engines = os.environ.get("BENCH_RL_ENGINES", "duckdb,spark,local").split(",")
    repeat = int(os.environ.get("BENCH_RL_REPEAT", "1"))
    print(f"request-log parsing + replay on {os.cpu_count()} cores (load {os.getloadavg()[0]:.1f})")
    for n in sizes:
        path = data(n)
        digests = {}
        t = time.perf_counter()
        with open(path, "rb") as f:
            lines = sum(1 for _ in f)
        floor = time.perf_counter() - t
        print(f"  floor: reading the {lines:,} lines in Python (no parsing) {floor:.1f}s", flush=True)
        for _ in range(repeat):
            for engine in engines:
                r = measure(engine, path)
                if engine != "duckdb":  # DuckDB runs the window-sum model (bench/_impact_duckdb.py)
                    digests[engine] = r["digest"]
                extra = f" (session {r['session_s']:.1f}s)" if engine == "spark" else f" (parse {r['parse_s']:.1f}s)"
                print(
                    f"  {n:>11,} lines  {engine:<7} {r['total_s']:7.1f}s{extra}  {n / r['total_s'] / 1e3:6.0f}k lines/s"
                    f"  {r['total_s'] / floor:5.1f}x floor  {r['malformed']} malformed"
                    f"  {r['throttled']}/{r['quota_ids']:,} throttled",
                    flush=True,
                )
        same = len(set(digests.values())) == 1
        print(f"  identical statistics across {', '.join(digests)}: {'yes' if same else 'NO ' + str(digests)}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
    else:
        main()
