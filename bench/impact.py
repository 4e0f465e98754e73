"""`kquotactl impact` throughput: the Spark engine (local[*]), the local engine and a DuckDB baseline of the window-sum
model impact used before it replayed Kafka's Rate (``bench/_impact_duckdb.py``), end to end from Parquet to
per-quota-id statistics, on generated traffic.

Each engine runs in its own process (peak RSS of the process tree is sampled from /proc, the JVM included).
Spark is timed three ways: session start, the first job in a fresh JVM, and the same job again (warm).
Spark and local must produce identical statistics (a digest is compared); DuckDB's are its own model's.

Environment: BENCH_IMPACT_ROWS (default "1000000,10000000"), BENCH_IMPACT_ENGINES (default "duckdb,spark,local"),
BENCH_IMPACT_LOCAL_MAX (largest input the pure-Python engine is run on, default 1000000),
BENCH_IMPACT_SPARK_WARM=0 to skip Spark's second (warm) run.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "src"))

OUT = HERE / "out" / "impact"
USERS, CLIENTS = 10_000, 50_000


def data(rows: int) -> Path:
    from kquotactl.impact import generate

    path = OUT / f"traffic-{rows}.parquet"
    if not path.exists():
        OUT.mkdir(parents=True, exist_ok=True)  # a fresh checkout has no bench/out
        t = time.perf_counter()
        generate.write(generate.generate(rows, users=USERS, clients=CLIENTS), path)
        print(f"  generated {rows:,} rows in {time.perf_counter() - t:.1f}s ({path.stat().st_size / 1e6:.0f} MB)")
    return path


def digest(stats) -> str:
    rows = sorted(
        (
            s.key,
            s.level,
            s.qid_user or "",
            s.qid_client or "",
            s.qid_ip or "",
            s.seconds_throttled,
            repr(s.max_rate),
            s.total_throttle_ms,
            s.max_throttle_ms,
        )
        for s in stats
    )
    return hashlib.sha256(repr(rows).encode()).hexdigest()[:16]


def child(engine: str, path: str) -> None:
    from kquotactl.core.precedence import QuotaIndex
    from kquotactl.impact import generate
    from kquotactl.impact.replay import Window, quota_table

    index = QuotaIndex(generate.quotas(USERS, CLIENTS))
    window = Window()
    out: dict = {}
    t0 = time.perf_counter()
    if engine == "duckdb":
        import _impact_duckdb

        stats = _impact_duckdb.run(path, index, window)
    elif engine == "local":
        from kquotactl.impact import local, readers

        cols = readers.engine_columns(readers.read_table(path), window)
        out["read_s"] = time.perf_counter() - t0
        stats = local.run(cols, index, window).stats
    else:
        from kquotactl.impact import spark

        s = spark.session("local[*]", {"spark.driver.memory": "6g"})
        t1 = time.perf_counter()
        out["session_s"] = t1 - t0
        result, *_ = spark.run(spark.read_traffic(s, path, window), quota_table(index), window)
        t2 = time.perf_counter()
        out["first_job_s"] = t2 - t1
        if os.environ.get("BENCH_IMPACT_SPARK_WARM", "1") == "1":
            result, *_ = spark.run(spark.read_traffic(s, path, window), quota_table(index), window)
        out["warm_job_s"] = time.perf_counter() - t2 if os.environ.get("BENCH_IMPACT_SPARK_WARM", "1") == "1" else None
        stats = result.stats
        s.stop()
    out["total_s"] = time.perf_counter() - t0
    out["quota_ids"] = len(stats)
    out["throttled"] = sum(1 for s in stats if s.seconds_throttled)
    out["digest"] = digest(stats)
    print("RESULT " + json.dumps(out), flush=True)


def tree_rss(pid: int) -> int:
    """RSS (bytes) of a process and all its descendants."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue
    return total


def measure(engine: str, path: Path) -> dict:
    proc = subprocess.Popen(
        [sys.executable, __file__, "--child", engine, str(path)],
        stdout=subprocess.PIPE,
        stderr=open(OUT / f"{engine}-{path.stem}.stderr", "w"),  # noqa: SIM115 - closed with the process
        text=True,
        env={**os.environ, "PYTHONPATH": f"{HERE.parent / 'src'}:{HERE}"},
    )
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_rss(proc.pid))
            time.sleep(0.2)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    t = time.perf_counter()
    out, _ = proc.communicate()
    wall = time.perf_counter() - t
    done.set()
    th.join()
    line = [x for x in out.splitlines() if x.startswith("RESULT ")]
    if not line:
        raise SystemExit(f"{engine} on {path} failed (exit {proc.returncode}); see {OUT}/{engine}-{path.stem}.stderr")
    res = json.loads(line[0][7:])
    res.update(wall_s=wall, peak_rss_gb=peak / 1e9)
    return res


def main() -> None:
    sizes = [int(x) for x in os.environ.get("BENCH_IMPACT_ROWS", "1000000,10000000").split(",")]
    engines = os.environ.get("BENCH_IMPACT_ENGINES", "duckdb,spark,local").split(",")
    local_max = int(os.environ.get("BENCH_IMPACT_LOCAL_MAX", "1000000"))
    print(f"impact replay on {os.cpu_count()} cores; traffic: {USERS:,} users, {CLIENTS:,} client-ids, 14k rows/s")
    for n in sizes:
        path = data(n)
        results = {}
        for engine in engines:
            if engine == "local" and n > local_max:
                continue
            r = results[engine] = measure(engine, path)
            extra = ""
            if engine == "spark":
                warm = f", warm job {r['warm_job_s']:.1f}s" if r["warm_job_s"] else ""
                extra = f"  (session {r['session_s']:.1f}s, first job {r['first_job_s']:.1f}s{warm})"
            main_s = r["first_job_s"] + r["session_s"] if engine == "spark" else r["total_s"]
            print(
                f"  {n:>11,} rows  {engine:<7} {main_s:7.1f}s end to end  {n / main_s / 1e3:8,.0f}k rows/s  "
                f"peak RSS {r['peak_rss_gb']:.2f} GB  {r['throttled']}/{r['quota_ids']:,} throttled{extra}",
                flush=True,
            )
        digests = {e: r["digest"] for e, r in results.items() if e != "duckdb"}  # DuckDB: the window-sum model
        same = len(set(digests.values())) == 1
        print(f"  identical statistics across {', '.join(digests)}: {'yes' if same else 'NO ' + str(digests)}")
        if "spark" in results and "duckdb" in results:
            sp, dk = results["spark"], results["duckdb"]["total_s"]
            warm = f"warm job {sp['warm_job_s'] / dk:.2f}x, " if sp["warm_job_s"] else ""
            print(
                f"  spark/duckdb: {warm}first job {sp['first_job_s'] / dk:.2f}x, "
                f"incl. session {(sp['session_s'] + sp['first_job_s']) / dk:.2f}x"
            )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3])
    else:
        main()
