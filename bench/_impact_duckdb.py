"""The impact model in DuckDB SQL: the single-node baseline ``bench/impact.py`` measures the engines against.

The window-sum model :mod:`kquotactl.impact.replay` had before it replayed each quota-id through Kafka's ``Rate``
(integer units, the event sweep with a RANGE window; today the model of windowed input only): a speed baseline of
the same work in SQL, not the same statistics. The distinct
(user, client-id) pairs and ips are resolved with :class:`kquotactl.core.precedence.QuotaIndex` (a few thousand probes)
and joined back, everything else is one SQL statement.
"""

from __future__ import annotations

from kquotactl.core.keys import KEYS
from kquotactl.core.precedence import QuotaIndex
from kquotactl.impact.replay import CLIENT_MODEL_KEYS, IP_MODEL_KEYS, MODEL_KEYS, USAGE, QidStats, Window, qid_parts


def run(path: str, index: QuotaIndex, window: Window, threads: int = 2) -> list[QidStats]:
    import duckdb
    import pyarrow as pa

    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    s = window.size_s
    units = ", ".join(
        f"CAST(floor(coalesce(CAST({u.column} AS DOUBLE), 0) * {float(u.scale)} + 0.5) AS BIGINT) AS u_{u.column}"
        for u in {u.column: u for u in USAGE.values()}.values()
    )
    con.execute(
        f"""CREATE TEMP TABLE t AS SELECT CAST(floor(CAST(ts AS DOUBLE) / {float(s)}) AS BIGINT) AS sample,
        coalesce("user", '') AS "user", coalesce(client_id, '') AS client_id, coalesce(ip, '') AS ip, {units}
        FROM read_parquet('{path}')"""
    )
    last = con.execute("SELECT max(sample) FROM t").fetchone()[0]
    res = []
    for user, client in con.execute('SELECT DISTINCT "user", client_id FROM t').fetchall():
        for key in CLIENT_MODEL_KEYS:
            r = index.resolve(key, user, client)
            if r.level is not None:
                qu, qc = qid_parts(r.level, user, client)
                res.append((user, client, key, r.level, float(r.limit), qu, qc))
    ips = []
    for (ip,) in con.execute("SELECT DISTINCT ip FROM t WHERE u_connections > 0").fetchall():
        r = index.resolve_ip(ip, IP_MODEL_KEYS[0])
        if r.level is not None:
            ips.append((ip, r.level, float(r.limit)))
    res_schema = pa.schema(
        [
            ("user", pa.string()),
            ("client_id", pa.string()),
            ("key", pa.string()),
            ("level", pa.int64()),
            ("lim", pa.float64()),
            ("qu", pa.string()),
            ("qc", pa.string()),
        ]
    )
    res_t = pa.Table.from_pylist([dict(zip(res_schema.names, r, strict=True)) for r in res], schema=res_schema)
    ip_schema = pa.schema([("ip", pa.string()), ("level", pa.int64()), ("lim", pa.float64())])
    ip_t = pa.Table.from_pylist([dict(zip(ip_schema.names, r, strict=True)) for r in ips], schema=ip_schema)
    con.register("res", res_t)
    con.register("ipres", ip_t)
    pick = " ".join(f"WHEN '{k}' THEN u_{USAGE[k].column}" for k in CLIENT_MODEL_KEYS)
    denom = " ".join(f"WHEN '{k}' THEN {window.denominator(k)}" for k in MODEL_KEYS)
    capped = ", ".join(f"'{k}'" for k in MODEL_KEYS if KEYS[k].throttle_capped)
    qid = "key, level, qu, qc, qip"
    raw = f"CAST(floor((rate - lim) / lim * {window.window_ms} + 0.5) AS BIGINT)"
    sql = f"""
    WITH usage AS (
      SELECT r.key, r.level, r.lim, r.qu, r.qc, CAST(NULL AS VARCHAR) AS qip, t.sample,
             CASE r.key {pick} END AS u
      FROM t JOIN res r USING ("user", client_id)
      UNION ALL
      SELECT 'connection_creation_rate', i.level, i.lim, NULL, NULL, t.ip, t.sample, t.u_connections
      FROM t JOIN ipres i USING (ip) WHERE t.u_connections > 0
    ), ps AS (
      SELECT {qid}, lim, sample, sum(u) AS u FROM usage WHERE u > 0 GROUP BY ALL
    ), ev AS (
      SELECT {qid}, lim, sample AS p, u AS delta, u AS added FROM ps
      UNION ALL SELECT {qid}, lim, sample + {window.num}, -u, 0 FROM ps
    ), w AS (
      SELECT *, sum(delta) OVER (PARTITION BY {qid} ORDER BY p
                                 RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS running,
             lead(p) OVER (PARTITION BY {qid} ORDER BY p) AS nxt FROM ev
    ), x AS (
      SELECT *, CAST(running AS DOUBLE) / (CASE key {denom} END) AS rate,
             least(coalesce(nxt, {last + 1}), {last + 1}) - p AS len FROM w WHERE p <= {last}
    ), y AS (
      SELECT *, CASE WHEN rate > lim THEN
                  CASE WHEN key IN ({capped}) THEN least({raw}, {window.cap_ms}) ELSE {raw} END
                ELSE 0 END AS ms FROM x
    )
    SELECT {qid}, sum(CASE WHEN ms > 0 THEN len ELSE 0 END) * {s} AS secs, max(rate) AS max_rate,
           sum(ms * len) AS total, max(ms) AS max_ms FROM y GROUP BY ALL
    """
    out = [
        QidStats(k, lv, qu, qc, qip, int(sec), float(mr), int(tot), int(mx))
        for k, lv, qu, qc, qip, sec, mr, tot, mx in con.execute(sql).fetchall()
    ]
    con.close()
    return out
